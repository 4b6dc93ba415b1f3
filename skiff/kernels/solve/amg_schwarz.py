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
    # all pairs (p, li, lj) of a patch, for S's entries
    q_p, q_li = np.repeat(m_p, sizes[m_p]), np.repeat(m_loc, sizes[m_p])
    q_lj = np.arange(q_p.size) - np.repeat(np.cumsum(sizes[m_p]) - sizes[m_p], sizes[m_p])
    q_i = m_i[member.indptr[q_p] + q_li]
    q_j = m_i[member.indptr[q_p] + q_lj]
    q_v = np.zeros(q_p.size, dtype=A.dtype)
    by_size = np.argsort(sizes, kind="stable")            # patches by size: little padding
    sorted_sizes = sizes[by_size]
    k = 0
    while k < groups:
        # a batch: sizes within 25 % of its smallest (padding), at most BATCH_ENTRIES
        low = max(int(sorted_sizes[k]), 1)
        limit = max(low + 2, (5 * low) // 4)
        end = int(np.searchsorted(sorted_sizes, limit, side="right"))
        take = max(1, min(end - k, BATCH_ENTRIES // (limit * limit)))
        batch = by_size[k:k + take]
        m = max(int(sizes[batch].max()), 1)                # the batch's largest (sorted)
        slot = np.full(groups, -1, dtype=np.int64)
        slot[batch] = np.arange(batch.size)
        blocks = np.zeros((batch.size, m, m), dtype=A.dtype)
        e = slot[e_p] >= 0
        blocks[slot[e_p[e]], e_li[e], e_lj[e]] = e_v[e]
        inv = _pinv_hermitian(blocks)
        q = slot[q_p] >= 0
        q_v[q] = inv[slot[q_p[q]], q_li[q], q_lj[q]]
        k += take
    S = sp.csr_matrix((q_v, (q_i, q_j)), shape=(n, n))   # overlaps summed
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
