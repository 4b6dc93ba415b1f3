"""Block-Jacobi (non-overlapping Schwarz) smoothing on AMG's aggregates:
``SmoothedAggregation(A, smoother='schwarz')``.

The default smoother is a Chebyshev polynomial in ``D^-1 A``; with ``'schwarz'`` it is the
same polynomial in ``S A``, ``S`` the inverse of ``A``'s diagonal blocks on the level's
aggregates (each aggregate's unknowns solved together, exactly; ``S`` symmetric positive
definite for an SPD ``A``, so the V-cycle stays a CG preconditioner). ``S`` has one entry per
pair of unknowns in an aggregate: about ``A``'s own number of entries on P2 Poisson, so a
cycle costs little more than the point smoother's.

What it is for: errors that are local but not constant, that a point smoother cannot reduce
and the constant candidate does not represent. P2 elements straddling coefficient jumps of
1e6 (the coefficient varying inside an element): each such element has modes whose gradient
vanishes where the coefficient is large, with energy ~1e-6 of their diagonal. CG+AMG took
521 iterations to 1e-6 on 8 065 unknowns (pyamg's SA with Gauss-Seidel 1566, with its
'schwarz' smoother 35); with block-Jacobi on the aggregates 133 (112 at degree 3), with
the aggregates grown by their neighbours ('schwarz-overlap') 36.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

# aggregates are inverted in batches padded to the batch's largest size; a batch holds at
# most this many entries (blocks x size^2) of float64/complex128
BATCH_ENTRIES = 2_000_000


def block_inverse(A: sp.csr_matrix, agg: np.ndarray, count: int,
                  overlap: bool = False) -> sp.csr_matrix:
    """``S``: the sum over the patches of their blocks' (pseudo-)inverses,
    ``sum_p R_p^T A_pp^+ R_p``, as one sparse matrix. The patches are the aggregates
    (``agg[i]`` in ``0..count-1``, or -1: the unknown alone), block-Jacobi; with ``overlap``
    each aggregate grows by its unknowns' neighbours in ``A`` (additive Schwarz with an
    overlap of one layer: more entries, fewer iterations).

    Each block is Hermitian (``A`` is); a singular one (an aggregate that is a whole
    pure-Neumann piece) gets its pseudo-inverse (eigenvalues under 1e-12 of its largest
    dropped), so ``S`` stays positive semi-definite."""
    A = sp.csr_matrix(A)
    A.sort_indices()
    n = A.shape[0]
    agg = np.asarray(agg).copy()
    alone = np.flatnonzero(agg < 0)
    agg[alone] = count + np.arange(alone.size)          # singletons of their own
    groups = count + alone.size
    member = sp.csr_matrix((np.ones(n), (agg, np.arange(n))), shape=(groups, n))
    if overlap:
        pattern = sp.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
        member = (member @ pattern + member).tocsr()
        member.data[:] = 1.0
    member.sort_indices()
    return _patch_inverse(A, member)


def _patch_inverse(A: sp.csr_matrix, member: sp.csr_matrix) -> sp.csr_matrix:
    """``sum_p R_p^T A_pp^+ R_p`` for the patches that ``member``'s rows list (sorted)."""
    n = A.shape[0]
    groups = member.shape[0]
    sizes = np.diff(member.indptr)
    m_p = np.repeat(np.arange(groups), sizes)             # (patch, unknown) pairs
    m_i = member.indices.astype(np.int64)
    m_loc = np.arange(m_i.size) - member.indptr[m_p]      # index within its patch
    keys = m_p * n + m_i                                  # sorted (rows, then columns)
    # A's entries inside each patch: each member's row, kept where the column is a member
    cnt = np.diff(A.indptr)[m_i]
    e_p, e_li = np.repeat(m_p, cnt), np.repeat(m_loc, cnt)
    idx = np.repeat(A.indptr[m_i], cnt) + (np.arange(cnt.sum()) -
                                             np.repeat(np.cumsum(cnt) - cnt, cnt))
    e_j, e_v = A.indices[idx], A.data[idx]
    pos = np.minimum(np.searchsorted(keys, e_p * n + e_j), keys.size - 1)
    inside = keys[pos] == e_p * n + e_j
    e_p, e_li, e_lj, e_v = e_p[inside], e_li[inside], m_loc[pos[inside]], e_v[inside]
    by_size = np.argsort(sizes, kind="stable")            # patches by size: little padding
    sorted_sizes = sizes[by_size]
    rank = np.empty(groups, dtype=np.int64)
    rank[by_size] = np.arange(groups)
    # A's entries in the patches' size order, so that each batch's are one slice; S's
    # entries come from each batch's padded member table (all pairs at once over the whole
    # set, then sorted, made the overlap's setup 20 s at 130 561 P2 unknowns)
    e_r = rank[e_p]
    order = np.argsort(e_r, kind="stable")
    e_r, e_li, e_lj, e_v = e_r[order], e_li[order], e_lj[order], e_v[order]
    where, cols, vals, base = [], [], [], 0
    k = 0
    while k < groups:
        # a batch: sizes within 25 % of its smallest (padding), at most BATCH_ENTRIES
        low = max(int(sorted_sizes[k]), 1)
        limit = max(low + 2, (5 * low) // 4)
        end = int(np.searchsorted(sorted_sizes, limit, side="right"))
        take = max(1, min(end - k, BATCH_ENTRIES // (limit * limit)))
        m = max(int(sorted_sizes[k + take - 1]), 1)       # the batch's largest (sorted)
        e0, e1 = np.searchsorted(e_r, [k, k + take])
        blocks = np.zeros((take, m, m), dtype=A.dtype)
        blocks[e_r[e0:e1] - k, e_li[e0:e1], e_lj[e0:e1]] = e_v[e0:e1]
        inv = _pinv_hermitian(blocks)
        batch = by_size[k:k + take]
        local = np.arange(m)
        valid = local[None, :] < sizes[batch][:, None]                  # (take, m)
        table = m_i[np.minimum(member.indptr[batch][:, None] + local[None, :], m_i.size - 1)]
        pair = valid[:, :, None] & valid[:, None, :]
        where.append(table[valid])                       # (patch, li) in emission order
        first = base + np.cumsum(sizes[batch]) - sizes[batch]   # each patch's first row
        base += int(sizes[batch].sum())
        cols.append(np.broadcast_to(first[:, None, None] + local[None, None, :],
                                    pair.shape)[pair])
        vals.append(inv[pair])                           # (patch, li, lj), row-major
        k += take
    # S = R^T blockdiag(A_pp^+) R, R the (patch, unknown) pairs in the batches' order: the
    # block diagonal is CSR as emitted (no sort), the sums over overlaps by two sparse
    # products (a COO of all pairs with duplicates took 4.8 s of 6.8 at 130 561 P2 unknowns)
    where = np.concatenate(where)
    lens = np.repeat(sorted_sizes, sorted_sizes)        # each row's entries: its patch size
    blockdiag = sp.csr_matrix((np.concatenate(vals), np.concatenate(cols),
                               np.concatenate([[0], np.cumsum(lens)])),
                              shape=(where.size, where.size))
    R = sp.csr_matrix((np.ones(where.size), where, np.arange(where.size + 1)),
                      shape=(where.size, n))
    S = (R.T.tocsr() @ blockdiag @ R).tocsr()
    S.sum_duplicates()
    S.sort_indices()
    return S


def _pinv_hermitian(blocks: np.ndarray) -> np.ndarray:
    """Pseudo-inverses of a stack of Hermitian blocks (zero padding rows and columns stay
    zero): eigenvalues under 1e-12 of each block's largest are dropped. A stack of positive
    definite blocks (the usual case) goes by a Cholesky test and an inverse (3-4x faster
    than ``eigh``), the zero rows (padding) set to the block's scale and taken out after."""
    zero = ~blocks.any(axis=2)                          # padding (or empty) rows
    diag = np.einsum("kii->ki", blocks).real
    if np.all((diag > 0) | zero):
        scale = np.abs(diag).max(axis=1, keepdims=True)
        scale = np.where(scale > 0, scale, 1.0)
        k, i = np.nonzero(zero)
        trial = blocks.copy()
        trial[k, i, i] = scale[k, 0]
        try:
            L = np.linalg.cholesky(trial)
        except np.linalg.LinAlgError:
            L = None
        if L is not None:
            piv = np.abs(np.einsum("kii->ki", L)) ** 2
            if np.all(piv.min(axis=1) > 1e-12 * piv.max(axis=1)):   # well away from singular
                inv = np.linalg.inv(trial)
                inv[k, i, :] = 0.0
                inv[k, :, i] = 0.0
                return inv
    w, V = np.linalg.eigh(blocks)
    top = np.abs(w).max(axis=1, keepdims=True)
    keep = np.abs(w) > 1e-12 * np.where(top > 0, top, 1.0)
    winv = np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0)
    return (V * winv[:, None, :]) @ V.conj().transpose(0, 2, 1)


def rho_sa(A: sp.csr_matrix, S: sp.csr_matrix, iters: int = 15, seed: int = 2) -> float:
    """The spectral radius of ``S A`` by ``iters`` power steps (Rayleigh quotients in the
    ``A`` inner product would need more products; the smoother's bound takes 1.1 times it,
    as for ``D^-1 A``)."""
    v = np.random.default_rng(seed).standard_normal(A.shape[0]).astype(A.dtype)
    lam = 1.0
    for _ in range(iters):
        v /= np.linalg.norm(v)
        w = S @ (A @ v)
        lam = float(np.vdot(v, w).real)
        v = w
    return max(lam, 1e-12)


class BlockInverse:
    """``S`` acting where the point smoother multiplies by ``D^-1``: ``self * v`` is
    ``S @ v`` (the Chebyshev recurrence writes ``dinv * r``)."""

    def __init__(self, S):
        self.S = S

    def __mul__(self, v):
        return self.S @ v

    __rmul__ = __mul__
