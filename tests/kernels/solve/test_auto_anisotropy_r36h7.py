"""``amg='auto'`` takes classical AMG for anisotropic diffusion (round 36, h7): a diffusion
M-matrix whose median row couples 10x more strongly in some directions than in others.
Smoothed aggregation spent 0.5-2.2 s CPU in setup there (3-D 40^3 with y and z at 1e-2) where
classical AMG, as pyamg's ``ruge_stuben_solver``, takes 0.1 s at fewer CG iterations."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from skiff.kernels.solve.amg_rs import suits_classical
from skiff.kernels.solve.solver import Solver

pyamg = pytest.importorskip("pyamg")


def _lap(m):
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))


def _aniso2(m, eps):
    return sp.csr_matrix(sp.kronsum(_lap(m), eps * _lap(m)))


def _aniso3(m, ey, ez):
    T, I = _lap(m), sp.identity(m)
    return sp.csr_matrix(sp.kron(sp.kron(T, I), I) + ey * sp.kron(sp.kron(I, T), I)
                         + ez * sp.kron(sp.kron(I, I), T))


def _p27(m):
    """Trilinear elements' Laplacian: 27 entries a row, all off-diagonal ones negative."""
    K, M = _lap(m), sp.diags([1.0, 4.0, 1.0], [-1, 0, 1], shape=(m, m)) / 6
    return sp.csr_matrix(sp.kron(sp.kron(K, M), M) + sp.kron(sp.kron(M, K), M)
                         + sp.kron(sp.kron(M, M), K))


def _rotated(m, eps=1e-2, angle=np.pi / 6):
    """Rotated anisotropy (FD, mixed derivative: positive off-diagonal entries)."""
    c, s = np.cos(angle), np.sin(angle)
    axx, ayy, axy = c * c + eps * s * s, s * s + eps * c * c, (1 - eps) * c * s
    T, I = _lap(m), sp.identity(m)
    D = sp.diags([-0.5, 0.5], [-1, 1], shape=(m, m))
    return sp.csr_matrix(axx * sp.kron(T, I) + ayy * sp.kron(I, T) + 2 * axy * sp.kron(D, D))


@pytest.mark.parametrize("A, reason", [
    (_aniso2(40, 1e-3), "for the anisotropy"),
    (_aniso2(40, 0.1), "for the anisotropy"),
    (_aniso3(12, 1.0, 1e-2), "for the anisotropy"),
    (_aniso3(12, 1e-2, 1e-2), "for the anisotropy"),
    (_aniso3(12, 1.0, 0.3), ""),          # 3.3x: SA and classical tie
    (_aniso2(40, 1.0), ""),               # isotropic
    (_p27(12), ""),
    (_rotated(40), ""),                   # positive entries: not an M-matrix
])
def test_which_matrices_are_anisotropic(A, reason):
    assert suits_classical(A) == reason


def test_a_graph_with_long_rows_is_not_taken():
    """A path whose links alternate 1 and 0.05 (every row 20x unequal) is taken; with a hub
    of 40 leaves on it, a row longer than a stencil's (a graph, not a grid), it is not."""
    n = 200

    def laplacian(hub):
        W = sp.lil_matrix((n, n))
        for i in range(n - 1):
            W[i, i + 1] = W[i + 1, i] = 1.0 if i % 2 else 0.05
        for j in range(2, 42 if hub else 2):
            W[0, j] = W[j, 0] = 1.0
        W = sp.csr_matrix(W)
        return sp.csr_matrix(sp.diags(np.asarray(W.sum(axis=1)).ravel() + 1e-3) - W)

    assert suits_classical(laplacian(hub=False)) == "for the anisotropy"
    L = laplacian(hub=True)
    assert np.diff(L.indptr).max() > 27
    assert suits_classical(L) == ""


def test_auto_solves_anisotropy_as_pyamgs_ruge_stuben():
    A = _aniso3(16, 1e-2, 1e-2)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    s = Solver(A, method="cg", precond="amg")
    assert "classical (Ruge-Stueben), for the anisotropy" in s.describe()
    r = s.solve(b, rtol=1e-8)
    res = []
    pyamg.ruge_stuben_solver(A, max_coarse=400).solve(b, tol=1e-8, accel="cg", residuals=res)
    assert r.iterations <= len(res) - 1
    np.testing.assert_allclose(r.x, spsolve(A.tocsc(), b), rtol=1e-6, atol=1e-6 * abs(r.x).max())
