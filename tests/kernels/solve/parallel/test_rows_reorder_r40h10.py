"""Round 40 (h10): reverse Cuthill-McKee before the row split (``parallel/reorder.py``).
Rows in a random order (a graph's nodes, a shuffled mesh) made poor blocks: each rank's
block Jacobi (ILU(0) / AMG) saw scattered, barely coupled rows (2 ranks, shuffled 100^2
Poisson: block AMG 244 CG iterations, 53 after RCM). Oracles: SciPy's
``reverse_cuthill_mckee`` for the bandwidth (the permutations need not be equal), SciPy's
``spsolve`` for x (in the user's order), the same solve without the reordering for the
iterations. Ranks are threads (``thread_ranks.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import reverse_cuthill_mckee

from skiff.kernels.solve.parallel.reorder import bandwidth, choose_reorder, rcm
from skiff.kernels.solve.parallel.rows import RowSolver, row_solve

from .thread_ranks import on_threads, shuffled_laplacian

pytest.importorskip("mpi4py")


def _graph_laplacian(n=1500, seed=3, shift=1e-2):
    """A random geometric graph's Laplacian (+ shift I: SPD, isolated nodes included), its
    nodes in the generator's (random) order."""
    rng = np.random.default_rng(seed)
    pts = rng.random((n, 2))
    d = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1))
    i, j = np.nonzero(np.triu(d < np.sqrt(8 / (np.pi * n)), 1))
    W = sp.coo_matrix((np.ones(i.size), (i, j)), shape=(n, n))
    W = (W + W.T).tocsr()
    return (sp.diags(np.asarray(W.sum(1)).ravel() + shift) - W).tocsr()


@pytest.mark.parametrize("which", ["poisson", "graph"])
def test_rcm_bandwidth_is_scipys(which):
    A = shuffled_laplacian(30) if which == "poisson" else _graph_laplacian()
    p = rcm(A)
    assert np.array_equal(np.sort(p), np.arange(A.shape[0]))
    ref = bandwidth(A, reverse_cuthill_mckee(A.tocsr(), symmetric_mode=True))
    got = bandwidth(A, p)
    assert got <= 1.5 * ref, (got, ref)
    assert got * 5 <= bandwidth(A), (got, bandwidth(A))
    Q = A[p][:, p].tocoo()   # bandwidth() is max |i - j| of the permuted matrix
    assert got == int(np.max(np.abs(Q.row - Q.col)))


def test_auto_takes_rcm_only_where_it_halves_the_bandwidth():
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(20, 20))
    grid = sp.kronsum(T, T).tocsr()   # a grid's natural order: left as it is
    assert choose_reorder(grid, "auto") is None
    assert choose_reorder(shuffled_laplacian(20), "auto") is not None
    assert choose_reorder(grid, "rcm") is not None and choose_reorder(grid, "none") is None
    with pytest.raises(ValueError, match="reorder='amd'.*'rcm'"):
        choose_reorder(grid, "amd")


@pytest.mark.parametrize("which,precond", [("poisson", "amg"), ("graph", "ilu"),
                                           ("graph", "amg")])
def test_rcm_before_the_split_cuts_block_iterations_and_x_is_in_the_users_order(which,
                                                                                  precond):
    A = shuffled_laplacian(36) if which == "poisson" else _graph_laplacian()
    b = np.random.default_rng(5).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    its = {}
    for reorder in ("none", "rcm"):
        # the blocks alone (round 42's default coarse level across the ranks, an AMG of
        # their first levels, leaves the shuffled graph 18 iterations to RCM's 11)
        out = on_threads(2, lambda comm, ro=reorder: RowSolver(
            A, method="cg", precond=precond, comm=comm, reorder=ro, coarse="none").iterate(
                b, rtol=1e-9))
        its[reorder] = out[0].iterations
    assert its["rcm"] * 2 <= its["none"], its
    out = on_threads(2, lambda comm: row_solve(A, b, precond=precond, rtol=1e-10, comm=comm,
                                               reorder="rcm"))
    for x, info in out:
        assert info == 0 and np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_the_job_orders_by_rcm_and_a_cancel_keeps_x_in_the_files_order():
    """The job's default reorder is 'auto'; a cancel's kept x and its residual are in the
    file's order (the rank's rows of b were read in the file's order before the fix)."""
    from skiff.kernels.backend.report import JobCancelled
    from skiff.kernels.solve.parallel.rows_job import RowJobSolver

    from .test_rows_job_r39h11 import _Reporter

    A = shuffled_laplacian(20)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    sols = on_threads(2, lambda comm: RowJobSolver(A, precond="ilu", comm=comm).solve(
        b, rtol=1e-10))
    assert "rcm-ordered" in sols[0].info["solver"] and sols[1] is None
    assert np.linalg.norm(b - A @ sols[0].field.ravel()) <= 1e-9 * np.linalg.norm(b)
    reps = [_Reporter(0, stop_at=4), _Reporter(1)]
    out = on_threads(2, lambda comm: _raised(lambda: RowJobSolver(
        A, precond="amg", comm=comm).solve(b, rtol=1e-12, reporter=reps[comm.Get_rank()])))
    assert all(isinstance(e, JobCancelled) for e in out), out
    x = out[0].arrays["x"]
    true = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    assert abs(out[0].partial["residual"] - true) <= 1e-10 and 1e-8 < true < 1


def _raised(fn):
    try:
        return fn()
    except Exception as exc:   # noqa: BLE001 (the cancel is what the test looks at)
        return exc
