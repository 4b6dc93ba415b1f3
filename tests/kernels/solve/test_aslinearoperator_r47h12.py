"""Round 47 (h12): ``scipy.sparse.linalg.aslinearoperator(M)`` of a matrix is M itself, so
auto takes its AMG as for M (it ran CG without a preconditioner: 411 iterations on the 64^2
rotated anisotropic matrix where M takes 20), against pyamg's SA and SciPy's spsolve."""

import numpy as np
import pyamg
import scipy.sparse.linalg as spla
from pyamg.gallery import diffusion_stencil_2d, stencil_grid

import skiff


def test_aslinearoperator_of_a_matrix_takes_the_matrix_amg_as_pyamg():
    stencil = diffusion_stencil_2d(epsilon=1e-3, theta=np.pi / 6, type="FD")
    A = stencil_grid(stencil, (24, 24), format="csr")
    b = np.cos(np.arange(A.shape[0]))
    ref = spla.spsolve(A.tocsc(), b)
    res = []
    pyamg.smoothed_aggregation_solver(A).solve(b, tol=1e-8, accel="cg", residuals=res)
    sol = skiff.solve(spla.aslinearoperator(A), b, rtol=1e-8)
    assert sol.converged and sol.precond == "amg" and sol.method == "cg"
    assert sol.iterations <= len(res) - 1     # pyamg SA's CG (its residuals: iterations + 1)
    assert np.abs(sol.x - ref).max() <= 1e-6 * np.abs(ref).max()
    # Jacobi and the direct solve need entries: a wrapped dense matrix has them too
    small = A[:64, :64].toarray()
    for kw in (dict(method="cg", precond="jacobi"), dict(method="direct")):
        got = skiff.solve(spla.aslinearoperator(small), b[:64], rtol=1e-10, **kw)
        assert np.abs(got.x - np.linalg.solve(small, b[:64])).max() <= 1e-7
    # an operator of its product alone stays matrix-free: no AMG to build
    free = spla.LinearOperator(A.shape, matvec=lambda v: A @ v, dtype=float)
    assert skiff.Solver(free).precond_name == "none"
