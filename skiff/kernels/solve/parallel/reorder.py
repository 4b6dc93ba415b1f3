"""Reverse Cuthill-McKee before a row split (round 40 h10): rows in a random order (a graph's
nodes, a mesh's unknowns as a generator numbered them) make poor blocks: each rank's block
reads columns of every other rank, and block Jacobi / block AMG sees a block of scattered,
barely coupled rows. RCM renumbers the unknowns breadth first from a pseudo-peripheral node
(George & Liu), children of each node by increasing degree, then reversed, so that coupled
unknowns get close numbers and a contiguous range of rows is a compact piece of the graph.

The ordering is computed the same on every rank (A is whole on each), one level of the
breadth-first search at a time in numpy (no loop over the unknowns). SciPy's
``scipy.sparse.csgraph.reverse_cuthill_mckee`` is the oracle for its bandwidth (the
permutations need not be equal: ties and the start node differ).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["REORDERS", "bandwidth", "rcm", "choose_reorder"]

REORDERS = ("none", "rcm", "auto")


def _graph(A) -> sp.csr_matrix:
    """The symmetric pattern of ``A`` (``A + A^T``) without the diagonal, each row's columns
    sorted by increasing degree (ties by number)."""
    A = sp.csr_matrix(A)
    P = sp.csr_matrix((np.ones(A.nnz, dtype=np.int8), A.indices, A.indptr), shape=A.shape)
    G = (P + P.T).tocoo()
    keep = G.row != G.col
    rows, cols = G.row[keep], G.col[keep]
    n = A.shape[0]
    deg = np.bincount(rows, minlength=n)
    order = np.lexsort((cols, deg[cols], rows))
    rows, cols = rows[order], cols[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return sp.csr_matrix((np.ones(cols.size, dtype=np.int8), cols, indptr), shape=(n, n))


def _levels(G, start, visited):
    """Breadth-first levels from ``start`` over the unvisited nodes (``visited`` is marked):
    each level the unvisited neighbours of the previous one, in the order of their parents,
    each parent's children by increasing degree (Cuthill-McKee's order)."""
    indptr, indices = G.indptr, G.indices
    visited[start] = True
    level = np.array([start], dtype=np.int64)
    out = [level]
    while True:
        lo, hi = indptr[level], indptr[level + 1]
        counts = hi - lo
        if counts.sum() == 0:
            break
        pos = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        nb = indices[pos]
        nb = nb[~visited[nb]]
        if nb.size == 0:
            break
        _, first = np.unique(nb, return_index=True)
        level = nb[np.sort(first)].astype(np.int64)
        visited[level] = True
        out.append(level)
    return out


def rcm(A) -> np.ndarray:
    """The reverse Cuthill-McKee permutation of ``A``'s symmetric pattern: ``A[p][:, p]``
    has its entries near the diagonal. Each connected piece starts at a pseudo-peripheral
    node: the breadth-first search is restarted from the last level's lowest-degree node
    while that deepens it (at most 8 times)."""
    G = _graph(A)
    n = G.shape[0]
    deg = np.diff(G.indptr)
    visited = np.zeros(n, dtype=bool)
    pieces = []
    by_degree = np.argsort(deg, kind="stable")
    cursor = 0
    while cursor < n:
        while visited[by_degree[cursor]]:
            cursor += 1
            if cursor == n:
                break
        if cursor == n:
            break
        start = int(by_degree[cursor])
        trial = np.zeros(n, dtype=bool)
        trial[:] = visited
        levels = _levels(G, start, trial)
        for _ in range(8):   # George & Liu: go to the far end while it gets farther
            last = levels[-1]
            cand = int(last[np.argmin(deg[last])])
            trial[:] = visited
            again = _levels(G, cand, trial)
            if len(again) <= len(levels):
                break
            start, levels = cand, again
        trial[:] = visited
        levels = _levels(G, start, visited)
        pieces.append(np.concatenate(levels))
    return np.concatenate(pieces)[::-1].copy() if pieces else np.zeros(0, dtype=np.int64)


def bandwidth(A, perm=None) -> int:
    """``max |i - j|`` over the entries of ``A`` (of ``A[perm][:, perm]`` when given)."""
    C = sp.coo_matrix(A)
    if C.nnz == 0:
        return 0
    if perm is None:
        return int(np.max(np.abs(C.row.astype(np.int64) - C.col)))
    where = np.empty(len(perm), dtype=np.int64)
    where[np.asarray(perm)] = np.arange(len(perm))
    return int(np.max(np.abs(where[C.row] - where[C.col])))


def choose_reorder(A, reorder) -> np.ndarray | None:
    """The permutation a row split takes (None: the rows as given). ``'rcm'``: reverse
    Cuthill-McKee; ``'auto'``: RCM where it at least halves the bandwidth (rows in a random
    order; a grid's natural numbering is left as it is); ``'none'``: as given."""
    reorder = "none" if reorder in (None, False) else str(reorder).lower()
    if reorder not in REORDERS:
        raise ValueError(f"reorder={reorder!r}: 'rcm' (reverse Cuthill-McKee before the row "
                         f"split), 'auto' (rcm where it halves the bandwidth) or 'none'")
    if reorder == "none" or A.shape[0] < 2:
        return None
    perm = rcm(A)
    if reorder == "auto" and 2 * bandwidth(A, perm) > bandwidth(A):
        return None
    return perm
