"""Round 46 (h6): ``near_nullspace=`` (pyamg's ``B``) over the ranks of a row split. The
coarse level across the ranks (``coarse='amg'``) solves ``A_c = P^T A P`` by one V-cycle of
smoothed aggregation; with the constant alone as its candidate, elasticity over many ranks
took about twice one rank's CG iterations (50^2 over 32 ranks 17 against 5). The rigid-body
modes restricted to the coarse unknowns (``T^T B``, the aggregate means) now reach A_c's
AMG: 40^2 over 24 thread ranks 13 -> 8 (pyamg's SA with ``B=`` and ``accel='cg'`` on the
whole matrix: 9). Thread ranks; pyamg's gallery elasticity and its modes."""

from __future__ import annotations

import numpy as np
import pyamg
import pytest
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.rows import RowSolver

from .thread_ranks import on_threads


def test_rigid_body_modes_reach_the_coarse_amg_over_24_ranks():
    A, B = pyamg.gallery.linear_elasticity((40, 40), format="csr")
    A = A.tocsr()
    b = np.random.default_rng(0).standard_normal(A.shape[0])

    def job(comm):
        s = RowSolver(A, method="cg", precond="amg", comm=comm, coarse="amg",
                      near_nullspace=B)
        r = s.iterate(b, rtol=1e-8, maxiter=100)
        return r.iterations, s.gather(r.x), s.coarse_level.amg.levels[0][0].shape[0]

    its, x, nc = on_threads(24, job)[0]
    assert nc > 400   # A_c's own AMG ran (not the exact solve of a small A_c)
    res = []
    pyamg.smoothed_aggregation_solver(A, B=B).solve(b, tol=1e-8, accel="cg", residuals=res)
    assert its <= len(res) - 1, (its, len(res) - 1)   # without B: 13 against pyamg's 9
    ref = spla.spsolve(A.tocsc(), b)
    assert np.abs(x - ref).max() <= 1e-6 * np.abs(ref).max()


def test_a_bad_near_nullspace_is_refused_in_one_line():
    A, B = pyamg.gallery.linear_elasticity((6, 6), format="csr")
    with pytest.raises(ValueError, match=r"near_nullspace must be a real array of shape \(72"):
        RowSolver(A, precond="amg", near_nullspace=B[:-1])
    with pytest.raises(ValueError, match="precond='amg'"):
        RowSolver(A, precond="ilu", near_nullspace=B)
