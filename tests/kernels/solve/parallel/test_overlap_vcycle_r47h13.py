"""Round 47 (h13): CG over the ranks with an explicit overlap (basic additive Schwarz) and a
coarse level ran the balancing form ``Q, B, Q`` and took about twice block Jacobi's
iterations (the 30-degree anisotropy 32^2 over 2 ranks, block AMG: 11 / 12 with overlap 1 /
2 against 5 without; elasticity, block ILU: 11 against 5). It now runs block Jacobi's V-cycle
with the overlap's block solve (the Chebyshev polynomial over the Lanczos estimate of ``B A``,
which sees the overlap's 2): an overlap never takes more than one iteration over none. The
oracles: SciPy's ``spsolve`` for x, and the run without the overlap for the count. Thread
ranks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel import coarse
from skiff.kernels.solve.parallel.rows import RowSolver

from .thread_ranks import on_threads


def _runs(A, overlaps, **kw):
    """CG with the AMG coarse level over 2 thread ranks for each overlap: the iterations and
    the relative error of x against ``spsolve``'s."""
    b = np.cos(np.arange(A.shape[0]))
    ref = spla.spsolve(sp.csc_matrix(A), b)

    def job(comm):
        out = []
        for ov in overlaps:
            s = RowSolver(A, method="cg", comm=comm, coarse="amg", overlap=ov, **kw)
            r = s.iterate(b, rtol=1e-8, maxiter=200)
            out.append((r.iterations, s.gather(r.x), s.overlap))
        return out

    got = on_threads(2, job)[0]
    assert [g[2] for g in got] == list(overlaps)
    return [g[0] for g in got], [np.abs(g[1] - ref).max() / np.abs(ref).max() for g in got]


def _assert_no_worse(its, errs, tol):
    assert all(e <= tol for e in errs), errs
    assert all(i <= its[0] + 1 for i in its[1:]), its   # its[0]: without the overlap


def test_anisotropy_with_block_amg_and_an_overlap():
    from pyamg.gallery import diffusion_stencil_2d, stencil_grid

    A = stencil_grid(diffusion_stencil_2d(epsilon=1e-3, theta=np.pi / 6, type="FD"), (32, 32),
                     format="csr")
    its, errs = _runs(A, (0, 1, 2), precond="amg")   # HEAD: 5, 11, 12
    _assert_no_worse(its, errs, 1e-5)


@pytest.mark.parametrize("precond", ["ilu", "amg"])
def test_elasticity_with_an_overlap(precond):
    from pyamg.gallery import linear_elasticity

    A, B = linear_elasticity((16, 16))   # 512 unknowns, 2 a node
    kw = {"near_nullspace": B} if precond == "amg" else {}   # pyamg's rigid modes
    its, errs = _runs(sp.csr_matrix(A), (0, 1), precond=precond, **kw)   # HEAD: 5, 11 / 5, 9
    _assert_no_worse(its, errs, 1e-6)


def test_a_plain_matrix_past_plain_ranks_keeps_the_chebyshev_with_an_overlap(monkeypatch):
    """A plain Poisson past ``PLAIN_RANKS`` ranks smooths with the damped B (round 45 h14);
    with an overlap that V-cycle took 14 CG iterations where block Jacobi's took 8 (64^2 over
    9 ranks): an overlap keeps the Chebyshev. ``PLAIN_RANKS`` 1 puts 2 ranks past it."""
    monkeypatch.setattr(coarse, "PLAIN_RANKS", 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(32, 32))
    A = sp.csr_matrix(sp.kronsum(T, T))
    assert coarse.smoothing_degree(A, 2, None) == 1
    its, errs = _runs(A, (0, 1), precond="amg")
    _assert_no_worse(its, errs, 1e-6)
