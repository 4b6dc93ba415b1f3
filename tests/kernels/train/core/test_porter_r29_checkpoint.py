"""Round 29: ``skiff.utils.checkpoint`` (torch's ``checkpoint`` / ``checkpoint_sequential``)
against torch 2.13 in float64: losses and every gradient equal to torch's, for a module, a
closure over several modules with keyword arguments, a tuple output, an input that needs no
gradient (parameters only), and sequential segments; dropout inside a checkpoint gives the
gradient of the same step run without one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import skiff
import skiff.utils.checkpoint as scp

RNG = np.random.default_rng(2901)


def _net(lib):
    nn = lib.nn
    return nn.ModuleDict({"a": nn.Linear(5, 6), "b": nn.Linear(6, 6), "c": nn.Linear(6, 3),
                          "ln": nn.LayerNorm(6)})


def _pair():
    t = _net(torch).double()
    s = _net(skiff).double()
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return s, t


def _run(lib, cp, m, x_np, how, x_grad=True):
    x = lib.tensor(x_np, requires_grad=x_grad)
    h = m["a"](x)
    if how == "module":
        h = cp.checkpoint(m["b"], h, use_reentrant=False)
    elif how == "closure":
        def block(z, scale=1.0):
            return lib.tanh(m["ln"](m["b"](z))) * scale + z
        h = cp.checkpoint(block, h, use_reentrant=False, scale=0.5)
    elif how == "tuple":
        def two(z):
            return m["b"](z).sigmoid(), m["ln"](z)
        u, v = cp.checkpoint(two, h, use_reentrant=False)
        h = u * v
    elif how == "sequential":
        seq = lib.nn.Sequential(m["b"], lib.nn.Tanh(), m["ln"], lib.nn.ReLU(), lib.nn.Identity())
        h = cp.checkpoint_sequential(seq, 2, h, use_reentrant=False)
    out = m["c"](h)
    loss = (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum()
    loss.backward()
    grads = {n: p.grad for n, p in m.named_parameters()}
    return loss.item(), grads, (x.grad if x_grad else None)


def _np(t):
    return None if t is None else (t.detach().numpy() if isinstance(t, torch.Tensor)
                                   else np.asarray(t.detach()))


@pytest.mark.parametrize("how", ["module", "closure", "tuple", "sequential"])
def test_checkpoint_gradients_equal_torch(how):
    s, t = _pair()
    x = RNG.standard_normal((4, 5))
    ls, gs, xs = _run(skiff, scp, s, x, how)
    lt, gt, xt = _run(torch, tcp, t, x, how)
    assert ls == pytest.approx(lt, rel=1e-13)
    assert set(gs) == set(gt)
    for n in gt:
        if gt[n] is None:
            assert gs[n] is None, n
        else:
            np.testing.assert_allclose(_np(gs[n]), _np(gt[n]), rtol=1e-11, atol=1e-13, err_msg=n)
    np.testing.assert_allclose(_np(xs), _np(xt), rtol=1e-11, atol=1e-13)


def test_checkpoint_input_without_grad_still_trains_params():
    s, t = _pair()
    x = RNG.standard_normal((4, 6))
    res = []
    for lib, cp, m in ((skiff, scp, s), (torch, tcp, t)):
        xx = lib.tensor(x)
        y = cp.checkpoint(lambda z, m=m: m["ln"](m["b"](z)), xx, use_reentrant=False)
        if lib is skiff:  # one recompute node that found the block's four parameters
            assert type(y._node).__name__ == "_RecomputeRan"
            assert {id(p) for p in y._node.params} == {
                id(p) for p in [*m["b"].parameters(), *m["ln"].parameters()]}
        (y ** 2).sum().backward()
        res.append([m["b"].weight.grad, m["ln"].bias.grad])
    for a, b in zip(*res):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-11, atol=1e-13)


def test_checkpoint_dropout_recomputes_the_same_mask():
    skiff.manual_seed(0)
    m = skiff.nn.Sequential(skiff.nn.Linear(8, 8), skiff.nn.Dropout(0.5), skiff.nn.Linear(8, 2))
    m.double()
    x = skiff.tensor(RNG.standard_normal((6, 8)), requires_grad=True)
    grads = []
    for use in (False, True):
        skiff.manual_seed(5)
        m.zero_grad()
        x.grad = None
        y = scp.checkpoint(m, x, use_reentrant=False) if use else m(x)
        (y ** 2).sum().backward()
        grads.append([_np(m[0].weight.grad), _np(x.grad), _np(y)])
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


def test_checkpoint_refuses_non_tensor_output():
    lin = skiff.nn.Linear(3, 3)
    with pytest.raises(TypeError, match="tuple of tensors"):
        scp.checkpoint(lambda z: {"y": lin(z)}, skiff.randn(2, 3, requires_grad=True))


def test_checkpoint_under_no_grad_is_a_plain_call():
    m = skiff.nn.Linear(3, 3)
    with skiff.no_grad():
        y = scp.checkpoint(m, skiff.randn(2, 3), use_reentrant=False)
    assert not y.requires_grad and y._node is None
