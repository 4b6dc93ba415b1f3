"""Round 37 (h10): a non-Hermitian coarsest level is inverted from its LU where LAPACK's
condition estimate finds it well-posed, and by the SVD's pseudo-inverse otherwise. Oracles:
SciPy's ``solve`` on regular matrices, NumPy's ``pinv`` on singular ones."""

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.sparse as sp

from skiff.kernels.solve import amg
from skiff.kernels.solve.amg import coarse_inverse


def _matrix(n, complex_, seed):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    if complex_:
        M = M + 1j * rng.standard_normal((n, n))
    return M + n ** 0.5 * np.eye(n)


@pytest.fixture
def no_svd(monkeypatch):
    """The LU path must answer alone: an SVD call fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("the SVD ran on a regular matrix")
    monkeypatch.setattr(amg.np.linalg, "svd", refuse)


@pytest.mark.parametrize("complex_", [False, True])
def test_regular_nonhermitian_is_solved_from_its_lu_as_scipy_solve(complex_, no_svd):
    M = _matrix(60, complex_, 0)
    # badly scaled rows and columns (diagonal 1 ... 1e8): judged on the scaled matrix
    s = np.logspace(0, 4, 60)
    M = s[:, None] * M * s[None, :]
    b = np.random.default_rng(1).standard_normal(60)
    inv = coarse_inverse(M)
    assert inv.dtype == M.dtype
    x = sl.solve(M, b)
    assert np.linalg.norm(inv @ b - x) <= 1e-10 * np.linalg.norm(x)


@pytest.mark.parametrize("complex_", [False, True])
def test_regular_indefinite_hermitian_as_scipy_solve(complex_, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the eigenvectors were taken of a regular complex matrix")
    G = _matrix(50, complex_, 5)
    M = G + G.T.conj() - 3 * np.eye(50)          # Hermitian, eigenvalues of both signs
    assert np.linalg.eigvalsh(M).min() < 0 < np.linalg.eigvalsh(M).max()
    if complex_:   # from its LU (a real one's eigenvectors cost about the LU's)
        monkeypatch.setattr(amg.np.linalg, "eigh", refuse)
        monkeypatch.setattr(amg.np.linalg, "eigvalsh", refuse)
    inv = coarse_inverse(M)
    assert np.abs(inv - inv.T.conj()).max() <= 1e-12 * np.abs(inv).max()
    b = np.random.default_rng(6).standard_normal(50)
    x = sl.solve(M, b, assume_a="her")
    assert np.linalg.norm(inv @ b - x) <= 1e-10 * np.linalg.norm(x)


@pytest.mark.parametrize("complex_", [False, True])
def test_singular_indefinite_hermitian_keeps_the_pseudo_inverse(complex_):
    rng = np.random.default_rng(7)
    Q = np.linalg.qr(_matrix(40, complex_, 8))[0]
    w = rng.uniform(1, 3, 40) * rng.choice([-1, 1], 40)
    w[:2] = 0                                     # rank 38, eigenvalues of both signs
    M = (Q * w) @ Q.T.conj()
    M = (M + M.T.conj()) / 2
    inv = coarse_inverse(M)
    ref = np.linalg.pinv(M, rcond=1e-10, hermitian=True)
    assert np.abs(inv - ref).max() <= 1e-8 * np.abs(ref).max()


@pytest.mark.parametrize("complex_", [False, True])
def test_singular_nonhermitian_keeps_the_pseudo_inverse(complex_):
    M = _matrix(50, complex_, 2)
    M[:, 3] = 2 * M[:, 7]            # rank 49: an exact LU would not see it as a zero pivot
    M[:, 20] = M[:, 21] - M[:, 22]   # rank 48
    inv = coarse_inverse(M)
    ref = np.linalg.pinv(M, rcond=1e-10)
    assert np.linalg.matrix_rank(M) == 48
    assert np.abs(inv - ref).max() <= 1e-9 * np.abs(ref).max()


def test_row_scaled_singular_laplacian_and_exact_zero_pivot():
    # a Neumann 1-D Laplacian (null space: the constant), rows scaled: not symmetric
    n = 40
    L = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]).toarray()
    L[0, 0] = L[-1, -1] = 1
    M = (1 + np.arange(n))[:, None] * L
    inv = coarse_inverse(M)
    ref = np.linalg.pinv(M, rcond=1e-10)
    assert np.abs(inv - ref).max() <= 1e-8 * np.abs(ref).max()
    assert np.abs(inv).max() < 1e4                  # not round-off magnified
    # a zero column: getrf stops on an exact zero pivot
    Z = _matrix(20, True, 3)
    Z[:, 5] = 0
    assert np.allclose(coarse_inverse(Z), np.linalg.pinv(Z, rcond=1e-10))


def test_amg_on_nonhermitian_matrix_solves_as_spsolve(no_svd):
    # upwind convection-diffusion with a complex shift: its coarsest level takes the LU path
    from skiff import solve
    n = 48
    T = sp.diags([-1.5, 2.5, -1.0], [-1, 0, 1], shape=(n, n))
    eye = sp.identity(n)
    A = (sp.kron(eye, T) + sp.kron(T, eye) + 1e-3j * sp.identity(n * n)).tocsr()
    b = np.random.default_rng(4).standard_normal(n * n)
    sol = solve(A, b, method="gmres", precond="amg", rtol=1e-10)
    x = sp.linalg.spsolve(A.tocsc(), b)
    assert sol.converged
    assert np.linalg.norm(sol.x - x) <= 1e-8 * np.linalg.norm(x)
