"""A singular symmetric matrix whose null space the user gives as ``near_nullspace``
(pure-Neumann elasticity: the rigid-body modes), against SciPy's minimum-norm solution.

Before round 29 only the constants were taken as a null space: a right-hand side with a net
torque passed the mean test and GMRES stagnated at |r|/|b| = 0.25 with no word of why, and
``compatibility='project'`` removed the mean only.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import rigid_body_modes

skfem = pytest.importorskip("skfem")


def _free_elasticity():
    """2-D linear elasticity on a rectangle, no support: singular, 3 rigid-body modes."""
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    m = skfem.MeshTri.init_tensor(np.linspace(0, 2, 17), np.linspace(0, 1, 9))
    ib = skfem.Basis(m, skfem.ElementVector(skfem.ElementTriP1()))
    A = linear_elasticity(*lame_parameters(1e3, 0.3)).assemble(ib).tocsr()
    return A, rigid_body_modes(ib.doflocs.T)


def _min_norm(A, b):
    """SciPy's minimum-norm least-squares solution (lsqr to its limit)."""
    return spla.lsqr(A, b, atol=1e-14, btol=1e-14, iter_lim=20000)[0]


def _parts(B, b):
    Q, _ = np.linalg.qr(B)
    return Q, b - Q @ (Q.T @ b)


def test_a_torque_is_refused_naming_project():
    A, B = _free_elasticity()
    assert np.abs(A @ B).max() < 1e-9 * abs(A).sum(axis=1).max()   # the modes are null
    Q, bc = _parts(B, np.random.default_rng(0).standard_normal(A.shape[0]))
    bad = bc + 0.1 * np.linalg.norm(bc) * Q[:, 2]          # the rotation: a net torque
    assert abs(bad.mean()) < 1e-12 * np.abs(bad).max()     # the mean test cannot see it
    with pytest.raises(ValueError, match="compatibility='project'"):
        skiff.solve(A, bad, near_nullspace=B)


@pytest.mark.parametrize("method", ["auto", "gmres"])
def test_project_gives_scipys_minimum_norm_solution(method):
    A, B = _free_elasticity()
    Q, bc = _parts(B, np.random.default_rng(1).standard_normal(A.shape[0]))
    b = bc + 0.3 * np.linalg.norm(bc) * (Q[:, 2] + Q[:, 0])   # torque and net force
    sol = skiff.solve(A, b, near_nullspace=B, compatibility="project", method=method,
                      rtol=1e-10)
    ref = _min_norm(A, b)
    assert sol.converged
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)
    assert np.abs(Q.T @ sol.x).max() <= 1e-10 * np.linalg.norm(sol.x)


def test_compatible_b_solves_to_a_solution():
    A, B = _free_elasticity()
    _, bc = _parts(B, np.random.default_rng(2).standard_normal(A.shape[0]))
    sol = skiff.solve(A, bc, near_nullspace=B, rtol=1e-10)
    ref = _min_norm(A, bc)
    assert sol.converged
    assert np.linalg.norm(bc - A @ sol.x) <= 1e-9 * np.linalg.norm(bc)
    Q, d = _parts(B, sol.x - ref)       # equal to lsqr's up to a rigid-body motion
    assert np.linalg.norm(d) <= 1e-6 * np.linalg.norm(ref)


def test_only_the_annihilated_directions_count():
    # pure-Neumann Laplacian, near_nullspace [1, x]: the ones are null, x is not
    n = 40
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    T[0, 0] = T[n - 1, n - 1] = 1
    L = (sp.kron(sp.identity(n), T) + sp.kron(T, sp.identity(n))).tocsr()
    xs = np.tile(np.arange(n, dtype=float), n)
    b = np.sin(xs) + 0.5 * xs / n          # a mean: incompatible
    with pytest.raises(ValueError, match="compatibility='project'"):
        skiff.solve(L, b, near_nullspace=np.column_stack([np.ones(n * n), xs]))
    sol = skiff.solve(L, b, near_nullspace=np.column_stack([np.ones(n * n), xs]),
                      compatibility="project", rtol=1e-10)
    ref = _min_norm(L, b)
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_supported_elasticity_is_not_taken_for_singular():
    A, B = _free_elasticity()
    n = A.shape[0]
    keep = np.arange(6, n)                 # 3 nodes held: no null space left
    As, Bs = A[keep][:, keep].tocsr(), B[keep]
    b = np.random.default_rng(3).standard_normal(As.shape[0])
    sol = skiff.solve(As, b, near_nullspace=Bs, rtol=1e-10)
    ref = spla.spsolve(As.tocsc(), b)
    assert sol.converged
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_without_the_modes_a_stall_names_them():
    # the torque b without near_nullspace: no solution (lsqr's residual stays), the
    # stall's status says why and what to give
    A, B = _free_elasticity()
    Q, bc = _parts(B, np.random.default_rng(4).standard_normal(A.shape[0]))
    bad = bc + 0.1 * np.linalg.norm(bc) * Q[:, 2]
    assert np.linalg.norm(bad - A @ _min_norm(A, bad)) > 1e-3 * np.linalg.norm(bad)
    sol = skiff.solve(A, bad)
    assert not sol.converged
    assert "near_nullspace=" in sol.status and "compatibility='project'" in sol.status
