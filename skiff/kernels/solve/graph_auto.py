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
