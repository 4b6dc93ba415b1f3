"""Complex systems with AMG (round 27): a Helmholtz problem with an absorbing boundary
(complex symmetric, indefinite) and a Hermitian positive definite one, preconditioned by
skiff's complex smoothed aggregation, against pyamg's complex SA (the same SciPy GMRES/CG
around each) and SciPy's ``spsolve``. Before, AMG on a complex matrix was refused and
``auto`` ran GMRES without a preconditioner (2133 iterations at 16 641 unknowns, k = 20)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

skfem = pytest.importorskip("skfem")
pyamg = pytest.importorskip("pyamg")

from skfem import Basis, ElementTriP1, FacetBasis, LinearForm, MeshTri  # noqa: E402
from skfem.models.poisson import laplace, mass  # noqa: E402

import skiff  # noqa: E402
from skiff.kernels.solve.amg import SmoothedAggregation, _fit_candidates  # noqa: E402


def _helmholtz(refs=5, k=20.0):
    """P1 on the unit square: K - k^2 M - i k M_boundary (Robin/absorbing on every side),
    a Gaussian source; complex symmetric, not Hermitian."""
    m = MeshTri.init_sqsymmetric().refined(refs)
    ib, fb = Basis(m, ElementTriP1()), FacetBasis(m, ElementTriP1())
    K, M, Mb = laplace.assemble(ib), mass.assemble(ib), mass.assemble(fb)
    A = (K - k * k * M - 1j * k * Mb).tocsr()
    src = LinearForm(lambda v, w: np.exp(-100 * ((w.x[0] - 0.5) ** 2 + (w.x[1] - 0.3) ** 2))
                     * v).assemble(ib)
    return A, src.astype(np.complex128), M


def _gmres_iterations(A, b, M, restart=50):
    res = []
    x, info = spla.gmres(A, b, M=M, rtol=1e-8, restart=restart, maxiter=40,
                         callback=res.append, callback_type="pr_norm")
    return len(res), info, x


def test_complex_fit_candidates_is_a_unitary_basis_per_aggregate():
    rng = np.random.default_rng(4)
    n, count = 200, 30
    agg = rng.integers(0, count, n)
    B = rng.standard_normal((n, 2)) + 1j * rng.standard_normal((n, 2))
    T, Bc = _fit_candidates(agg, count, B)
    np.testing.assert_allclose((T.conj().T @ T).toarray(), np.eye(T.shape[1]), atol=1e-12)
    np.testing.assert_allclose(T @ Bc, B, atol=1e-12)
    _, r = np.linalg.qr(B[agg == 3])            # numpy's complex QR: |R| agrees
    cols = np.unique(T[np.flatnonzero(agg == 3)].nonzero()[1])
    np.testing.assert_allclose(np.abs(Bc[cols]), np.abs(r), atol=1e-12)


def test_helmholtz_absorbing_gmres_amg_within_pyamg_iterations():
    """SciPy's gmres(50) with each library's V-cycle built on A itself: skiff's takes no
    more iterations than pyamg's complex SA (evolution strength, as both defaults), and
    the solution is spsolve's."""
    A, b, _ = _helmholtz()
    ref = spla.spsolve(A.tocsc(), b)
    ours = SmoothedAggregation(A)
    assert ours.complex and not ours.symmetric and ours.nlevels >= 2
    its, info, x = _gmres_iterations(A, b, ours.aspreconditioner())
    ml = pyamg.smoothed_aggregation_solver(A, strength="evolution")
    its_pyamg, info_pyamg, _ = _gmres_iterations(A, b, ml.aspreconditioner())
    assert info == 0 and info_pyamg == 0
    assert its <= its_pyamg, (its, its_pyamg)
    assert np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_solve_auto_takes_complex_amg_and_matches_spsolve():
    """``skiff.solve`` on the complex matrix: 'auto' is GMRES with AMG now (it was GMRES
    with no preconditioner); far fewer iterations than SciPy's gmres without one."""
    A, b, _ = _helmholtz()
    ref = spla.spsolve(A.tocsc(), b)
    sol = skiff.solve(A, b, rtol=1e-8, restart=50)
    assert sol.converged and sol.precond == "amg"
    assert sol.x.dtype == np.complex128
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)
    plain, info, _ = _gmres_iterations(A, b, None)
    assert info != 0 or plain > 5 * sol.iterations, (plain, sol.iterations)
    for method in ("bicgstab", "gmres"):
        s = skiff.solve(A, b, method=method, precond="amg", rtol=1e-8)
        assert s.converged and np.linalg.norm(s.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_shifted_laplacian_preconditioner_built_by_skiff():
    """The complex shifted Laplacian (A - 0.5 i k^2 M), a Helmholtz user's classic M: skiff's
    AMG built on it preconditions A no worse than pyamg's built on the same matrix."""
    k = 20.0
    A, b, M = _helmholtz(k=k)
    P = (A - 0.5j * k * k * M).tocsr()
    its, info, x = _gmres_iterations(A, b, SmoothedAggregation(P).aspreconditioner())
    its_pyamg, info_pyamg, _ = _gmres_iterations(
        A, b, pyamg.smoothed_aggregation_solver(P, strength="evolution").aspreconditioner())
    assert info == 0 == info_pyamg and its <= its_pyamg, (its, its_pyamg)
    sol = skiff.solve(A, b, M=SmoothedAggregation(P).aspreconditioner(), rtol=1e-8, restart=50)
    ref = spla.spsolve(A.tocsc(), b)
    assert sol.converged and np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_hermitian_positive_definite_cg_amg_against_pyamg():
    """A Hermitian positive definite matrix (a magnetic Laplacian: the couplings carry a
    phase): CG with skiff's AMG (Chebyshev smoothing, R = P^H) against pyamg's Hermitian SA
    with CG, and spsolve."""
    n = 40
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    L = (sp.kron(sp.eye(n), one) + sp.kron(one, sp.eye(n))).tocsr()
    rng = np.random.default_rng(5)
    phase = np.exp(1j * 0.3 * rng.standard_normal(L.nnz))
    C = sp.csr_matrix((L.data * phase, L.indices, L.indptr), shape=L.shape)
    up = sp.triu(C, 1)
    A = (up + up.conj().T + sp.diags(L.diagonal() + 1e-2)).tocsr()   # Hermitian, SPD
    b = rng.standard_normal(n * n) + 1j * rng.standard_normal(n * n)
    ref = spla.spsolve(A.tocsc(), b)
    amg = SmoothedAggregation(A)
    assert amg.complex and amg.symmetric
    res = []
    x, info = spla.cg(A, b, M=amg.aspreconditioner(), rtol=1e-8, maxiter=300,
                      callback=lambda xk: res.append(0))
    ml = pyamg.smoothed_aggregation_solver(A, symmetry="hermitian")
    res_p = []
    spla.cg(A, b, M=ml.aspreconditioner(), rtol=1e-8, maxiter=300,
            callback=lambda xk: res_p.append(0))
    assert info == 0 and len(res) <= len(res_p) + 2, (len(res), len(res_p))
    assert np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)
    sol = skiff.solve(A, b, rtol=1e-8)                   # auto: CG + AMG
    assert sol.method == "cg" and sol.precond == "amg" and sol.converged
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_real_hierarchy_applies_to_complex_vectors_by_parts():
    """A real A's aspreconditioner on a complex vector (SciPy's gmres with a complex b):
    the V-cycle of the real and imaginary parts."""
    A, _, _ = _helmholtz(refs=4)
    K = (A.real + sp.diags(np.full(A.shape[0], 500.0))).tocsr()
    M = SmoothedAggregation(K).aspreconditioner()
    r = np.random.default_rng(6).standard_normal((2, K.shape[0]))
    z = M.matvec(r[0] + 1j * r[1])
    np.testing.assert_allclose(z, M.matvec(r[0]) + 1j * M.matvec(r[1]), rtol=1e-12)


def test_purely_imaginary_and_turned_matrices():
    """``i L`` (a real part of zeros: evolution strength on the real part divided by its zero
    diagonal, NaN) and ``e^{i 0.7} L``: each row is turned by its diagonal's phase first, so
    both coarsen as L does; GMRES+AMG within pyamg's iterations, spsolve's answer."""
    n = 40
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    L = (sp.kron(sp.eye(n), one) + sp.kron(one, sp.eye(n))).tocsr()
    b = np.random.default_rng(8).standard_normal(n * n) + 0j
    for A in ((1j * L).tocsr(), (np.exp(0.7j) * L).tocsr()):
        ref = spla.spsolve(A.tocsc(), b)
        with np.errstate(all="raise"):
            amg = SmoothedAggregation(A)
        its, info, x = _gmres_iterations(A, b, amg.aspreconditioner())
        ml = pyamg.smoothed_aggregation_solver(A, symmetry="symmetric", strength="evolution")
        its_pyamg, info_pyamg, _ = _gmres_iterations(A, b, ml.aspreconditioner())
        assert info == 0 and its <= max(its_pyamg, 1) + 1, (its, its_pyamg, info_pyamg)
        assert np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)
        sol = skiff.solve(A, b, rtol=1e-10)
        assert sol.converged and np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
