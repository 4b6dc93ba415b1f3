"""A SciPy / pyamg user's programs (round 38, h7): 3-D elasticity with the rigid-body modes
from node coordinates, and LOBPCG with skiff's AMG as its preconditioner (pyamg's docs show
``ml.aspreconditioner()`` there); SciPy's ``spsolve`` / ``eigsh`` and pyamg are the oracles."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve import Solver, rigid_body_modes

skfem = pytest.importorskip("skfem")
pyamg = pytest.importorskip("pyamg")


def _elasticity_3d(nodes=7):
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    m = skfem.MeshTet.init_tensor(*[np.linspace(0, 1, nodes)] * 3)
    ib = skfem.Basis(m, skfem.ElementVector(skfem.ElementTetP1()))
    K = skfem.asm(linear_elasticity(*lame_parameters(1.0, 0.3)), ib)
    f = skfem.asm(skfem.LinearForm(lambda v, w: v[2]), ib)
    keep = ib.complement_dofs(ib.get_dofs(lambda x: x[0] == 0.0).all())
    return ib, m, K[keep][:, keep].tocsr(), f[keep], keep


def test_rigid_body_modes_from_node_coordinates():
    ib, mesh, A, b, keep = _elasticity_3d()
    with pytest.raises(ValueError, match=r"np\.repeat\(nodes, 3, axis=0\)"):
        rigid_body_modes(mesh.p.T)                     # 343 node rows, not 3 a node
    B = rigid_body_modes(np.repeat(mesh.p.T, 3, axis=0))[keep]
    assert np.allclose(B, rigid_body_modes(ib.doflocs.T)[keep], rtol=0, atol=1e-12)
    sol = Solver(A, method="cg", precond="amg", near_nullspace=B).solve(b, rtol=1e-8)
    ref = spla.spsolve(A.tocsc(), b)
    assert sol.converged and np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)
    res = []
    pyamg.smoothed_aggregation_solver(A, B=B).solve(b, tol=1e-8, accel="cg", residuals=res)
    assert sol.iterations <= len(res) - 1 + 2        # pyamg's with B, within 2


def test_lobpcg_with_skiffs_amg_preconditioner():
    m = 40
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    A = (sp.kron(sp.identity(m), T) + sp.kron(T, sp.identity(m))).tocsr()
    X = np.random.default_rng(0).random((A.shape[0], 4))
    M = Solver(A, method="cg", precond="amg").aspreconditioner()
    w, _ = spla.lobpcg(A, X, M=M, tol=1e-8, largest=False, maxiter=100)
    ref = np.sort(spla.eigsh(A, k=4, sigma=0, which="LM")[0])
    assert np.allclose(np.sort(w), ref, rtol=1e-8, atol=0)


@pytest.mark.parametrize("name", ["spilu"])   # ilu, ILU0, ichol run (r40h10); ilut (r44h13)
def test_an_incomplete_lu_by_name_points_to_spilu_which_works(name):
    m, peclet = 24, 8.0
    T = sp.diags([-1 - peclet / 2, 2.0, -1 + peclet / 2], [-1, 0, 1], shape=(m, m))
    A = (sp.kron(sp.identity(m), T) + sp.kron(T, sp.identity(m))).tocsr()
    b = np.ones(A.shape[0])
    with pytest.raises(ValueError, match=r"M=scipy\.sparse\.linalg\.spilu\(A\.tocsc\(\)\)"):
        Solver(A, precond=name)
    sol = Solver(A, method="gmres", M=spla.spilu(A.tocsc())).solve(b, rtol=1e-10)
    ref = spla.spsolve(A.tocsc(), b)
    assert sol.converged and np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)
