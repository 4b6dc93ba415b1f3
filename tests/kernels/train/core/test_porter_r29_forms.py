"""Round 29 (second batch): torch's function forms of Tensor methods (``torch.add``,
``torch.argmin``, ``torch.split``, ...), the methods a VQ-VAE and a SimCLR port met
missing (``argmin``, ``fill_diagonal_``, ``select``, ``take``, ``tan``, ``fmax``/``fmin``,
``diag_embed``, ...) and the legacy ``Tensor(3, 4)`` constructor: values and gradients
against torch 2.13 in float64; draws against torch's law."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core.tensor_r29 import FUNCTION_FORMS

RNG = np.random.default_rng(2908)
X = RNG.standard_normal((4, 5))
Y = RNG.standard_normal((4, 5))


def _np(t):
    if isinstance(t, (tuple, list)):
        return [_np(u) for u in t]
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


CALLS = {
    "add": lambda L, x, y: L.add(x, y, alpha=0.5), "sub": lambda L, x, y: L.sub(x, y),
    "mul": lambda L, x, y: L.mul(x, y), "eq": lambda L, x, y: L.eq(x, x * (y > 0)),
    "ne": lambda L, x, y: L.ne(x, x * (y > 0)), "gt": lambda L, x, y: L.gt(x, y),
    "ge": lambda L, x, y: L.ge(x, y), "lt": lambda L, x, y: L.lt(x, y),
    "clone": lambda L, x, y: L.clone(x), "masked_select": lambda L, x, y: L.masked_select(
        x, y > 0), "nonzero": lambda L, x, y: L.nonzero(y > 0),
    "split": lambda L, x, y: L.split(x, [2, 3], dim=1),
    "swapaxes": lambda L, x, y: L.swapaxes(x, 0, 1),
    "diagonal": lambda L, x, y: L.diagonal(x, 1), "ger": lambda L, x, y: L.ger(x[0], y[1]),
    "arccos": lambda L, x, y: L.arccos(x.tanh() * 0.9),
    "argmin": lambda L, x, y: [L.argmin(x), L.argmin(x, 1), L.argmin(x, dim=0, keepdim=True)],
    "select": lambda L, x, y: L.select(x, 1, -2), "ravel": lambda L, x, y: L.ravel(x.t()),
    "take": lambda L, x, y: L.take(x, L.tensor([[0, 7], [19, 7]])),
    "tan": lambda L, x, y: L.tan(x), "true_divide": lambda L, x, y: L.true_divide(x, y),
    "deg2rad": lambda L, x, y: L.deg2rad(x), "rad2deg": lambda L, x, y: L.rad2deg(x),
    "erfc": lambda L, x, y: L.erfc(x), "diag_embed": lambda L, x, y: L.diag_embed(x),
    "fmax": lambda L, x, y: L.fmax(x, L.where(y > 0.5, y * float("nan"), y)),
    "fmin": lambda L, x, y: L.fmin(L.where(y > 0.5, y * float("nan"), x), y),
    "absolute": lambda L, x, y: L.absolute(x), "positive": lambda L, x, y: L.positive(x),
}


@pytest.mark.parametrize("name", [n for n in FUNCTION_FORMS if n != "bernoulli"])
def test_function_forms_equal_torch(name):
    res = []
    for lib in (skiff, torch):
        x = lib.tensor(X, requires_grad=True)
        y = lib.tensor(Y)
        out = CALLS[name](lib, x, y)
        outs = out if isinstance(out, (tuple, list)) else [out]
        floats = [o for o in outs if o.dtype in (skiff.float64, torch.float64)]
        if floats:
            sum((o * lib.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape))))
                .nansum() for o in floats).backward()
        res.append([*(_np(o) for o in outs), None if x.grad is None else _np(x.grad)])
    for a, b in zip(*res):
        if b is None:
            assert a is None or not np.any(a)
        else:
            assert np.shape(a) == np.shape(b)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)


def test_argmin_takes_the_first_of_ties_as_torch():
    x = np.array([[3.0, 1.0, 1.0, 2.0], [0.0, 5.0, 0.0, 0.0]])
    for d in (None, 1):
        a = skiff.tensor(x).argmin(d) if d is not None else skiff.tensor(x).argmin()
        b = torch.tensor(x).argmin(d) if d is not None else torch.tensor(x).argmin()
        np.testing.assert_array_equal(_np(a), b.numpy())


@pytest.mark.parametrize("shape,wrap", [((4, 4), False), ((7, 3), False), ((7, 3), True),
                                        ((3, 5), False), ((3, 3, 3), False)])
def test_fill_diagonal_(shape, wrap):
    res = []
    for lib in (skiff, torch):
        x = lib.tensor(RNG.standard_normal(shape) if lib is skiff else res[0][1])
        base = x.clone()
        x.fill_diagonal_(-7.5, wrap=wrap)
        res.append([_np(x), _np(base)])
    np.testing.assert_array_equal(res[0][0], res[1][0])


def test_fill_diagonal_is_differentiable_on_a_computed_tensor():
    res = []
    for lib in (skiff, torch):
        x = lib.tensor(X[:, :4], requires_grad=True)
        z = x @ x.t()
        z.fill_diagonal_(0.0)
        (z ** 2).sum().backward()
        res.append(_np(x.grad))
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12)


def test_legacy_sizes_constructor():
    for args in [(3, 4), (5,), (2, 0, 3), ()]:
        a, b = skiff.Tensor(*args), torch.Tensor(*args)
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == "float32"
    assert np.asarray(skiff.Tensor([2.0, 3.0])).tolist() == [2.0, 3.0]  # values, as torch's
    assert tuple(skiff.nn.Parameter(skiff.Tensor(4)).shape) == (4,)  # an old-style bias
    assert int(skiff.tensor(3)) == 3  # skiff.tensor(n) stays the value, as torch.tensor(n)
    np.testing.assert_allclose(  # skiff's own code passing a number keeps it a value
        np.asarray(skiff.distributions.Normal(0, 1).log_prob(skiff.tensor(0.5))),
        torch.distributions.Normal(0, 1).log_prob(torch.tensor(0.5)).numpy(), rtol=1e-6)
    w = skiff.nn.Parameter(skiff.Tensor(3, 2))
    skiff.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    assert tuple(w.shape) == (3, 2) and np.abs(np.asarray(w.detach())).max() > 0
    with pytest.raises(TypeError, match="non-negative ints"):
        skiff.Tensor(3, -1)


def test_bernoulli_and_exponential_follow_torch_law():
    skiff.manual_seed(4)
    p = skiff.full((20000,), 0.3, dtype=skiff.float64)
    draws = [skiff.bernoulli(p), p.bernoulli(), skiff.zeros(20000, dtype=skiff.float64)
             .bernoulli_(0.3)]
    for d in draws:
        assert abs(float(np.asarray(d).mean()) - 0.3) < 0.02
    e = skiff.zeros(20000, dtype=skiff.float64).exponential_(2.0)
    t = torch.distributions.Exponential(torch.tensor(2.0))
    assert abs(float(np.asarray(e).mean()) - t.mean.item()) < 0.02
