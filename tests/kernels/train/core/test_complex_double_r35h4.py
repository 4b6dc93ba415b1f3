"""Round 35 (h4): gradients of gradients (``create_graph=True``) through the transforms and
the complex ops, against torch 2.13 in float64/complex128; and a first-order fix: a real
tensor used in a complex product (``|z| * c``) handed its producer the complex gradient, so
``abs``'s conjugated rule gave ``g conj(sgn z)`` instead of torch's ``g sgn z``."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402

R = np.random.default_rng(353)
X = R.standard_normal(8)
C8 = R.standard_normal(8) + 1j * R.standard_normal(8)
X2 = R.standard_normal((2, 6, 5))

REAL = {
    "rfft_abs2": lambda L, v: (L.fft.rfft(v).abs() ** 2).sum(),
    "rfft_abs3_ortho": lambda L, v: (L.fft.rfft(v, norm="ortho").abs() ** 3).sum(),
    "fft_real3": lambda L, v: (L.fft.fft(v).real ** 3).sum(),
    "ifft_fft": lambda L, v: (L.fft.ifft(L.fft.fft(v * v)).real ** 3).sum(),
    "irfft_prod": lambda L, v: (L.fft.irfft(L.fft.rfft(v) * L.fft.rfft(v), n=8) ** 2).sum(),
    "rfft_pad_imag": lambda L, v: (L.fft.rfft(v, n=11, norm="ortho").imag ** 3).sum(),
    "irfft_crop_fwd": lambda L, v: (L.fft.irfft(L.fft.fft(v) ** 2, n=6, norm="forward")
                                    ** 3).sum() * 1e-3,
    "fft_crop": lambda L, v: (L.fft.fft(v, n=5).abs() ** 3).sum(),
    "view_as_real": lambda L, v: (L.view_as_real(L.fft.fft(v)) ** 3).sum(),
    "complex_abs": lambda L, v: (L.complex(v, v * v).abs() ** 3).sum(),
    "sgn": lambda L, v: (L.fft.fft(v).sgn().real * v).sum(),
    "conj": lambda L, v: ((L.fft.fft(v).conj() * L.fft.fft(v * v)).real ** 2).sum(),
}

REAL2 = {
    "rfft2_irfft2": lambda L, v: (L.fft.irfft2(L.fft.rfft2(v, norm="ortho") ** 2, s=(6, 5))
                                  ** 2).sum(),
    "rfftn_weighted": lambda L, v: (L.fft.rfftn(v, dim=(-2, -1)).abs() ** 2
                                    * L.tensor(np.arange(3.0))).sum(),
    "fft2_s": lambda L, v: (L.fft.ifft2(L.fft.fft2(v, s=(4, 7)) ** 2).real ** 2).sum(),
}


def _second(f, x):
    out = []
    for L in (skiff, torch):
        v = L.tensor(x, requires_grad=True)
        (g,) = L.autograd.grad(f(L, v), v, create_graph=True)
        (g.abs() ** 2).sum().backward()
        out.append((np.asarray(g.detach()), np.asarray(v.grad)))
    (gs, hs), (gt, ht) = out
    np.testing.assert_allclose(gs, gt, rtol=1e-10, atol=1e-12 * np.abs(gt).max())
    np.testing.assert_allclose(hs, ht, rtol=1e-10, atol=1e-12 * np.abs(ht).max())


@pytest.mark.parametrize("name", sorted(REAL))
def test_double_backward_real_input(name):
    _second(REAL[name], X)


@pytest.mark.parametrize("name", sorted(REAL2))
def test_double_backward_2d(name):
    _second(REAL2[name], X2)


@pytest.mark.parametrize("name", ["abs3", "fft_abs2", "real_imag", "ifft_sgn"])
def test_double_backward_complex_leaf(name):
    f = {"abs3": lambda L, z: (z.abs() ** 3).sum(),
         "fft_abs2": lambda L, z: (L.fft.fft(z * z).abs() ** 2).sum(),
         "real_imag": lambda L, z: (z.real ** 2 * z.imag).sum() + (z * z).real.sum(),
         "ifft_sgn": lambda L, z: (L.fft.ifft(z).sgn() * L.tensor(C8)).real.sum()}[name]
    _second(f, C8)


def test_hessian_vector_product_of_spectral_loss():
    """``torch.autograd.functional.hvp``-style: grad of (grad . v) for a spectral penalty."""
    w = R.standard_normal(8)
    out = []
    for L in (skiff, torch):
        x = L.tensor(X, requires_grad=True)
        loss = (L.fft.rfft(x).abs() ** 2 * L.tensor(np.arange(5.0))).sum() + (x ** 4).sum()
        (g,) = L.autograd.grad(loss, x, create_graph=True)
        (hv,) = L.autograd.grad((g * L.tensor(w)).sum(), x)
        out.append(np.asarray(hv))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-10)


def test_first_order_real_tensor_in_complex_product():
    z = R.standard_normal(5) + 1j * R.standard_normal(5)
    c = R.standard_normal(5) + 1j * R.standard_normal(5)
    fs = [lambda L, v: (v.abs() * L.tensor(c)).real.sum(),
          lambda L, v: ((v.abs().exp() * L.tensor(c)) ** 2).imag.sum(),
          lambda L, v: L.complex(v.abs(), v.real * 2).abs().sum()]
    for f in fs:
        got = []
        for L in (skiff, torch):
            v = L.tensor(z, requires_grad=True)
            f(L, v).backward()
            got.append(np.asarray(v.grad))
        np.testing.assert_allclose(got[0], got[1], rtol=1e-12)


def test_func_hessian_and_jacobian_through_rfft():
    """``torch.func.hessian`` of a spectral energy and ``autograd.functional.jacobian(...,
    create_graph=True)`` of a power spectrum (both needed the transforms' second order)."""
    got = []
    for L, F in ((skiff, skiff.func), (torch, torch.func)):
        h = F.hessian(lambda v, L=L: (L.fft.rfft(v).abs() ** 3).sum())(L.tensor(X))
        x = L.tensor(X, requires_grad=True)
        j = L.autograd.functional.jacobian(lambda v, L=L: L.fft.rfft(v, norm="ortho").abs() ** 2,
                                           x,
                                           create_graph=True)
        (j ** 2).sum().backward()
        got.append((np.asarray(h.detach()), np.asarray(j.detach()), np.asarray(x.grad)))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * np.abs(b).max())


CX_OPS = {
    "sigmoid": lambda L, z: (z * 0.3).sigmoid(),  # gave a real sigmoid of |z| (0 imaginary)
    "tanh": lambda L, z: (z * 0.3).tanh(),
    "div_pow": lambda L, z: (z / (z.conj() + 2)) ** 3,
    "exp_log": lambda L, z: L.log(z.exp() + 1),
    "sqrt_abs": lambda L, z: z.sqrt() * z.abs(),
    "reciprocal_rsqrt": lambda L, z: (z + 3).reciprocal() + (z + 3).rsqrt(),
    "prod_cumsum": lambda L, z: z.prod(0) + z.cumsum(0),
}


@pytest.mark.parametrize("name", sorted(CX_OPS))
def test_complex_elementwise_values_and_gradients(name):
    got = []
    for L in (skiff, torch):
        z = L.tensor(C8, requires_grad=True)
        y = CX_OPS[name](L, z)
        (y.abs() ** 2).sum().backward()
        got.append((np.asarray(y.detach()), np.asarray(z.grad)))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-12)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-10)
