"""A graph's pieces: isolated unknowns and connected components of a singular symmetric matrix.

A graph Laplacian (``networkx.laplacian_matrix``) of a graph with an isolated node has an
empty row and column there; one of a graph in several pieces has one null vector per piece
(its indicator), not only the constants. SciPy's ``cg`` and pyamg solve both when ``b`` is
compatible (zero on an isolated node, summing to zero over each piece); skiff refused the
first ("row i of the matrix is all zeros") and, on the second with a ``b`` summing to zero
over the whole graph but not over each piece (no solution), said "cg found the matrix
indefinite" and stagnated at |r|/|b| = 1 under GMRES (round 31).

Here: an unknown whose row and column are both empty (no equation involves it) is given a
unit diagonal in the solver's copy of ``A`` (``b`` must be 0 there, ``compatibility=
'project'`` sets it to 0; x is then 0 there, the minimum-norm choice, as SciPy's ``cg``
leaves it from x0 = 0), and a symmetric matrix whose rows sum to zero is split into its
connected components (``scipy.sparse.csgraph``, O(nnz), once per setup): ``b`` must sum to
zero over each, ``'project'`` removes each component's mean from ``b`` and from ``x``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def isolated_unknowns(A) -> np.ndarray:
    """Indices whose row and column of the host matrix ``A`` (scipy sparse or a dense numpy
    array) hold no nonzero entry; an empty array when there are none."""
    if sp.issparse(A):
        C = sp.csr_matrix(A)
        if np.diff(C.indptr).all() and np.all(C.data != 0):
            return np.empty(0, dtype=np.intp)   # every row holds a nonzero: none (O(nnz))
        M = abs(C)
        ones = np.ones(M.shape[0])
        rows, cols = np.asarray(M @ ones).ravel(), np.asarray(M.T @ ones).ravel()
    else:
        M = np.abs(np.asarray(A))
        rows, cols = M.sum(axis=1), M.sum(axis=0)
    return np.flatnonzero((rows == 0) & (cols == 0))


def with_unit_diagonal(A, rows: np.ndarray):
    """``A`` (not modified) with 1 on the diagonal at ``rows`` (empty rows and columns), in
    CSR for a sparse ``A``, a dense copy for a dense one."""
    if sp.issparse(A):
        one = sp.csr_matrix((np.ones(rows.size, dtype=A.dtype), (rows, rows)), shape=A.shape)
        return (sp.csr_matrix(A) + one).tocsr()
    out = np.array(A, copy=True)
    out[rows, rows] = 1
    return out


def component_labels(A: sp.csr_matrix, skip: np.ndarray) -> tuple[np.ndarray, int] | None:
    """(label per unknown, count) of the connected components of the symmetric host matrix
    ``A``'s graph, the unknowns in ``skip`` (isolated, handled apart) labelled -1; None when
    there is one component and nothing to skip (a mean over all of x would move the skipped
    ones' 0)."""
    from scipy.sparse.csgraph import connected_components

    count, labels = connected_components(A, directed=False)
    if skip.size:
        labels = labels.copy()
        labels[skip] = -1
        kept = np.unique(labels[labels >= 0])
        remap = np.full(count, -1)
        remap[kept] = np.arange(kept.size)
        labels = np.where(labels >= 0, remap[np.maximum(labels, 0)], -1)
        count = int(kept.size)
    if count <= 1 and not skip.size:
        return None   # one piece, no isolated unknown: the constants (the usual mean test)
    return labels, int(count)


def component_means(labels: np.ndarray, count: int, v: np.ndarray) -> np.ndarray:
    """The mean of host vector ``v`` over each component (``count`` values; real or complex)."""
    keep = labels >= 0
    sizes = np.bincount(labels[keep], minlength=count)
    if np.iscomplexobj(v):
        sums = (np.bincount(labels[keep], weights=v[keep].real, minlength=count)
                + 1j * np.bincount(labels[keep], weights=v[keep].imag, minlength=count))
    else:
        sums = np.bincount(labels[keep], weights=v[keep], minlength=count)
    return sums / np.maximum(sizes, 1)


def remove_means(labels: np.ndarray, count: int, v: np.ndarray) -> np.ndarray:
    """``v`` (host, modified in place) less each component's mean; -1 labels untouched."""
    means = component_means(labels, count, v)
    keep = labels >= 0
    v[keep] -= means[labels[keep]]
    return v


def unit_rows_lifted(A):
    """``(A_s, rows, cols)`` for a real sparse matrix whose rows ``rows`` hold only their
    diagonal entry (Dirichlet rows written as identity rows, ``skfem.enforce``'s; the columns
    kept) and which is symmetric once those columns' other entries are moved to the
    right-hand side: ``A_s`` is ``A`` without them, ``cols`` (CSR, n x k) those entries
    (``b_s = b - cols @ (b[rows] / diag[rows])``, ``b_s[rows] = b[rows]``: the same x). None
    where there is no such row, no such entry, or ``A_s`` is not symmetric."""
    if not sp.issparse(A) or A.dtype.kind not in "fiu" or A.shape[0] != A.shape[1]:
        return None
    C = sp.csr_matrix(A)
    if not np.all(C.data != 0):   # skfem.enforce zeroes the rows' entries, keeping them
        C = C.copy()
        C.eliminate_zeros()
    counts = np.diff(C.indptr)
    single = np.flatnonzero(counts == 1)
    if not single.size:
        return None
    rows = single[C.indices[C.indptr[single]] == single]
    rows = rows[C.data[C.indptr[rows]] != 0]
    if not rows.size:
        return None
    mark = np.zeros(C.shape[0], dtype=bool)
    mark[rows] = True
    coo = C.tocoo()
    moved = mark[coo.col] & (coo.row != coo.col)
    if not moved.any():
        return None   # the columns are empty too: A is as it should be
    from .amg import is_symmetric

    keep = ~moved
    A_s = sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=C.shape)
    A_s.sort_indices()
    if not is_symmetric(A_s):
        return None
    where = np.full(C.shape[0], -1)
    where[rows] = np.arange(rows.size)
    cols = sp.csr_matrix((coo.data[moved], (coo.row[moved], where[coo.col[moved]])),
                         shape=(C.shape[0], rows.size))
    return A_s.astype(C.dtype), rows, cols
