"""Round 38 (h4): the ``torch.special`` names skiff lacked (``polygamma``, ``round``, the
modified/spherical Bessel functions, ``airy_ai``, the Chebyshev (and shifted), Hermite,
Laguerre and Legendre polynomials) against torch 2.13 (``airy_ai`` against mpmath, where
torch's is 2e-6 off): values, dtypes, ``n`` truncated and negative, and no gradient (torch has
none)."""

import numpy as np
import pytest

import skiff
import skiff.special as S

torch = pytest.importorskip("torch")

X = np.array([-2.5, -1.0, -0.4, 0.0, 0.3, 0.9, 1.0, 1.7, 4.0])
POS = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 30.0])
UNARY = ["modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
         "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
         "spherical_bessel_j0", "airy_ai"]
POLY = [n for n in S.__all__ if n.endswith(("polynomial_t", "polynomial_u", "polynomial_v",
                                            "polynomial_w", "polynomial_h", "polynomial_he",
                                            "polynomial_l", "polynomial_p"))]


@pytest.mark.parametrize("name", UNARY)
def test_bessel_and_airy_values_are_torchs(name):
    x = POS if "_k" in name else X
    ours = getattr(S, name)(skiff.tensor(x))
    theirs = getattr(torch.special, name)(torch.tensor(x))
    if name == "airy_ai":  # torch's approximation is 2e-6 off at -2.5; skiff's is scipy's
        mpmath = pytest.importorskip("mpmath")
        exact = np.array([float(mpmath.airyai(v)) for v in x])
        np.testing.assert_allclose(ours.numpy(), exact, rtol=1e-13)
        ours, theirs, x = ours[1:], theirs[1:], x[1:]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-300)
    assert getattr(S, name)(skiff.tensor(x.astype(np.float32))).dtype == skiff.float32


@pytest.mark.parametrize("name", POLY)
def test_orthogonal_polynomials_are_torchs(name):
    n = np.array([-1.0, 0.0, 1.0, 2.0, 3.7, 5.0, 9.0])
    x = X[:, None]
    ours = getattr(S, name)(skiff.tensor(x), skiff.tensor(n))
    theirs = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-11, atol=1e-11)
    a = getattr(S, name)(skiff.tensor(x.astype(np.float32)), 3)  # a Python n: x's dtype
    b = getattr(torch.special, name)(torch.tensor(x.astype(np.float32)), 3)
    assert a.dtype == skiff.float32 and b.dtype == torch.float32
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


def test_polygamma_round_and_no_gradient_as_torchs():
    x = skiff.tensor(POS, requires_grad=True)
    t = torch.tensor(POS, requires_grad=True)
    np.testing.assert_allclose(S.polygamma(2, x).detach().numpy(),
                               torch.special.polygamma(2, t).detach().numpy(), rtol=1e-12)
    np.testing.assert_array_equal(S.round(skiff.tensor([1.25, 2.5, -0.35]), decimals=1).numpy(),
                                  torch.special.round(torch.tensor([1.25, 2.5, -0.35]),
                                                      decimals=1).numpy())
    for lib, v in ((skiff, x), (torch, t)):
        assert not lib.special.modified_bessel_i0(v).requires_grad
        assert not lib.special.legendre_polynomial_p(v, 2).requires_grad
