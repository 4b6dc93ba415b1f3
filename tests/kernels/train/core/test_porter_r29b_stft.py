"""torch.stft as audio ports call it (spectrogram features, a multi-resolution STFT loss),
against torch 2.13 in float64: values and gradients through the magnitude."""

import numpy as np
import pytest
import torch

import skiff


def _np(t):
    return np.asarray(t.detach().numpy())


@pytest.mark.parametrize("kw", [
    {"n_fft": 16, "hop_length": 4, "window": "hann"},
    {"n_fft": 16, "hop_length": 5, "win_length": 10, "window": "hann", "normalized": True},
    {"n_fft": 8, "center": False},
    {"n_fft": 12, "hop_length": 3, "pad_mode": "constant", "onesided": False,
     "window": "hamming"},
])
@pytest.mark.parametrize("shape", [(3, 50), (41,)])
def test_stft_values_and_gradients(kw, shape):
    kw = dict(kw)
    x = np.random.default_rng(0).standard_normal(shape)
    name = kw.pop("window", None)
    win = kw.get("win_length", kw["n_fft"])
    tw = getattr(torch, f"{name}_window")(win, dtype=torch.float64) if name else None
    sw = getattr(skiff, f"{name}_window")(win, dtype=skiff.float64) if name else None
    tx, sx = torch.tensor(x, requires_grad=True), skiff.tensor(x, requires_grad=True)
    to = torch.stft(tx, window=tw, return_complex=True, **kw)
    so = skiff.stft(sx, window=sw, return_complex=True, **kw)
    assert tuple(so.shape) == tuple(to.shape)
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-12, atol=1e-12)
    to.abs().pow(2).sum().backward()
    so.abs().pow(2).sum().backward()
    np.testing.assert_allclose(_np(sx.grad), _np(tx.grad), rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(_np(sx.detach().stft(window=sw, return_complex=False, **kw)),
                               _np(torch.stft(tx.detach(), window=tw, return_complex=False,
                                              **kw)), rtol=1e-12, atol=1e-12)


def test_stft_needs_return_complex_for_real_input_as_torch():
    with pytest.raises(RuntimeError, match="return_complex"):
        skiff.stft(skiff.ones(32), 8)
    with pytest.raises(RuntimeError):
        torch.stft(torch.ones(32), 8)


@pytest.mark.parametrize("kw", [
    {"n_fft": 16, "hop_length": 4},
    {"n_fft": 16, "hop_length": 4, "win_length": 12, "normalized": True, "length": 45},
    {"n_fft": 8, "hop_length": 2, "center": False},
    {"n_fft": 16, "hop_length": 4, "length": 70},
])
def test_istft_inverts_and_matches_torch_with_gradients(kw):
    kw = dict(kw)
    x = np.random.default_rng(3).standard_normal((2, 60))
    win = kw.get("win_length", kw["n_fft"])
    tw, sw = torch.hann_window(win, dtype=torch.float64), skiff.hann_window(win,
                                                                           dtype=skiff.float64)
    length = kw.pop("length", None)
    ts = torch.stft(torch.tensor(x), window=tw, return_complex=True, **kw).requires_grad_(True)
    ss = skiff.tensor(ts.detach().numpy(), requires_grad=True)
    if not kw.get("center", True):  # a Hann window is 0 at the first sample: both refuse
        with pytest.raises(RuntimeError, match="overlap add min"):
            torch.istft(ts, window=tw, length=length, **kw)
        with pytest.raises(RuntimeError, match="overlap add min"):
            skiff.istft(ss, window=sw, length=length, **kw)
        return
    ty = torch.istft(ts, window=tw, length=length, **kw)
    sy = skiff.istft(ss, window=sw, length=length, **kw)
    assert tuple(sy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(_np(sy), _np(ty), rtol=1e-11, atol=1e-12)
    w = np.random.default_rng(4).standard_normal(tuple(ty.shape))
    (ty * torch.tensor(w)).sum().backward()
    (sy * skiff.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(ss.grad), _np(ts.grad), rtol=1e-10, atol=1e-12)
