"""Round 29: ``skiff.func`` (torch's ``torch.func``) against torch 2.13 in float64:
per-sample gradients (vmap of grad over functional_call), grad of grad, jacrev, hessian, vjp,
vmap's in_dims/out_dims and output trees, functional_call with buffers, tied weights and
strict names, stack_module_state ensembles and a functional MAML meta-gradient."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.func as tf

import skiff
import skiff.func as sf

RNG = np.random.default_rng(2903)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _close(a, b, rtol=1e-11, atol=1e-13):
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            _close(a[k], b[k], rtol, atol)
    elif isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, rtol, atol)
    else:
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


def _model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.BatchNorm1d(6), nn.Linear(6, 3))


def _pair():
    t = _model(torch).double()
    with torch.no_grad():
        t[2].running_mean.uniform_(-0.5, 0.5)
        t[2].running_var.uniform_(0.5, 1.5)
    t.eval()
    s = _model(skiff).double()
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    s.eval()
    return s, t


def test_per_sample_gradients_equal_torch():
    s, t = _pair()
    X, y = RNG.standard_normal((7, 4)), RNG.integers(0, 3, 7)
    res = []
    for lib, fn, m in ((skiff, sf, s), (torch, tf, t)):
        params = {k: v.detach() for k, v in m.named_parameters()}
        buffers = {k: v.detach() for k, v in m.named_buffers()}

        def loss(p, b, x, yy, m=m, lib=lib, fn=fn):
            out = fn.functional_call(m, (p, b), (x.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, yy.unsqueeze(0))

        g = fn.vmap(fn.grad(loss), in_dims=(None, None, 0, 0))(params, buffers, lib.tensor(X),
                                                               lib.tensor(y))
        gv = fn.vmap(fn.grad_and_value(loss, argnums=(0, 2)),
                     in_dims=(None, None, 0, 0))(params, buffers, lib.tensor(X), lib.tensor(y))
        res.append((g, gv))
    _close(res[0], res[1])
    # the module's own parameters are back and untouched
    assert all(p.grad is None for p in s.parameters())


def _scalar(lib, x, w):
    return (lib.sin(x @ w) * x.sum()).exp().sum() / 10


def test_grad_of_grad_jacrev_hessian_vjp():
    x, w = RNG.standard_normal(3), RNG.standard_normal((3, 2))
    res = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        X, W = lib.tensor(x), lib.tensor(w)
        f = lambda a, b, lib=lib: _scalar(lib, a, b)  # noqa: E731
        g2 = fn.grad(lambda a, b, f=f, fn=fn: fn.grad(f)(a, b).sum())(X, W)
        jr = fn.jacrev(lambda a, b, lib=lib: lib.tanh(a @ b) * a[:2], argnums=(0, 1))(X, W)
        h = fn.hessian(f)(X, W)
        out, vjp_fn = fn.vjp(lambda a, lib=lib, W=W: lib.sin(a @ W), X)
        (v,) = vjp_fn(lib.tensor(np.array([0.3, -1.2])))
        res.append([g2, jr, h, out, v])
    _close(res[0], res[1])


@pytest.mark.parametrize("in_dims,out_dims", [(0, 0), ((1, None), 1), ((0, 0), -1)])
def test_vmap_dims_and_output_trees(in_dims, out_dims):
    a, b = RNG.standard_normal((5, 5)), RNG.standard_normal((5, 2))
    if in_dims == (1, None):
        b = RNG.standard_normal(5)
    res = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        A = lib.tensor(a, requires_grad=True)
        B = lib.tensor(b, requires_grad=True)

        def f(x, y, lib=lib):
            z = x[:2] * y if y.shape[0] == 2 else x * y
            return {"z": z, "pair": (lib.exp(x)[:2], z * z.mean())}

        out = fn.vmap(f, in_dims=in_dims, out_dims=out_dims)(A, B)
        (out["z"].pow(2).sum() + out["pair"][0].sum() * out["pair"][1].sum()).backward()
        res.append([out, A.grad, B.grad])
    _close(res[0], res[1])


def test_functional_call_tied_strict_and_names():
    res = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        emb = lib.nn.Embedding(5, 3).double()
        head = lib.nn.Linear(3, 5, bias=False).double()
        head.weight = emb.weight
        m = lib.nn.ModuleDict({"emb": emb, "head": head})
        new = lib.tensor(np.arange(15.0).reshape(5, 3) / 10, requires_grad=True)
        out = fn.functional_call(m["head"], {"weight": new}, lib.ones(2, 3, dtype=lib.float64))
        # a tied weight given under one name replaces it under the other too (tie_weights)
        m2 = lib.nn.Sequential(emb, head)
        y = fn.functional_call(m2, {"0.weight": new}, (lib.tensor([1, 4]),))
        (out.sum() + y.pow(2).sum()).backward()
        res.append([out, y, new.grad])
        with pytest.raises((KeyError, RuntimeError)):
            fn.functional_call(m2, {"0.nope": new}, (lib.tensor([1]),), strict=True)
    _close(res[0], res[1])
    with pytest.raises(KeyError, match="named_parameters"):
        sf.functional_call(skiff.nn.Linear(2, 2), {"wieght": skiff.zeros(2, 2)}, skiff.ones(1, 2))


def test_stack_module_state_ensemble():
    res = []
    X = RNG.standard_normal((6, 4))
    for lib, fn in ((skiff, sf), (torch, tf)):
        ms = []
        for i in range(3):
            m = lib.nn.Linear(4, 2).double()
            with lib.no_grad():
                m.weight.copy_(lib.tensor(np.cos(np.arange(8.0) + i).reshape(2, 4)))
                m.bias.fill_(0.1 * i)
            ms.append(m)
        p, b = fn.stack_module_state(ms)
        x = lib.tensor(X)
        base = copy.deepcopy(ms[0]).to("meta")  # torch's recipe: a module of shapes only
        out = fn.vmap(lambda pp, bb, xx, fn=fn, m0=base: fn.functional_call(m0, (pp, bb), (xx,)),
                      in_dims=(0, 0, None))(p, b, x)
        out.sum().backward()
        res.append([out, p["weight"].grad])
    _close(res[0], res[1])


def test_functional_maml_meta_gradient():
    X, y = RNG.standard_normal((8, 4)), RNG.standard_normal((8, 3))
    res = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        m = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3)).double()
        with lib.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(lib.tensor(np.sin(np.arange(p.numel()) + i).reshape(tuple(p.shape))))
        params = dict(m.named_parameters())
        Xt, yt = lib.tensor(X), lib.tensor(y)

        def loss(p, x, t, m=m, fn=fn):
            return ((fn.functional_call(m, p, (x,)) - t) ** 2).mean()

        g = fn.grad(loss)(params, Xt[:4], yt[:4])  # stays in the graph: params need grad
        fast = {k: v - 0.1 * g[k] for k, v in params.items()}
        meta = loss(fast, Xt[4:], yt[4:])
        meta.backward()
        res.append([meta, [p.grad for p in m.parameters()]])
    _close(res[0], res[1], rtol=1e-10)


def test_vmap_randomness_same_and_errors():
    skiff.manual_seed(0)
    drop = skiff.nn.Dropout(0.5)
    x = skiff.ones(4, 6, dtype=skiff.float64)
    same = sf.vmap(drop, randomness="same")(x)
    diff = sf.vmap(drop, randomness="different")(x)
    assert all(np.array_equal(_np(same[0]), _np(same[i])) for i in range(4))
    assert not all(np.array_equal(_np(diff[0]), _np(diff[i])) for i in range(4))
    with pytest.raises(ValueError, match="different sizes"):
        sf.vmap(lambda a, b: a + b)(skiff.ones(3), skiff.ones(4))
    with pytest.raises(ValueError, match="one-element"):
        sf.grad(lambda a: a * 2)(skiff.ones(3))
