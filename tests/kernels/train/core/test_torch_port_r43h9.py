"""Round 43 (h9): what a torch user's complex-FFT model met, each against torch 2.13 (float64):
the variance of a complex tensor, ``view_as_real``/``view_as_complex`` as views, the dtype of
``tensor(1j)``, the backward of ``x.to(cdouble)`` without numpy's ComplexWarning, and the
top-level ``segment_reduce``/``empty_strided``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(43)
Z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))


def _np(t):
    return t.detach().numpy()


def test_var_and_std_of_a_complex_tensor_are_real_with_torchs_gradient():
    out = {}
    for T in (torch, skiff):
        z = T.tensor(Z, requires_grad=True)
        parts = [z.var(), z.std(1), z.var(0, correction=0), T.var_mean(z, 1)[0],
                 T.std_mean(z, unbiased=False)[0]]
        loss = sum((p * (i + 1)).sum() for i, p in enumerate(parts))
        loss.backward()
        out[T] = ([(_np(p), str(p.dtype).split(".")[-1]) for p in parts], _np(z.grad))
    for (a, da), (b, db) in zip(out[torch][0], out[skiff][0]):
        assert da == db == "float64"
        np.testing.assert_allclose(b, a, rtol=1e-12)
    np.testing.assert_allclose(out[skiff][1], out[torch][1], rtol=1e-12, atol=1e-14)


def test_view_as_real_and_view_as_complex_are_views_as_torchs():
    for T in (torch, skiff):
        z = T.tensor(Z)
        r = T.view_as_real(z)
        r[0, 0, 1] = 9.0
        r.mul_(2)
        assert complex(z[0, 0].item()) == complex(2 * Z[0, 0].real, 18.0)
        assert tuple(T.view_as_real(z.t()).shape) == (4, 3, 2)
        f = T.tensor(np.arange(12.0).reshape(3, 2, 2))
        c = T.view_as_complex(f)
        c[0, 0] = 5j
        np.testing.assert_array_equal(_np(f)[0, 0], [0.0, 5.0])
    # gradients through both, as torch's
    grads = {}
    for T in (torch, skiff):
        z = T.tensor(Z, requires_grad=True)
        w = T.tensor(np.arange(12.0).reshape(3, 2, 2), requires_grad=True)
        loss = (T.view_as_real(z) ** 3).sum() + (T.view_as_complex(w * 1).abs() ** 2).sum()
        loss.backward()
        grads[T] = (_np(z.grad), _np(w.grad))
    for a, b in zip(grads[torch], grads[skiff]):
        np.testing.assert_allclose(b, a, rtol=1e-13)


def test_python_complex_numbers_make_the_default_floats_complex():
    for data in ([1 + 2j], 1j, [1, 2j]):
        assert str(skiff.tensor(data).dtype) == str(torch.tensor(data).dtype).split(".")[-1]
    assert str(skiff.as_tensor([1j]).dtype) == "complex64"
    assert skiff.tensor(np.array([1j])).dtype == np.complex128  # an array keeps its dtype
    assert skiff.tensor(torch.tensor([1j], dtype=torch.complex128)).dtype == np.complex128
    skiff.set_default_dtype(skiff.float64)
    try:
        assert skiff.tensor([1j]).dtype == np.complex128
    finally:
        skiff.set_default_dtype(skiff.float32)


def _spectral(T, sd):
    """A torch user's complex-FFT layer: rfft/einsum/irfft, fft/fftshift, a complex Linear,
    polar, view_as_real, stft/istft, a Python complex scalar; one Adam step."""
    nn, F = T.nn, T.nn.functional

    class Spec(nn.Module):
        def __init__(self, c=2, n=12):
            super().__init__()
            self.w = nn.Parameter(T.randn(c, c, n // 2 + 1, dtype=T.cdouble) * 0.1)
            self.filt = nn.Parameter(T.randn(n, dtype=T.cdouble) * 0.1)
            self.lin = nn.Linear(c, c, dtype=T.cdouble)
            self.phase = nn.Parameter(T.zeros(c, dtype=T.float64))
            self.register_buffer("win", T.hann_window(8, dtype=T.float64))

        def forward(self, x):
            X = T.fft.rfft(x, dim=-1, norm="ortho")
            Y = T.einsum("bix,iox->box", X, self.w)
            Y = Y * T.polar(T.ones_like(self.phase), self.phase)[None, :, None]
            y = T.fft.irfft(Y, n=x.shape[-1], dim=-1, norm="ortho")
            Zc = T.fft.ifftshift(T.fft.fftshift(T.fft.fft(x.to(T.cdouble)), dim=-1) * self.filt,
                                 dim=-1)
            z = self.lin(T.fft.ifft(Zc).transpose(1, 2)).transpose(1, 2)
            mag = z.abs() + T.view_as_real(z).pow(2).sum(-1) * 0.1 + z.angle() * 0.01
            S = T.stft(x.reshape(-1, x.shape[-1]), n_fft=8, hop_length=2, window=self.win,
                       return_complex=True)
            rec = T.istft(S * (1 + 0.1j), n_fft=8, hop_length=2, window=self.win,
                          length=x.shape[-1]).reshape(x.shape)
            return F.gelu(y) + mag + (rec * T.exp(1j * self.phase)[None, :, None]).real

    T.manual_seed(0)
    model = Spec()
    if sd is not None:
        model.load_state_dict(sd)
    opt = T.optim.Adam(model.parameters(), lr=1e-2)
    x = T.tensor(np.random.default_rng(2).standard_normal((2, 2, 12)), requires_grad=True)
    loss = model(x).pow(2).mean()
    loss.backward()
    grads = {k: _np(p.grad).copy() for k, p in model.named_parameters()}
    grads["x"] = _np(x.grad).copy()
    opt.step()
    return model, loss.item(), grads


def test_a_complex_fft_layer_trains_as_torchs_without_numpys_complex_warning():
    tm, tl, tg = _spectral(torch, None)
    sd = {k: _np(v).copy() for k, v in tm.state_dict().items()}
    tm, tl, tg = _spectral(torch, {k: torch.tensor(v) for k, v in sd.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)  # x.to(cdouble)'s backward
        sm, sl, sg = _spectral(skiff, {k: skiff.tensor(v) for k, v in sd.items()})
    assert abs(sl - tl) <= 1e-12 * abs(tl)
    for k in tg:
        np.testing.assert_allclose(sg[k], tg[k], rtol=1e-10, atol=1e-13, err_msg=k)
    ssd = sm.state_dict()
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(_np(ssd[k]), _np(v), rtol=1e-12, atol=1e-15, err_msg=k)


def test_segment_reduce_and_empty_strided_as_torchs():
    D = RNG.standard_normal((6, 3))
    D[3, 1] = D[2, 1] = 5.0  # a tie in a segment: max's gradient shared, as torch's
    weights = np.arange(12.0).reshape(4, 3)
    cases = [(r, init) for r in ("sum", "mean", "max", "min", "prod", "amax")
             for init in (None, 0.5)]
    res = {}
    for T in (torch, skiff):
        res[T] = []
        for r, init in cases:
            d = T.tensor(D, requires_grad=True)
            o = T.segment_reduce(d, r, lengths=T.tensor([2, 0, 3, 1]), initial=init)
            (o.nan_to_num(posinf=0, neginf=0) * T.tensor(weights)).sum().backward()
            res[T].append((_np(o), _np(d.grad)))
        o = T.segment_reduce(T.tensor(D), "mean", offsets=T.tensor([0, 2, 2, 5, 6]))
        res[T].append((_np(o),))
        assert tuple(T.empty_strided((2, 3), (1, 2), dtype=T.float64).shape) == (2, 3)
    for case, a, b in zip(cases + ["offsets"], res[torch], res[skiff]):
        for x, y in zip(a, b):
            np.testing.assert_allclose(y, x, rtol=1e-13, equal_nan=True, err_msg=str(case))
    d = skiff.tensor(D)
    for kw, words in [({"lengths": skiff.tensor([2, 2])}, "sum to data.size"),
                      ({"lengths": skiff.tensor([2, -1, 5])}, "negative"),
                      ({}, "Either lengths or offsets")]:
        with pytest.raises(RuntimeError, match=words):
            skiff.segment_reduce(d, "sum", **kw)
    with pytest.raises(RuntimeError, match="must be either sum, prod, mean, amax or amin"):
        skiff.segment_reduce(d, "median", lengths=skiff.tensor([6]))
