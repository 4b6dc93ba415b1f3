"""``skiff.autograd.functional`` (vjp, jvp, jacobian, hessian, vhp, hvp) and double backward
through a user's ctx-style ``autograd.Function`` and through ``layer_norm``, against torch 2.x
in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.autograd.functional import hessian

rng = np.random.default_rng(7)
X = rng.standard_normal((3, 4))
Y = rng.standard_normal(4)
V = rng.standard_normal((3, 4))
W = rng.standard_normal(4)


def f_two(x, y):  # (3, 4), (4,) -> scalar
    return ((x * y).tanh() ** 2).sum() + (x @ y).sin().sum() * y.exp().sum()


def f_vec(x, y):  # -> (3,)
    return (x * y).sigmoid().sum(1) * (y * y).sum()


def t(lib, a, grad=False):
    return lib.tensor(a, dtype=lib.float64, requires_grad=grad)


def both(call):
    got = []
    for lib in (skiff, torch):
        got.append(call(lib))
    return got


def flat(x):
    if isinstance(x, (tuple, list)):
        return [y for z in x for y in flat(z)]
    return [np.asarray(x.detach().numpy())]


def same(a, b):
    fa, fb = flat(a), flat(b)
    assert len(fa) == len(fb)
    for p, q in zip(fa, fb):
        assert p.shape == q.shape
        np.testing.assert_allclose(p, q, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"])
def test_functional_equals_torch(name):
    def call(lib):
        fn = getattr(lib.autograd.functional, name)
        xs = (t(lib, X), t(lib, Y))
        if name == "vjp":
            return fn(f_vec, xs, t(lib, np.array([1.0, -2.0, 0.5])))
        if name == "jvp":
            return fn(f_vec, xs, (t(lib, V), t(lib, W)))
        if name == "jacobian":
            return fn(f_vec, xs)
        if name == "hessian":
            return fn(f_two, xs)
        return fn(f_two, xs, (t(lib, V), t(lib, W)))

    same(*both(call))


def test_hessian_of_one_input_has_its_shape_twice():
    got = both(lambda lib: lib.autograd.functional.hessian(lambda x: f_two(x, t(lib, Y)),
                                                           t(lib, X)))
    assert tuple(got[0].shape) == (3, 4, 3, 4)
    same(*got)
    assert hessian is skiff.autograd.functional.hessian


def make_square(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            y = x * x * x * w
            ctx.save_for_backward(x, w, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, w, y = ctx.saved_tensors
            return g * 3 * x * x * w, g * y / w

    return Cube


def test_custom_function_backward_is_differentiated_again():
    def call(lib):
        x, w = t(lib, X, True), t(lib, V, True)
        y = make_square(lib).apply(x.sin(), w).sum()
        gx, gw = lib.autograd.grad(y, (x, w), create_graph=True)
        return (gx, gw, *lib.autograd.grad((gx * gw).sum(), (x, w)))

    same(*both(call))


def test_layer_norm_second_derivative():
    def call(lib):
        fn = torch.nn.functional if lib is torch else skiff.nn.functional
        x, w, b = t(lib, X, True), t(lib, W, True), t(lib, Y, True)
        y = (fn.layer_norm(x * 2, (4,), w, b).tanh() * t(lib, V)).sum()
        gs = lib.autograd.grad(y, (x, w, b), create_graph=True)
        return (*gs, *lib.autograd.grad(sum((g * g).sum() for g in gs), (x, w, b)))

    same(*both(call))


def test_backward_inputs_fills_only_those_grads_even_through_an_op_without_a_rule():
    def call(lib):
        x, w = t(lib, X, True), t(lib, V, True)
        y = (x * w).prod(1).sum() + (x * w).tanh().sum()  # prod: no double-backward rule
        y.backward(inputs=[w])
        assert x.grad is None
        ((x * w).sin().sum()).backward(inputs=[x, w])
        return x.grad, w.grad

    same(*both(call))
