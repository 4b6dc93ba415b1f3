"""Whether 'auto' keeps a cheap preconditioner (Jacobi) for a matrix where AMG cannot pay: a
graph with no geometry (a social or small-world network's Laplacian), whose breadth-first
depth is about log2(n) where a mesh's grows as n^(1/d). There every row's neighbourhood
grows exponentially, smoothed aggregation coarsens badly and fills in (seconds of setup),
while Jacobi-CG converges in a few dozen iterations. The choice is checked on each solve:
where Jacobi-CG has not converged in ``JACOBI_BUDGET`` iterations, AMG is built and CG goes
on from that x (and keeps AMG for later solves).

Round 29 (50 000 nodes, + 1e-3 I or a grounded node): Barabasi-Albert depth 8, Jacobi-CG
33-37 iterations; Watts-Strogatz (k 8, p 0.1) depth 13, 81-94; meshes: 2-D Poisson 300^2
depth 598, 3-D 30^3 depth 87 (log2 n 14.7), so they keep AMG.
"""

from __future__ import annotations

import math

import numpy as np

JACOBI_BUDGET = 200   # Jacobi-CG iterations before AMG is built after all
MIN_UNKNOWNS = 5000   # below this AMG's setup costs little: the usual choice stays


def bfs_depth(A) -> int | None:
    """A lower bound of the graph diameter of the symmetric sparse matrix ``A`` (host CSR),
    by a double breadth-first sweep; None when the graph is not connected."""
    from scipy.sparse.csgraph import breadth_first_order

    n = A.shape[0]
    order = breadth_first_order(A, 0, directed=True, return_predecessors=False)
    if order.size < n:
        return None
    order, pred = breadth_first_order(A, int(order[-1]), directed=True,
                                      return_predecessors=True)
    depth, v = 0, int(order[-1])
    while pred[v] >= 0:
        v, depth = int(pred[v]), depth + 1
    return depth


def small_world(A) -> str | None:
    """Why ``A``'s graph has no geometry (depth <= log2 n), or None."""
    n = A.shape[0]
    if n < MIN_UNKNOWNS:
        return None
    depth = bfs_depth(A)
    if depth is None or depth > math.log2(n):
        return None
    return f"its graph's depth is {depth} <= log2(n) = {math.log2(n):.1f}: no geometry"


# round 36: a well-conditioned matrix (a mass matrix, M + dt K at a small time step) needs no
# AMG either: Jacobi-CG converges in tens of iterations where AMG's setup costs 30x the solve
WELL_CONDITIONED = 20.0   # the Jacobi-scaled matrix's condition, estimated, at most
ROW_SUM_SHARE = 0.1       # the median row's sum over its diagonal at least (not a Laplacian)
LANCZOS_STEPS = 10


class _JacobiScaled:
    """``D^-1/2 A D^-1/2`` for :func:`~.solver.lanczos_ritz` (its ``matvec_dot``)."""

    def __init__(self, A, d):
        self.A, self.s = A, 1.0 / np.sqrt(d)
        self.shape, self.n = (A.shape[0],), A.shape[0]

    def matvec_dot(self, v, w):
        w[:] = self.s * (self.A @ (self.s * v))
        return float(v @ w)


def well_conditioned(A, ritz) -> str | None:
    """Why Jacobi-CG suits the real symmetric ``A`` (host CSR, positive diagonal) without
    AMG, or None (``ritz``: :func:`.solver.lanczos_ritz`, given by the solver, which imports
    this module): rows whose median sum is at least ``ROW_SUM_SHARE`` of the diagonal (a
    Laplacian's rows sum to about 0: its smooth modes are what AMG is for; this test keeps
    the Lanczos steps off those) and a condition of ``D^-1/2 A D^-1/2`` estimated by
    ``LANCZOS_STEPS`` Lanczos steps at most ``WELL_CONDITIONED`` (a lower bound: a
    Laplacian's estimate is 40-70 at 10 steps, a 2-D P1 mass matrix's 8, the true 9).
    P1 mass matrix, 90 000 unknowns: CG+AMG 8 iterations 0.76 s CPU, Jacobi-CG 27 (SciPy's
    plain CG 0.025 s)."""
    n = A.shape[0]
    if n < MIN_UNKNOWNS:
        return None
    d = A.diagonal()
    if d.min() <= 0:
        return None
    rows = np.asarray(A.sum(axis=1)).ravel()
    if np.median(rows / d) < ROW_SUM_SHARE:
        return None
    values = ritz(_JacobiScaled(A, d), LANCZOS_STEPS)
    if values is None or values[0] <= 0 or values[-1] > WELL_CONDITIONED * values[0]:
        return None
    return (f"it is well conditioned (Lanczos: cond(D^-1/2 A D^-1/2) about "
            f"{values[-1] / values[0]:.3g})")
