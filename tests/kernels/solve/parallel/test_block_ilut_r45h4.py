"""Round 45 (h4): ``precond='ilut'`` over the ranks of a row split is block Jacobi with each
rank's block factored by ILUT (SciPy spilu's ``drop_tol`` / ``fill_factor``, the block in
reverse Cuthill-McKee order); before, ``--np 2 --precond ilut`` was refused. ILUT is not
symmetric: GMRES / BiCGStab take it (auto's method: GMRES), CG is refused in one line.
Thread ranks; oracles ``spsolve`` (x) and the block ILU(0) of round 40 (the count)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.rows import RowSolver
from skiff.kernels.solve.parallel.rows_job import RowJobSolver, check_row_split

from .thread_ranks import on_threads


def _upwind(m, eps=1e-3):
    h = 1.0 / (m + 1)
    T = sp.diags([-eps / h**2 - 1 / h, 2 * eps / h**2 + 1 / h, -eps / h**2], [-1, 0, 1],
                 shape=(m, m))
    return sp.kronsum(T, T).tocsr()


def _aniso(m, eps=1e-3):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return (sp.kron(sp.identity(m), T) + eps * sp.kron(T, sp.identity(m))).tocsr()


def _gmres(A, b, size, precond):
    def job(comm):
        s = RowSolver(A, method="gmres", precond=precond, comm=comm, coarse="none")
        r = s.iterate(b, rtol=1e-8, maxiter=200)
        return len(r.history) - 1, r.converged, s.gather(r.x)
    return on_threads(size, job)[0]


def test_block_ilut_over_the_ranks_is_near_an_exact_block_solve():
    """GMRES(30), rtol 1e-8, 40^2, over 2 / 4 ranks (measured: upwind block ILUT 9 / 11,
    exact block LUs (ILUT keeping all its fill) 9 / 11, block ILU(0) 10 / 11; anisotropic
    6 / 6, 5 / 6, 9 / 9; one rank's ILUT 3 and 4); x = spsolve's."""
    rng = np.random.default_rng(0)
    for A, fewer in ((_upwind(40), False), (_aniso(40), True)):
        b = rng.standard_normal(A.shape[0])
        ref = spla.spsolve(A.tocsc(), b)
        for size in (2, 4):
            its, ok, x = _gmres(A, b, size, "ilut")
            ilu = _gmres(A, b, size, "ilu")[0]
            # spilu's options reach every block: all the fill kept, each block's LU exact
            exact = _gmres(A, b, size, ("ilut", {"drop_tol": 0.0, "fill_factor": 1e4}))[0]
            assert ok and its <= exact + 1 and (its < ilu if fewer else its <= ilu), (
                size, its, exact, ilu)
            assert np.abs(x - ref).max() <= 1e-6 * np.abs(ref).max()


def test_ilut_over_the_ranks_is_refused_with_cg_and_auto_takes_gmres():
    A = _aniso(12)
    with pytest.raises(ValueError, match="CG over the ranks needs a symmetric") as err:
        RowSolver(A, method="cg", precond="ilut")
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="--precond ilut is not symmetric"):
        check_row_split("cg", "ilut", 2)
    check_row_split("gmres", "ilut", 2, overlap=1)   # taken, as ilu's
    b = np.ones(A.shape[0])

    def job(comm):
        s = RowJobSolver(A, precond="ilut", comm=comm, ilut_options={"drop_tol": 1e-6})
        sol = s.solve(b, rtol=1e-10)
        return s.method, s.describe(), s.rows.M.ilut.ilu.drop_tol, (
            None if sol is None else np.asarray(sol.x))
    out = on_threads(2, job)
    method, line, drop, x = out[0]
    assert method == "gmres" and "block ilut" in line and drop == 1e-6, (method, line)
    ref = spla.spsolve(A.tocsc(), b)
    assert np.abs(x - ref).max() <= 1e-8 * np.abs(ref).max()
