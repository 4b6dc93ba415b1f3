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
