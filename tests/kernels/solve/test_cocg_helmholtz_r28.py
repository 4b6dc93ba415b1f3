"""COCG for complex symmetric systems (round 28): Helmholtz with an absorbing boundary gives
A = Aᵀ (not Hermitian); ``auto`` takes COCG there, checked against SciPy's ``spsolve`` (the
answer) and SciPy's ``gmres``/``bicgstab`` (iteration counts on the same matrix)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from skiff.kernels.solve import Solver, solve
from skiff.kernels.solve.amg import SmoothedAggregation
from skiff.kernels.solve.krylov import SolveError


def helmholtz(m=48, k=12.0):
    """5-point Helmholtz on the unit square, ``-Δu - k²u`` with a first-order absorbing
    (Robin) condition ``∂u/∂n - i k u = 0`` on every side: complex symmetric, indefinite."""
    h = 1.0 / (m + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    ends = np.zeros(m)
    ends[[0, -1]] = 1.0
    E = sp.diags(ends)
    I = sp.identity(m)
    L = (sp.kron(I, T) + sp.kron(T, I)) / h**2
    # the absorbing boundary: -1/h^2 (ghost) replaced by the Robin flux on boundary cells
    robin = (sp.kron(I, E) + sp.kron(E, I)) * (-1j * k / h)
    A = (L - k * k * sp.identity(m * m) + robin).tocsr()
    x, y = np.meshgrid(np.arange(1, m + 1) * h, np.arange(1, m + 1) * h, indexing="ij")
    b = np.exp(-200 * ((x - 0.4) ** 2 + (y - 0.6) ** 2)).ravel().astype(complex)
    return A, b


def _count(fn, A, b, **kw):
    its = [0]

    def cb(_):
        its[0] += 1

    if fn is sla.gmres:
        kw.update(callback_type="pr_norm")
    x, info = fn(A, b, rtol=1e-8, callback=cb, **kw)
    return its[0], info, x


def test_auto_takes_cocg_and_matches_spsolve():
    A, b = helmholtz()
    assert abs(A - A.T).max() == 0 and abs(A - A.conj().T).max() > 0
    ref = sla.spsolve(A.tocsc(), b)
    sol = solve(A, b, rtol=1e-10)
    assert sol.method == "cocg" and sol.converged
    assert "complex symmetric" in sol.info["solver"]
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)


def test_cocg_fewer_iterations_than_scipy_krylov():
    """Without a preconditioner COCG needs fewer products with A than SciPy's gmres(30)
    and bicgstab (2 per iteration) on the same matrix; with AMG it converges, and its x is
    spsolve's. (m=32, round 40: at m=48 SciPy's gmres(30) took 7924 iterations, 2.8 s CPU
    of the test's; at 32, COCG 151, gmres 2556, bicgstab 271, 0.5 s.)"""
    A, b = helmholtz(m=32)
    ref = sla.spsolve(A.tocsc(), b)
    sol = solve(A, b, method="cocg", precond="none", rtol=1e-8, maxiter=20000)
    g_its, g_info, _ = _count(sla.gmres, A, b, restart=30, maxiter=2000)
    s_its, s_info, _ = _count(sla.bicgstab, A, b, maxiter=20000)
    assert sol.converged and g_info == 0 and s_info == 0
    assert sol.iterations < g_its and sol.iterations < 2 * s_its
    amg = solve(A, b, method="cocg", precond="amg", rtol=1e-8)
    assert amg.converged and amg.iterations < sol.iterations
    assert np.linalg.norm(amg.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_amg_vcycle_is_complex_symmetric():
    """COCG needs M = M^T: the V-cycle on a complex symmetric matrix (symmetric Gauss-Seidel
    sweeps, R = P^T) is, to round-off."""
    A, _ = helmholtz(m=40)
    M = SmoothedAggregation(A, max_coarse=50).aspreconditioner()
    rng = np.random.default_rng(3)
    u = rng.standard_normal(A.shape[0]) + 1j * rng.standard_normal(A.shape[0])
    v = rng.standard_normal(A.shape[0]) + 1j * rng.standard_normal(A.shape[0])
    uMv, vMu = u @ (M @ v), v @ (M @ u)
    assert abs(uMv - vMu) <= 1e-10 * abs(uMv)


def test_cocg_refuses_hermitian_and_nonsymmetric():
    A, b = helmholtz(m=10)
    H = (A + A.conj().T) / 2 + sp.diags(1j * np.linspace(0, 1, A.shape[0] - 1), 1)
    H = (H + H.conj().T) / 2   # Hermitian, not complex symmetric
    with pytest.raises(SolveError, match="complex symmetric.*method='gmres'"):
        Solver(H.tocsr(), method="cocg")
    with pytest.raises(ValueError, match="method='cg'"):
        from skiff.kernels.solve import poisson
        Solver(poisson((8, 8)), method="cocg")


def test_auto_hermitian_keeps_its_methods():
    """A Hermitian positive definite matrix stays with CG (COCG is for A = A^T only)."""
    A, b = helmholtz(m=12)
    H = (A.conj().T @ A).tocsr()
    sol = solve(H, b)
    assert sol.method == "cg" and sol.converged


def test_breakdown_goes_on_with_gmres():
    """b = (1, i): bᵀb = 0, so COCG without a preconditioner breaks down at once; 'auto'
    then solves with GMRES (spsolve's x), an explicit 'cocg' says what happened."""
    A = sp.csr_matrix(np.array([[2.0, 1j], [1j, 3.0]]))
    b = np.array([1.0, 1j])
    ref = np.linalg.solve(A.toarray(), b)
    sol = solve(A, b, precond="none")
    assert sol.converged and sol.method == "gmres" and "cocg broke down" in sol.info["solver"]
    assert np.allclose(sol.x, ref, atol=1e-12)
    with pytest.raises(SolveError, match="cocg: breakdown.*method='gmres'"):
        solve(A, b, method="cocg", precond="none")


def test_deferred_gauss_seidel_sweep_is_scipys_triangular_solve():
    """The sweep a small first solve runs while numba loads (a kept SuperLU factor of the
    triangle) is SciPy's ``spsolve_triangular`` step, forward and backward, complex; a new
    matrix's values are not served from the cache."""
    from scipy.sparse.linalg import spsolve_triangular

    from skiff.kernels.solve import amg as amg_mod

    A, b = helmholtz(m=12)
    A.sort_indices()
    d = A.diagonal()
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal(A.shape[0]) + 1j * rng.standard_normal(A.shape[0])
    for forward in (True, False):
        for M in (A, (2.0 * A).tocsr()):
            x = x0.copy()
            amg_mod._gauss_seidel_sp(M.indptr, M.indices, M.data, M.diagonal(), x, b, forward)
            T = (sp.tril(M, -1) if forward else sp.triu(M, 1)) + sp.diags(M.diagonal())
            ref = x0 + spsolve_triangular(T.tocsr(), b - M @ x0, lower=forward)
            assert np.allclose(x, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    assert d.dtype.kind == "c"


def test_hierarchy_leaves_the_deferred_sweep_once_numba_is_there():
    from skiff.kernels.backend import numba_available
    from skiff.kernels.solve import amg as amg_mod

    if not numba_available():
        pytest.skip("numba not installed")
    A, b = helmholtz(m=24)
    ml = SmoothedAggregation(A, max_coarse=50)
    ml._gs = amg_mod._gauss_seidel_sp     # as built inside a small first solve
    out = np.empty_like(b)
    ml.precondition(b, out)
    assert ml._gs is not amg_mod._gauss_seidel_sp
    ref = np.empty_like(b)
    ml.precondition(b, ref)
    assert np.allclose(out, ref, rtol=1e-10)
