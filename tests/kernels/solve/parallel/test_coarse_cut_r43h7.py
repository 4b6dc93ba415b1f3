"""Round 43 (h7): the AMG coarse level across the ranks with a jumping coefficient, and a
weighted symmetric form of CG's overlap. Thread ranks.

* A coefficient of 1e4 on 30 % of the cells at random: a high-coefficient island cut by the
  rank boundary leaves rows whose strong neighbours are all across it; the rank's block
  aggregated none of them, so no coarse function held them (CG with ``coarse='amg'`` 31
  iterations over 2 ranks on 80^2 where one rank takes 5-7). They are now aggregates of
  their own (``coarse._cut_rows``).
* ``schwarz='weighted'``: ``sum_i R_i^T D_i A_i^-1 D_i R_i``, ``D_i`` one over the square
  root of the number of blocks holding each unknown (basic additive Schwarz corrects the
  overlap's rows once per block)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.rows import RowSolver

from .thread_ranks import on_threads


def _jump(n, seed=1, frac=0.3, high=1e4):
    """Cell-centred finite volumes, coefficient ``high`` on ``frac`` of the cells at random
    (harmonic means on the faces), plus a unit reaction term."""
    k = np.where(np.random.default_rng(seed).random((n, n)) < frac, high, 1.0)
    idx = np.arange(n * n).reshape(n, n)
    rows, cols, vals = [], [], []
    diag = np.ones(n * n)
    for a, c, ka, kc in ((idx[:-1], idx[1:], k[:-1], k[1:]),
                         (idx[:, :-1], idx[:, 1:], k[:, :-1], k[:, 1:])):
        w = (2.0 / (1.0 / ka + 1.0 / kc)).ravel()
        rows += [a.ravel(), c.ravel()]
        cols += [c.ravel(), a.ravel()]
        vals += [-w, -w]
        np.add.at(diag, a.ravel(), w)
        np.add.at(diag, c.ravel(), w)
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n * n, n * n)) + sp.diags(diag)
    return sp.csr_matrix(A)


def test_a_jumping_coefficient_over_two_ranks_takes_one_ranks_iterations():
    """40^2, seed 1: one rank's AMG (skiff's, and the row split on one rank) 7 CG
    iterations; over 2 ranks with the AMG coarse level 14 before (HEAD), 8 now."""
    A = _jump(40)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    x = spla.spsolve(A.tocsc(), b)

    def job(comm):
        s = RowSolver(A, method="cg", precond="amg", comm=comm, coarse="amg")
        r = s.iterate(b, rtol=1e-8, maxiter=200)
        return r.iterations, s.gather(r.x)

    one = on_threads(1, job)[0][0]
    its, got = on_threads(2, job)[0]
    assert its <= one + 2, (its, one)
    assert np.abs(got - x).max() <= 1e-6 * np.abs(x).max()


@pytest.fixture(scope="module")
def poisson():
    n = 30
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    A = sp.csr_matrix(sp.kronsum(T, T))
    return A, np.random.default_rng(2).standard_normal(n * n)


def test_weighted_schwarz_is_the_symmetric_weighted_sum_of_the_block_solves():
    """The preconditioner formed column by column over 3 ranks equals ``sum_i R_i^T D_i
    B_i D_i R_i`` (``B_i`` each rank's grown-block solve, formed the same way; ``D_i`` from
    the blocks' index sets), is symmetric and positive definite."""
    n = 8
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    A = sp.csr_matrix(sp.kronsum(T, T)) + sp.diags(np.linspace(0.1, 1.0, n * n))
    N = A.shape[0]

    def job(comm):
        s = RowSolver(A, method="cg", precond="ilu", comm=comm, overlap=1, coarse="none",
                      schwarz="weighted")
        lo, hi = s.plan.lo, s.plan.hi
        cols = np.stack([s.M(np.eye(N)[j, lo:hi]) for j in range(N)], axis=1)
        _, block, solve = s._schwarz(A, "ilu")   # the same grown block, set up again
        ghosts = np.concatenate(s.plan.ghosts)
        idx = np.concatenate([np.arange(lo, hi), ghosts])
        Bi = np.stack([solve(e) for e in np.eye(idx.size)], axis=1)
        return cols, idx, Bi

    out = on_threads(3, job)
    M = np.vstack([o[0] for o in out])
    mult = np.zeros(N)
    for _, idx, _ in out:
        mult[idx] += 1
    want = np.zeros((N, N))
    for _, idx, Bi in out:
        d = 1.0 / np.sqrt(mult[idx])
        want[np.ix_(idx, idx)] += d[:, None] * Bi * d[None, :]
    assert mult.max() == 2
    np.testing.assert_allclose(M, want, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(M, M.T, atol=1e-12 * np.abs(M).max())
    assert np.linalg.eigvalsh((M + M.T) / 2).min() > 0


def test_weighted_schwarz_takes_fewer_cg_iterations_than_basic(poisson):
    A, b = poisson
    x = spla.spsolve(A.tocsc(), b)

    def run(form):
        def job(comm):
            s = RowSolver(A, method="cg", precond="ilu", comm=comm, overlap=1, coarse="none",
                          schwarz=form)
            r = s.iterate(b, rtol=1e-8, maxiter=500)
            return r.iterations, s.gather(r.x)
        return on_threads(2, job)[0]

    basic, weighted = run("basic"), run("weighted")
    assert run("auto")[0] == basic[0]
    assert weighted[0] < basic[0], (weighted[0], basic[0])
    assert np.abs(weighted[1] - x).max() <= 1e-6 * np.abs(x).max()


def test_restricted_schwarz_is_refused_for_cg(poisson):
    A, _ = poisson
    with pytest.raises(ValueError, match="schwarz='restrict'.*BiCGStab / GMRES"):
        RowSolver(A, method="cg", precond="ilu", overlap=1, schwarz="restrict")
    with pytest.raises(ValueError, match="schwarz='ras'"):
        RowSolver(A, method="bicgstab", precond="ilu", overlap=1, schwarz="ras")


def test_auto_takes_the_amg_coarse_level_up_to_32_ranks():
    """Past 16 ranks auto took the ranks' coarsest grids gathered, a dense LU of them on
    every rank: 24 thread ranks of a 120^2 Poisson were killed for their memory, where the
    AMG coarse level took 8 / 9 CG iterations on 24 / 32 ranks of a 160^2 one (doc's
    ``many32.py``). The choice itself here (the 9-rank solve: test_overlap_amg_r42h14)."""
    from skiff.kernels.solve.parallel.rows import auto_coarse

    assert [auto_coarse("amg", k) for k in (2, 17, 24, 32)] == ["amg"] * 4
    assert auto_coarse("amg", 33) == "aggregates" and auto_coarse("ilu", 24) == "none"
