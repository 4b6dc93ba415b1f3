"""Round 34 (h4): autocast's op lists against torch 2.13's CPU autocast (GRU, prelu, mv,
linalg.vecdot) and the float32 <-> bfloat16 casts (bits against torch's)."""

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core import half_cast as H

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _s(t):
    return skiff.tensor(t.detach().numpy())


def _copy(tm, sm):
    sm.load_state_dict({k: _s(v) for k, v in tm.state_dict().items()})


def _dt(t):
    return str(t.dtype).replace("torch.", "").replace("skiff.", "")


def _both(ctor):
    torch.manual_seed(0)
    tm, sm = ctor(torch), ctor(skiff)
    _copy(tm, sm)
    return tm, sm


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_under_autocast_dtypes_and_values(kind):
    tm, sm = _both(lambda L: getattr(L.nn, kind)(8, 6, num_layers=2, batch_first=True,
                                                 bidirectional=True))
    x = torch.randn(3, 5, 8)
    res = []
    for lib, m, xx in ((torch, tm, x), (skiff, sm, _s(x))):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out, h = m(xx)
        h = h[0] if kind == "LSTM" else h
        (out.float().sum() + h.float().sum()).backward()
        res.append((out, h, m.weight_hh_l0.grad))
    (to, th, tg), (so, sh, sg) = res
    assert _dt(so) == _dt(to) and _dt(sh) == _dt(th)  # LSTM/RNN bf16, GRU float32 (torch's)
    np.testing.assert_allclose(so.detach().float().numpy(), to.detach().float().numpy(),
                               atol=2e-2)
    np.testing.assert_allclose(sh.detach().float().numpy(), th.detach().float().numpy(),
                               atol=2e-2)
    assert _dt(sg) == "float32"
    np.testing.assert_allclose(sg.numpy(), tg.numpy(), atol=0.1, rtol=0.1)


def test_prelu_mv_vecdot_under_autocast():
    torch.manual_seed(1)
    x = torch.randn(4, 3, 5)
    tp, sp = _both(lambda L: L.nn.PReLU(3))
    out = {}
    for lib, xx, p in ((torch, x, tp), (skiff, _s(x), sp)):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out[lib.__name__] = {"prelu": p(xx), "mv": lib.mv(xx[0], xx[0, 0]),
                                 "vecdot": lib.linalg.vecdot(xx, xx),
                                 "mm": lib.mm(xx[0], xx[0].T)}
    for k, t in out["torch"].items():
        s = out["skiff"][k]
        assert _dt(s) == _dt(t), k
        tol = 0.0 if k in ("prelu", "mm") else 8e-3 * float(t.float().abs().max())
        np.testing.assert_allclose(s.detach().float().numpy(), t.detach().float().numpy(),
                                   atol=tol, err_msg=k)


def test_autocast_block_restores_after_mv():
    x = skiff.randn(3, 4)
    with skiff.autocast("cpu", dtype=skiff.bfloat16):
        assert _dt(skiff.mv(x, x[0])) == "float32"
        assert _dt(x @ x.T) == "bfloat16"  # the block is still on after mv's own precision
    assert _dt(x @ x.T) == "float32"


def _patterns(n=1 << 16):
    rng = np.random.default_rng(0)
    u = rng.integers(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32)
    special = np.array([np.inf, -np.inf, 3.4028235e38, -3.4028235e38, 1e-45, -1e-45, 0.0, -0.0,
                        1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 3.3961e38], dtype=np.float32)
    return np.concatenate([u.view(np.float32), np.repeat(special, 500)])


def test_f32_to_bf16_bits_as_torch():
    a = _patterns()
    assert a.size >= H.MIN
    fast = H.cast(a, H.bf16())
    ours = fast.view(np.uint16)
    theirs = torch.from_numpy(a.copy()).bfloat16().view(torch.int16).numpy().view(np.uint16)
    nan = np.isnan(a)
    np.testing.assert_array_equal(ours[~nan], theirs[~nan])
    back = fast.astype(np.float32)
    assert np.isnan(back[nan]).all() and (np.signbit(back[nan]) == np.signbit(a[nan])).all()
    ref = H.f32_to_bf16.reference(a).view(np.uint16)
    np.testing.assert_array_equal(ours[~nan], ref[~nan])


def test_bf16_to_f32_exact_and_shapes():
    a = _patterns().reshape(-1, 4)
    b = H.cast(a, H.bf16())
    up = H.cast(b, np.float32)
    want = torch.from_numpy(b.view(np.int16).copy()).view(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(up.view(np.uint32)[~np.isnan(up)],
                                  want.view(np.uint32)[~np.isnan(want)])
    assert up.shape == a.shape and up.dtype == np.float32
    t = H.cast(a.T, H.bf16())  # a non-contiguous array: astype's path, same values
    ok = ~np.isnan(a.T)  # (astype's NaNs carry no payload, ours keep the top bits)
    np.testing.assert_array_equal(t.view(np.uint16)[ok],
                                  np.ascontiguousarray(b.T).view(np.uint16)[ok])


def test_to_bfloat16_gradient_reaches_float32_leaf():
    torch.manual_seed(2)
    x = torch.randn(128, 64, requires_grad=True)
    w = torch.randn(64, 64)
    sx = _s(x).requires_grad_()
    for lib, xx, ww in ((torch, x, w), (skiff, sx, _s(w))):
        y = xx.to(lib.bfloat16) @ ww.to(lib.bfloat16)
        (y.float() ** 2).sum().backward()
    assert _dt(sx.grad) == "float32"
    np.testing.assert_allclose(sx.grad.numpy(), x.grad.numpy(), rtol=2e-2, atol=2e-2 * float(
        x.grad.abs().max()))
