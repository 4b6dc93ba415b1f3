"""'auto' on a symmetric saddle point with the user's block preconditioner (round 27): MINRES
when M passes a symmetry/positivity probe (it was GMRES), SciPy's ``minres`` with the same M
the reference for the iterations (``stop='scipy'``) and ``spsolve`` for the answer; GMRES
again when M is not symmetric positive definite."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

skfem = pytest.importorskip("skfem")

from skfem import Basis, ElementTriP1, ElementTriP2, ElementVector, MeshTri  # noqa: E402
from skfem.models.general import divergence  # noqa: E402
from skfem.models.poisson import mass, vector_laplace  # noqa: E402

import skiff  # noqa: E402
from skiff.kernels.solve import SolveError  # noqa: E402
from skiff.kernels.solve.amg import SmoothedAggregation  # noqa: E402


def _channel():
    """Taylor-Hood channel flow (parabolic inflow, walls, free outflow): well posed."""
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
    ku = keep[keep < nu]
    return A, -(S @ g)[keep], Au[ku][:, ku].tocsr(), 1.0 / mass.assemble(pb).diagonal()


def _block(A, Auu, mp, sign=1.0):
    vcycle = SmoothedAggregation(Auu).aspreconditioner()
    nk = Auu.shape[0]
    return spla.LinearOperator(A.shape, matvec=lambda r: np.concatenate(
        [vcycle @ r[:nk], sign * mp * r[nk:]]))


def test_auto_takes_minres_with_a_spd_block_preconditioner():
    A, b, Auu, mp = _channel()
    M = _block(A, Auu, mp)
    ref = spla.spsolve(A.tocsc(), b)
    sol = skiff.solve(A, b, M=M, rtol=1e-10)
    assert sol.method == "minres" and sol.converged
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    count = [0]
    spla.minres(A, b, M=M, rtol=1e-8, callback=lambda xk: count.__setitem__(0, count[0] + 1))
    same = skiff.solve(A, b, M=M, rtol=1e-8, stop="scipy")
    assert same.method == "minres" and same.iterations == count[0]
    gm = skiff.solve(A, b, M=M, method="gmres", rtol=1e-10)    # what auto ran before
    assert gm.converged and sol.iterations <= gm.iterations


def test_auto_goes_back_to_gmres_when_m_is_indefinite():
    """M = diag(V-cycle, -Mp^-1) (the sign a Schur-complement approximation may carry) is
    symmetric but indefinite: the probe says so, and GMRES solves as SciPy's gmres does."""
    A, b, Auu, mp = _channel()
    M = _block(A, Auu, mp, sign=-1.0)
    sol = skiff.solve(A, b, M=M, rtol=1e-10)
    assert sol.method == "gmres" and sol.converged
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    x, info = spla.gmres(A, b, M=M, rtol=1e-10, restart=30, maxiter=200)
    assert info == 0 and np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_minres_finding_m_indefinite_goes_on_with_gmres():
    """One pressure entry of M with the wrong sign: the probe with two random vectors does
    not see it, MINRES does (r.Mr or beta^2 <= 0), and 'auto' solves with GMRES from the
    start, saying why; spsolve's answer."""
    A, b, Auu, mp = _channel()
    mp = mp.copy()
    mp[len(mp) // 2] *= -10.0
    M = _block(A, Auu, mp)
    sol = skiff.solve(A, b, M=M, rtol=1e-10)
    assert sol.method == "gmres" and "minres found your M" in sol.info["solver"]
    ref = spla.spsolve(A.tocsc(), b)
    assert sol.converged and np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    with pytest.raises(SolveError, match="not"):       # MINRES itself refuses M
        skiff.solve(A, b, M=M, method="minres", rtol=1e-10, strict=True)
