"""Round 44 (h4): a jumping coefficient over many ranks. Each rank's block AMG decided its
strength of connection on its own rows: a coefficient of 1e4 on 30 % of the cells spans a
diagonal of 3..4e4, at the edge of the high-contrast test (a spread over 1e4), so a block
holding neither a domain corner / edge's low cell nor a high cell with four high neighbours
took evolution strength and aggregated its high cells with low ones (160^2 over 24 thread
ranks: CG 38 iterations, one rank 6). The whole matrix's answer now goes to every block and
to the AMG of the coarse level across the ranks (whose smoothed diagonal shows no bands:
over 32 ranks 35 -> 12 iterations). And a pure Neumann matrix (rows summing to zero) over
the ranks: the coarse level refused its singular A_c ('give coarse=none'), and an
incompatible b ran CG to maxiter (|r|/|b| 6.6e4) without a word. Thread ranks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.amg import SmoothedAggregation
from skiff.kernels.solve.parallel.rows import RowSolver

from .test_coarse_cut_r43h7 import _jump
from .thread_ranks import on_threads


def test_every_block_takes_the_whole_matrix_contrast_and_cg_keeps_its_iterations():
    """60^2, seed 3, 8 ranks: the row split on one rank 5 CG iterations (skiff.solve 8);
    blocks deciding alone (one of them evolution strength) 21, now 14; x = spsolve's."""
    A = _jump(60, seed=3)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    x = spla.spsolve(A.tocsc(), b)
    whole = SmoothedAggregation(A)
    assert whole.contrast   # the one-rank AMG sees the contrast on the whole matrix

    def job(comm):
        s = RowSolver(A, method="cg", precond="amg", comm=comm, coarse="amg")
        r = s.iterate(b, rtol=1e-8, maxiter=200)
        q = s.coarse_level
        return (r.iterations, s.gather(r.x), s.block_amg.contrast,
                None if q.amg is None else q.amg.contrast)

    one = on_threads(1, job)[0][0]
    got = on_threads(8, job)
    assert [g[2] for g in got] == [True] * 8   # every block: the whole matrix's answer
    assert [g[3] for g in got] == [True] * 8   # 993 coarse unknowns: an AMG, the contrast
    its = got[0][0]
    assert one <= 8 and its <= 16, (its, one)
    assert np.abs(got[0][1] - x).max() <= 1e-6 * np.abs(x).max()


def _neumann(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    T[0, 0] = T[-1, -1] = 1.0
    return sp.csr_matrix(sp.kronsum(T.tocsr(), T.tocsr()))


def test_a_neumann_matrix_over_two_ranks_with_the_coarse_level_is_solved():
    """20^2 pure Neumann, b of mean 0, block AMG + an AMG coarse level over 2 ranks: HEAD
    raised 'the coarse problem across the ranks ... is singular'; now CG converges and x is
    the least-squares solution up to a constant."""
    A = _neumann(20)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    b -= b.mean()
    ref = np.linalg.lstsq(A.toarray(), b, rcond=None)[0]

    def job(comm):
        s = RowSolver(A, method="cg", precond="amg", comm=comm, coarse="amg")
        r = s.iterate(b, rtol=1e-10, maxiter=100)
        return r.converged, r.iterations, s.coarse, s.gather(r.x)

    ok, its, coarse, x = on_threads(2, job)[0]
    assert ok and coarse != "none" and its <= 20, (ok, its, coarse)
    d = (x - x.mean()) - (ref - ref.mean())
    assert np.abs(d).max() <= 1e-6 * np.abs(ref).max()


def test_an_incompatible_b_over_the_ranks_is_refused_in_one_line_or_projected(tmp_path):
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.solve.parallel.rows_job import rows_system

    A = _neumann(12)
    sio.mmwrite(str(tmp_path / "n.mtx"), A)
    b = np.random.default_rng(1).standard_normal(A.shape[0]) + 0.5
    np.save(tmp_path / "b.npy", b)
    cfg = {"problem": str(tmp_path / "n.mtx"), "b": str(tmp_path / "b.npy"),
           "method": "cg", "precond": "amg"}
    out = on_threads(2, lambda c: rows_system(cfg, NullReporter(), comm=c), outcomes=True)
    for exc in out:   # every rank, the one-rank solve's words (HEAD: CG ran to maxiter)
        assert isinstance(exc, ValueError) and "b is not compatible" in str(exc), exc
        assert "compatibility='project'" in str(exc)

    def projected(c):
        solver, rhs, exact = rows_system(dict(cfg, compatibility="project"),
                                         NullReporter(), comm=c)
        return rhs

    rhs = on_threads(2, projected)[0]
    np.testing.assert_allclose(rhs, b - b.mean(), atol=1e-12)
    with pytest.raises(AssertionError):   # the projection changed b
        np.testing.assert_allclose(rhs, b)
