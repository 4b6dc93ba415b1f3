"""Smoothed-aggregation AMG on rotated anisotropic diffusion (scikit-fem P1), against pyamg.

Oracles: pyamg's smoothed_aggregation_solver with the same strength threshold (operator
complexity, CG iterations) and SciPy's spsolve (the solution)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import cg, spsolve

pyamg = pytest.importorskip("pyamg")
skfem = pytest.importorskip("skfem")

from skiff.kernels.solve.amg import SmoothedAggregation, aggregate, strength  # noqa: E402


def _rotated(refine=6, eps=1e-3, angle=np.pi / 6):
    cs, sn = np.cos(angle), np.sin(angle)
    Q = np.array([[cs, -sn], [sn, cs]])
    K = Q @ np.diag([1.0, eps]) @ Q.T
    ib = skfem.Basis(skfem.MeshTri.init_sqsymmetric().refined(refine), skfem.ElementTriP1())
    A = skfem.BilinearForm(lambda u, v, w: sum(K[i, j] * u.grad[i] * v.grad[j]
                                               for i in range(2) for j in range(2))).assemble(ib)
    b = skfem.LinearForm(lambda v, w: v).assemble(ib)
    keep = ib.complement_dofs(ib.get_dofs())
    return A[keep][:, keep].tocsr(), b[keep]


def _cg_iterations(A, b, M):
    count = [0]
    x, info = cg(A, b, rtol=1e-8, maxiter=2000, M=M,
                 callback=lambda _: count.__setitem__(0, count[0] + 1))
    return x, count[0]


def test_nodes_without_strong_neighbours_are_in_no_aggregate():
    # pyamg's standard aggregation leaves such nodes out (an empty row of its AggOp)
    A, _ = _rotated(refine=5)
    amg = SmoothedAggregation(A, theta=0.25)
    Ac = amg.levels[1][0]                    # the first coarse level has isolated nodes
    S = strength(Ac, 0.25)
    agg, count = aggregate(S)
    C = pyamg.strength.symmetric_strength_of_connection(Ac, theta=0.25)
    AggOp, _ = pyamg.aggregation.standard_aggregation(C)
    isolated = np.diff(S.indptr) == 0
    assert isolated.any()
    np.testing.assert_array_equal(agg < 0, np.diff(AggOp.tocsr().indptr) == 0)
    assert count == AggOp.shape[1]
    P = amg.levels[1][3]
    assert np.all(np.diff(P.indptr)[isolated] <= np.diff(Ac.indptr)[isolated])  # only smoothed


def test_rotated_anisotropy_theta_keeps_complexity_of_pyamg():
    A, b = _rotated(refine=6)
    theta = 0.25
    ml = pyamg.smoothed_aggregation_solver(A, strength=("symmetric", {"theta": theta}),
                                           max_coarse=400)
    amg = SmoothedAggregation(A, theta=theta)
    # before: singleton aggregates of isolated nodes, complexity 4.1 here (43.7 at 65k)
    assert amg.operator_complexity <= 1.1 * ml.operator_complexity()
    _, its_ref = _cg_iterations(A, b, ml.aspreconditioner(cycle="V"))
    x, its = _cg_iterations(A, b, amg.aspreconditioner())
    assert its <= 1.25 * its_ref + 2
    exact = spsolve(sp.csc_matrix(A), b)
    assert np.linalg.norm(x - exact) <= 1e-6 * np.linalg.norm(exact)


def _pattern(C):
    C = sp.csr_matrix(C)
    C = (C - sp.diags(C.diagonal())).tocsr()
    C.eliminate_zeros()
    return ((C + C.T) > 0).astype(np.float64)


def test_evolution_strength_is_pyamgs():
    from skiff.kernels.solve.amg_strength import evolution_strength

    A, _ = _rotated(refine=5)
    n = A.shape[0]
    S = evolution_strength(A)
    C = pyamg.strength.evolution_strength_of_connection(A, B=np.ones((n, 1)), epsilon=4.0, k=2)
    assert S.nnz < 0.75 * (A.nnz - n)            # it drops connections (theta 0 keeps all)
    assert abs(S - _pattern(C)).nnz == 0
    # a non-constant candidate; the spectral-radius estimates differ (power vs Lanczos)
    B = np.random.default_rng(0).uniform(0.5, 2.0, (n, 1))
    C = pyamg.strength.evolution_strength_of_connection(A, B=B, epsilon=4.0, k=2)
    assert abs(evolution_strength(A, B) - _pattern(C)).nnz <= 0.03 * S.nnz
    # k=4 (the general path) against pyamg's k=4 (its k=3 raises)
    C = pyamg.strength.evolution_strength_of_connection(A, B=np.ones((n, 1)), epsilon=4.0, k=4)
    assert abs(evolution_strength(A, k=4) - _pattern(C)).nnz <= 0.03 * S.nnz


def test_rotated_anisotropy_auto_strength_like_pyamg_evolution():
    A, b = _rotated(refine=6)
    evo = pyamg.smoothed_aggregation_solver(A, strength=("evolution", {"k": 2, "epsilon": 4.0}),
                                            max_coarse=400)
    plain = pyamg.smoothed_aggregation_solver(A, max_coarse=400)    # symmetric, theta 0
    amg = SmoothedAggregation(A)                                    # strength='auto'
    assert amg.strength == "evolution"
    assert amg.operator_complexity <= min(1.1 * evo.operator_complexity(), 2.0)
    _, its_evo = _cg_iterations(A, b, evo.aspreconditioner(cycle="V"))
    _, its_plain = _cg_iterations(A, b, plain.aspreconditioner(cycle="V"))
    x, its = _cg_iterations(A, b, amg.aspreconditioner())
    assert its <= 1.2 * its_evo + 2 and its < 0.75 * its_plain
    exact = spsolve(sp.csc_matrix(A), b)
    assert np.linalg.norm(x - exact) <= 1e-6 * np.linalg.norm(exact)


def test_auto_keeps_symmetric_strength_for_rigid_body_modes():
    A, B = pyamg.gallery.linear_elasticity((12, 12), format="csr")
    amg = SmoothedAggregation(A, B=B)
    assert amg.strength == "symmetric"
    ml = pyamg.smoothed_aggregation_solver(A, B=B, max_coarse=400)
    assert amg.nlevels == len(ml.levels) and amg.coarse_n == ml.levels[-1].A.shape[0]
    evo = SmoothedAggregation(A, B=B, strength="evolution", max_coarse=50)   # r27
    assert evo.strength == "evolution" and evo.nlevels >= 2
    with pytest.raises(ValueError, match="use one of"):
        SmoothedAggregation(A, strength="classical")


def test_evolution_on_nonsymmetric_convection_diffusion():
    # GMRES + the non-symmetric hierarchy: same solution as spsolve, no more iterations than
    # pyamg's evolution hierarchy used the same way (SciPy's gmres for both)
    from scipy.sparse.linalg import gmres

    ib = skfem.Basis(skfem.MeshTri.init_sqsymmetric().refined(5), skfem.ElementTriP1())
    A = skfem.BilinearForm(lambda u, v, w: 1e-2 * (u.grad[0] * v.grad[0] + u.grad[1] * v.grad[1])
                           + (u.grad[0] + 0.5 * u.grad[1]) * v).assemble(ib)
    b = skfem.LinearForm(lambda v, w: v).assemble(ib)
    keep = ib.complement_dofs(ib.get_dofs())
    A, b = A[keep][:, keep].tocsr(), b[keep]
    amg = SmoothedAggregation(A)
    assert not amg.symmetric and amg.strength == "evolution"
    ml = pyamg.smoothed_aggregation_solver(A, symmetry="nonsymmetric",
                                           strength=("evolution", {"k": 2, "epsilon": 4.0}),
                                           max_coarse=400)

    def run(M):
        count = [0]
        x, _ = gmres(A, b, rtol=1e-8, restart=30, maxiter=100, M=M,
                     callback=lambda _: count.__setitem__(0, count[0] + 1),
                     callback_type="pr_norm")
        return x, count[0]

    x, its = run(amg.aspreconditioner())
    _, its_ref = run(ml.aspreconditioner(cycle="V"))
    assert its <= 1.25 * its_ref + 2
    exact = spsolve(sp.csc_matrix(A), b)
    assert np.linalg.norm(x - exact) <= 1e-6 * np.linalg.norm(exact)


def test_mass_dominated_matrix_still_coarsens():
    # M + dt K with a tiny dt: evolution finds nothing strong (M's positive off-diagonals);
    # the hierarchy falls back to symmetric strength instead of an LU of the whole matrix
    from skfem.models.poisson import laplace, mass

    ib = skfem.Basis(skfem.MeshTri.init_sqsymmetric().refined(6), skfem.ElementTriP1())
    A = (mass.assemble(ib) + 1e-7 * laplace.assemble(ib)).tocsr()
    b = np.ones(A.shape[0])
    amg = SmoothedAggregation(A)
    ml = pyamg.smoothed_aggregation_solver(A, max_coarse=400)
    assert amg.nlevels >= 2 and amg.coarse_inv is not None and amg.coarse_lu is None
    assert amg.operator_complexity <= 1.5 * ml.operator_complexity()
    x, its = _cg_iterations(A, b, amg.aspreconditioner())
    _, its_ref = _cg_iterations(A, b, ml.aspreconditioner(cycle="V"))
    assert its <= 1.5 * its_ref + 2
    exact = spsolve(sp.csc_matrix(A), b)
    assert np.linalg.norm(x - exact) <= 1e-6 * np.linalg.norm(exact)


def test_python_kernel_matches_the_generic_measure():
    # the numba kernel's pure-Python source (used without numba) against the scipy path
    from skiff.kernels.solve import amg_strength as m

    A, _ = _rotated(refine=3)
    n = A.shape[0]
    d = A.diagonal()
    w = 1.0 / m.rho_dinv_a(A, 1.0 / d)
    Z = (sp.identity(n, format="csr") - w * (A @ sp.diags(1.0 / d))).tocsr()
    Zt = (sp.identity(n, format="csr") - w * (sp.diags(1.0 / d) @ A)).tocsr()
    pat = A.copy()
    pat.eliminate_zeros()
    pat.sort_indices()
    Z.sort_indices()
    Zt.sort_indices()
    B = np.random.default_rng(3).uniform(0.5, 2.0, n)
    fast = m._evolution_k2_py(Z.indptr, Z.indices, Z.data, Zt.indptr, Zt.indices, Zt.data,
                              pat.indptr, pat.indices, B, 4.0)
    slow = m._evolution_any(Z, 2, pat, B, 4.0)
    assert fast.any() and not fast.all()
    np.testing.assert_array_equal(fast, slow)
