"""A researcher's own finite-element matrices (scikit-fem) through skiff's AMG, against pyamg's
smoothed aggregation (run as its users run it: ``ml.solve(b, accel='cg')``) and SciPy's
``spsolve``: high-contrast coefficients, elasticity with the rigid-body modes, and a Stokes
saddle point with a block preconditioner the user writes from skiff's AMG."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

skfem = pytest.importorskip("skfem")
pyamg = pytest.importorskip("pyamg")

from skfem import Basis, BilinearForm, ElementTriP1, LinearForm, MeshTri  # noqa: E402
from skfem.helpers import dot, grad  # noqa: E402
from skfem.models.poisson import unit_load  # noqa: E402

import skiff  # noqa: E402
from skiff.kernels.solve.amg import SmoothedAggregation, _fit_candidates  # noqa: E402
from skiff.kernels.solve.amg_modes import rigid_body_modes  # noqa: E402


def _pyamg_iterations(A, b, B=None):
    ml = pyamg.smoothed_aggregation_solver(A, B=B)
    res = []
    ml.solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=1000)
    return len(res) - 1


def _checkerboard(refs):
    """P1 diffusion, an 8x8 checkerboard of log-uniform coefficients 1e-6..1e6, Dirichlet."""
    m = MeshTri.init_sqsymmetric().refined(refs)
    ib = Basis(m, ElementTriP1())
    c = m.p[:, m.t].mean(axis=1)
    cell = np.clip((np.floor(c[0] * 8) + 8 * np.floor(c[1] * 8)).astype(int), 0, 63)
    kappa = 10 ** np.random.default_rng(0).uniform(-6, 6, 64)[cell]
    kf = Basis(m, skfem.ElementTriP0()).interpolate(kappa)

    @BilinearForm
    def a(u, v, w):
        return w.k * dot(grad(u), grad(v))

    A, b = a.assemble(ib, k=kf), unit_load.assemble(ib)
    inner = ib.complement_dofs(ib.get_dofs())
    return A[inner][:, inner].tocsr(), b[inner]


def test_fit_candidates_is_a_qr_per_aggregate():
    """T has orthonormal columns, T @ Bc reproduces B, and |R| is numpy's QR factor on every
    aggregate (a rank-deficient aggregate drops the dependent column)."""
    rng = np.random.default_rng(3)
    n, count = 300, 40
    agg = rng.integers(0, count, n)
    B = rng.standard_normal((n, 3))
    B[agg == 5, 2] = 2.0 * B[agg == 5, 0]                  # dependent on aggregate 5
    T, Bc = _fit_candidates(agg, count, B)
    rank = sum(np.linalg.matrix_rank(B[agg == a]) for a in range(count))
    assert T.shape == (n, rank) and Bc.shape == (rank, 3) and rank < 3 * count
    np.testing.assert_allclose((T.T @ T).toarray(), np.eye(T.shape[1]), atol=1e-12)
    np.testing.assert_allclose(T @ Bc, B, atol=1e-12)
    _, r = np.linalg.qr(B[agg == 7])
    cols = np.unique(T[np.flatnonzero(agg == 7)].nonzero()[1])
    np.testing.assert_allclose(np.abs(Bc[cols]), np.abs(r), atol=1e-12)


def test_high_contrast_checkerboard_within_pyamg_iterations():
    """Coefficients 1e-6..1e6: the constant improved by Gauss-Seidel (pyamg's default
    improve_candidates) takes CG+AMG to 36 iterations at 16 129 unknowns (50 with the plain
    constant); pyamg takes 43. The answer is spsolve's."""
    A, b = _checkerboard(6)
    ref = spla.spsolve(A.tocsc(), b)
    sol = skiff.solve(A, b, method="cg", precond="amg", rtol=1e-8, maxiter=500)
    assert sol.iterations <= _pyamg_iterations(A, b)
    x = np.asarray(sol.x).ravel()
    assert np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_improve_zero_keeps_the_constant_hierarchy():
    """improve=0 builds the plain piecewise-constant tentative prolongator (same coarse
    matrix as B = ones without improvement: the fit of a constant is the normalised
    indicator)."""
    A, _ = _checkerboard(4)
    plain = SmoothedAggregation(A, improve=0, max_coarse=50)
    fitted = SmoothedAggregation(A, improve=0, max_coarse=50, B=np.ones(A.shape[0]))
    Ac1, Ac2 = plain.levels[1][0].toarray(), fitted.levels[1][0].toarray()
    np.testing.assert_allclose(np.abs(Ac1), np.abs(Ac2), rtol=1e-10, atol=1e-12 * np.abs(Ac1).max())


def _elasticity(nx):
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    m = MeshTri.init_tensor(np.linspace(0, 4, 4 * nx + 1), np.linspace(0, 1, nx + 1))
    ib = Basis(m, skfem.ElementVector(ElementTriP1()))
    K = linear_elasticity(*lame_parameters(1e3, 0.3)).assemble(ib)

    @LinearForm
    def load(v, w):
        return -v[1]

    f = load.assemble(ib)
    inner = ib.complement_dofs(ib.get_dofs(lambda x: x[0] == 0.0))
    B = rigid_body_modes(ib.doflocs.T)[inner]
    return K[inner][:, inner].tocsr(), f[inner], B


def test_rigid_body_modes_are_the_null_space_of_free_elasticity():
    """The modes are what an unconstrained stiffness matrix maps to zero (K B = 0)."""
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    for mesh, elem in ((MeshTri().refined(2), ElementTriP1()),
                       (skfem.MeshTet().refined(1), skfem.ElementTetP1())):
        ib = Basis(mesh, skfem.ElementVector(elem))
        K = linear_elasticity(*lame_parameters(1.0, 0.3)).assemble(ib)
        B = rigid_body_modes(ib.doflocs.T)
        assert B.shape[1] == (3 if mesh.dim() == 2 else 6)
        assert np.abs(K @ B).max() <= 1e-10 * abs(K).max()
        assert np.linalg.matrix_rank(B) == B.shape[1]


def test_elasticity_with_rigid_body_modes_near_pyamg():
    """2D elasticity: with the rigid-body modes CG+AMG is within 1.3x pyamg's iterations (same
    B) and several times faster than with the constant; the answer is spsolve's."""
    K, f, B = _elasticity(16)
    ref = spla.spsolve(K.tocsc(), f)
    with_modes = skiff.solve(K, f, method="cg", precond="amg", near_nullspace=B, rtol=1e-8)
    plain = skiff.solve(K, f, method="cg", precond="amg", rtol=1e-8, maxiter=2000)
    assert with_modes.iterations <= 1.3 * _pyamg_iterations(K, f, B)
    assert 2 * with_modes.iterations < plain.iterations
    x = np.asarray(with_modes.x).ravel()
    assert np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_rigid_body_modes_refuses_bad_shapes():
    with pytest.raises(ValueError, match="doflocs.T"):
        rigid_body_modes(np.zeros((2, 10)))
    with pytest.raises(ValueError, match="components"):
        rigid_body_modes(np.zeros((7, 2)))


def test_stokes_with_a_block_preconditioner_of_skiffs_amg():
    """Taylor-Hood channel flow (inflow, walls, free outflow): GMRES with the user's block
    preconditioner diag(AMG V-cycle of the velocity Laplacian, pressure mass diagonal^-1)
    reaches spsolve's solution in about as many iterations as SciPy's gmres with the same M
    (unpreconditioned, neither converges in 20 000)."""
    from skfem import ElementTriP2, ElementVector
    from skfem.models.general import divergence
    from skfem.models.poisson import mass, vector_laplace

    m = MeshTri.init_tensor(np.linspace(0, 2, 25), np.linspace(0, 1, 13))
    ub = Basis(m, ElementVector(ElementTriP2()), intorder=4)
    pb = Basis(m, ElementTriP1(), intorder=4)
    Au = vector_laplace.assemble(ub)
    Bd = -divergence.assemble(ub, pb)
    S = sp.bmat([[Au, Bd.T], [Bd, None]]).tocsr()
    nu = Au.shape[0]
    fixed = ub.get_dofs(lambda x: (x[0] == 0) | (x[1] == 0) | (x[1] == 1)).all()
    g = np.zeros(S.shape[0])
    inflow = ub.get_dofs(lambda x: x[0] == 0).nodal["u^1"]
    g[inflow] = ub.doflocs[1, inflow] * (1 - ub.doflocs[1, inflow])
    keep = np.setdiff1d(np.arange(S.shape[0]), fixed)
    A = S[keep][:, keep].tocsr()
    b = -(S @ g)[keep]
    ku = keep[keep < nu]
    amg = SmoothedAggregation(Au[ku][:, ku].tocsr())
    vcycle = amg.aspreconditioner()
    mp = 1.0 / mass.assemble(pb).diagonal()
    nk = len(ku)

    def block(r):
        return np.concatenate([vcycle @ r[:nk], mp * r[nk:]])

    M = spla.LinearOperator(A.shape, matvec=block)
    ref = spla.spsolve(A.tocsc(), b)
    sol = skiff.solve(A, b, method="gmres", precond=M, rtol=1e-10, maxiter=100)
    inner = []
    spla.gmres(A, b, M=M, rtol=1e-10, restart=30, maxiter=100, callback_type="pr_norm",
               callback=inner.append)
    assert sol.converged
    x = np.asarray(sol.x).ravel()
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
    assert sol.iterations <= 1.5 * len(inner)


def test_p2_poisson_unstructured_within_pyamg_iterations():
    """P2 Poisson on scikit-fem's unstructured disc mesh (32 513 unknowns): CG+AMG takes no
    more iterations than pyamg SA (30 vs 31; 36 with the Chebyshev interval [0.3 lmax, lmax]
    of before); the answer is spsolve's."""
    from skfem.models.poisson import laplace

    ib = Basis(MeshTri.init_circle(6), skfem.ElementTriP2())
    A, b = laplace.assemble(ib), unit_load.assemble(ib)
    inner = ib.complement_dofs(ib.get_dofs())
    A, b = A[inner][:, inner].tocsr(), b[inner]
    sol = skiff.solve(A, b, method="cg", precond="amg", rtol=1e-8)
    assert sol.iterations <= _pyamg_iterations(A, b)
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(np.asarray(sol.x).ravel() - ref) <= 1e-6 * np.linalg.norm(ref)


@pytest.mark.parametrize("upwind", [False, True])
def test_cycle_from_zero_is_the_full_cycle_and_preconditions_scipy(upwind):
    """The preconditioner's cycle starts from 0 and skips the pre-smoother's first product
    with A: its output equals the full cycle's, and as SciPy's ``M`` (aspreconditioner) it
    takes SciPy's GMRES to spsolve's answer in a few iterations."""
    from skfem.models.poisson import laplace

    ib = Basis(MeshTri.init_circle(5), ElementTriP1())
    inner = ib.complement_dofs(ib.get_dofs())
    A = laplace.assemble(ib)[inner][:, inner].tocsr()
    b = unit_load.assemble(ib)[inner]
    if upwind:   # a convection term: the non-symmetric setup and smoother
        A = (A + 0.2 * abs(A).max() * sp.diags([-1.0, 1.0], [-1, 0], shape=A.shape)).tocsr()
    amg = SmoothedAggregation(A, max_coarse=50)
    assert amg.symmetric is not upwind and amg.nlevels >= 3
    M = amg.aspreconditioner()
    full = amg.vcycle(0, np.zeros(A.shape[0]), b)
    np.testing.assert_allclose(M @ b, full, rtol=1e-12, atol=1e-14 * np.abs(full).max())
    inner = []
    x, info = spla.gmres(A, b, M=M, rtol=1e-10, restart=50, maxiter=5,
                         callback_type="pr_norm", callback=inner.append)
    ref = spla.spsolve(A.tocsc(), b)
    assert info == 0 and len(inner) < 40
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)


@pytest.mark.parametrize("block", [1, 2])
def test_stalled_coarsening_gets_a_sparse_coarse_solve(block):
    """A (block-)diagonal matrix coarsens no further than its blocks: the coarsest level of
    20 000 unknowns was inverted densely (20 s at 4000, 3.2 GB at 20 000); now a sparse LU,
    and CG+AMG gives spsolve's answer."""
    n = 20000
    rng = np.random.default_rng(5)
    if block == 1:
        A = sp.diags(rng.uniform(1.0, 10.0, n)).tocsr()
    else:
        pair = np.array([[2.0, -1.0], [-1.0, 2.0]])
        A = sp.block_diag([pair * s for s in rng.uniform(1.0, 10.0, n // 2)]).tocsr()
    amg = SmoothedAggregation(A)
    assert amg.coarse_n > 1000 and amg.coarse_lu is not None and amg.coarse_inv is None
    b = rng.standard_normal(n)
    sol = skiff.solve(A, b, method="cg", precond="amg", rtol=1e-10)
    ref = spla.spsolve(A.tocsc(), b)
    assert sol.converged
    assert np.linalg.norm(np.asarray(sol.x).ravel() - ref) <= 1e-8 * np.linalg.norm(ref)


def test_many_pure_neumann_pieces_coarsen_to_their_null_vectors():
    """10 000 separate pairs with zero row sums (graph Laplacians of disconnected pieces): each
    piece's aggregate is a null vector, so the coarse matrix has empty rows; AMG refused it as
    "zeros on its diagonal ... a saddle-point matrix". Now the empty rows end the coarsening
    and CG+AMG solves a compatible b; without the null components x is the minimum-norm
    answer, (c, -c) / (2 s) on a pair s [[1, -1], [-1, 1]] with b = (c, -c)."""
    rng = np.random.default_rng(5)
    scale = rng.uniform(1.0, 10.0, 10000)
    A = sp.block_diag([np.array([[1.0, -1.0], [-1.0, 1.0]]) * s for s in scale]).tocsr()
    c = rng.standard_normal(10000)
    b = np.empty(20000)
    b[0::2], b[1::2] = c, -c
    sol = skiff.solve(A, b, method="cg", precond="amg", rtol=1e-10)
    x = np.asarray(sol.x).ravel()
    assert sol.converged and np.linalg.norm(b - A @ x) <= 1e-9 * np.linalg.norm(b)
    half = (x[0::2] - x[1::2]) / 2                      # the pair's (1, -1) component
    np.testing.assert_allclose(half, c / (2 * scale), rtol=1e-8)
