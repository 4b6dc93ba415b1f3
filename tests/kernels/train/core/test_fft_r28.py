"""skiff.fft (round 28) against torch 2.13's torch.fft in float64: values and gradients of
every transform, for each norm, with s= (padding and cropping) and dim=, from a real loss
that weighs the real and imaginary parts of the output apart (so the gradient's imaginary
part is checked too)."""

import numpy as np
import pytest

import skiff
from skiff import fft as sfft

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(28)


def _input(shape, complex_):
    x = RNG.standard_normal(shape)
    return x + 1j * RNG.standard_normal(shape) if complex_ else x


def _both(name, x, **kw):
    """(skiff output, torch output, skiff input grad, torch input grad) of one transform,
    through the loss sum(view_as_real(out) * w) (sum(out * w) for a real output)."""
    ts = skiff.tensor(x, requires_grad=True)
    tt = torch.tensor(x, requires_grad=True)
    os_, ot = getattr(sfft, name)(ts, **kw), getattr(torch.fft, name)(tt, **kw)
    assert tuple(os_.shape) == tuple(ot.shape)
    w = RNG.standard_normal(tuple(ot.shape) + ((2,) if ot.is_complex() else ()))
    if ot.is_complex():
        ls = (sfft.view_as_real(os_) * skiff.tensor(w)).sum()
        lt = (torch.view_as_real(ot.resolve_conj()) * torch.tensor(w)).sum()
    else:
        ls, lt = (os_ * skiff.tensor(w)).sum(), (ot * torch.tensor(w)).sum()
    ls.backward()
    lt.backward()
    return (np.asarray(os_._data), ot.detach().resolve_conj().numpy(), np.asarray(ts.grad._data),
            tt.grad.resolve_conj().numpy())


def _check(name, x, **kw):
    ys, yt, gs, gt = _both(name, x, **kw)
    assert ys.dtype == yt.dtype
    np.testing.assert_allclose(ys, yt, rtol=1e-12, atol=1e-12)
    assert gs.dtype == gt.dtype
    np.testing.assert_allclose(gs, gt, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("name,complex_", [("fft", True), ("fft", False), ("ifft", True),
                                           ("rfft", False), ("irfft", True)])
def test_1d_transforms_and_gradients_match_torch(name, complex_, norm):
    _check(name, _input((3, 7), complex_), norm=norm)
    _check(name, _input((3, 8), complex_), norm=norm)


@pytest.mark.parametrize("n", [5, 6, 12, 13])
@pytest.mark.parametrize("name,complex_", [("fft", True), ("ifft", True), ("rfft", False),
                                           ("irfft", True)])
def test_n_pads_or_crops_as_torch(name, complex_, n):
    _check(name, _input((2, 8, 3), complex_), n=n, dim=1, norm="ortho")


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name,complex_", [("fft2", True), ("ifft2", True), ("rfft2", False),
                                           ("irfft2", True), ("fftn", True), ("ifftn", True),
                                           ("rfftn", False), ("irfftn", True)])
def test_2d_and_nd_transforms_match_torch(name, complex_, norm):
    _check(name, _input((2, 3, 6, 5), complex_), norm=norm)


@pytest.mark.parametrize("kw", [{"s": (4, 9)}, {"s": (7, 4), "dim": (1, 3)},
                                {"dim": (0, 2)}, {"s": (-1, 10)}, {"dim": (-1, 1)}])
@pytest.mark.parametrize("name,complex_", [("fftn", True), ("ifftn", False), ("rfftn", False),
                                           ("irfftn", True)])
def test_s_and_dim_as_torch(name, complex_, kw):
    _check(name, _input((2, 5, 6, 5), complex_), **kw)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name,complex_,kw", [
    ("hfft", True, {}), ("hfft", True, {"n": 9}), ("ihfft", False, {}),
    ("ihfft", False, {"n": 5}), ("hfft2", True, {}), ("ihfft2", False, {}),
    ("hfftn", True, {"s": (4, 6)}), ("ihfftn", False, {"dim": (0, 2)})])
def test_hermitian_transforms_match_torch(name, complex_, kw, norm):
    _check(name, _input((3, 4, 6), complex_), norm=norm, **kw)


def test_irfft2_with_s_of_an_fno_spectrum():
    """An FNO's last step: a one-sided spectrum (n // 2 + 1 bins) back to the grid's size."""
    _check("irfft2", _input((2, 3, 12, 7), True), s=(12, 12))
    _check("irfft2", _input((2, 3, 12, 7), True), s=(12, 13))


def test_fftshift_fftfreq_match_torch():
    x = _input((4, 7), True)
    for name in ("fftshift", "ifftshift"):
        _check(name, x)
        _check(name, x, dim=1)
    for n, d in ((8, 1.0), (7, 0.25)):
        np.testing.assert_allclose(np.asarray(sfft.fftfreq(n, d, dtype=skiff.float64)._data),
                                   torch.fft.fftfreq(n, d, dtype=torch.float64).numpy())
        np.testing.assert_allclose(np.asarray(sfft.rfftfreq(n, d, dtype=skiff.float64)._data),
                                   torch.fft.rfftfreq(n, d, dtype=torch.float64).numpy())


def test_float32_gives_complex64_as_torch():
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    assert sfft.rfft(skiff.tensor(x)).dtype == np.complex64
    assert sfft.irfft(sfft.rfft(skiff.tensor(x))).dtype == np.float32
    assert str(torch.fft.rfft(torch.tensor(x)).dtype) == "torch.complex64"


def test_bad_input_names_the_fix():
    with pytest.raises(ValueError, match="norm"):
        sfft.fft(skiff.tensor(_input((4,), True)), norm="unitary")
    with pytest.raises(TypeError, match="use fft"):
        sfft.rfft(skiff.tensor(_input((4,), True)))
    with pytest.raises(IndexError, match="dim"):
        sfft.fft2(skiff.tensor(_input((4,), True)))


def _burgers_residual(lib, fftmod, u, n):
    """A PINO-style spectral loss: u_x and u_xx through rfft/irfft with i k (fftfreq),
    u u_x - nu u_xx, a spectrum term through abs and conj, and a c2c round trip."""
    k = fftmod.rfftfreq(n, d=1.0 / n, dtype=lib.float64)
    uh = fftmod.rfft(u)
    ux = fftmod.irfft(2 * np.pi * 1j * k * uh, n=n)
    uxx = fftmod.irfft(-(2 * np.pi * k) ** 2 * uh, n=n)
    spec = (uh.abs() ** 2).mean() + (uh * uh.conj()).real.sum() * 1e-3
    rt = fftmod.ifft(fftmod.fft(u) * (1 + 2j)).imag.pow(2).sum()
    return ((u * ux - 0.01 * uxx) ** 2).mean() + spec + rt


def test_spectral_derivative_loss_and_gradient_match_torch():
    u0 = RNG.standard_normal((4, 32))
    ut = torch.tensor(u0, requires_grad=True)
    us = skiff.tensor(u0, requires_grad=True)
    lt, ls = _burgers_residual(torch, torch.fft, ut, 32), _burgers_residual(skiff, sfft, us, 32)
    np.testing.assert_allclose(ls.item(), lt.item(), rtol=1e-12)
    lt.backward()
    ls.backward()
    np.testing.assert_allclose(np.asarray(us.grad._data), ut.grad.numpy(), rtol=1e-10,
                               atol=1e-10)
