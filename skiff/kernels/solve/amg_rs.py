"""Classical (Ruge-Stueben) algebraic multigrid: pyamg's ``ruge_stuben_solver`` for skiff.

For M-matrices and scalar PDEs whose coefficient jumps (heterogeneous permeability,
high-contrast cells), where an interpolation built from the matrix's entries follows the
jumps better than smoothed aggregates. Setup per level (on the CPU):

* classical strength of connection: ``j`` is a strong neighbour of ``i`` when
  ``|a_ij| >= theta max_{k != i} |a_ik|`` (``theta = 0.25``, pyamg's default; not made
  symmetric: ``i`` depends on ``j``) -- :func:`classical_strength`, one numba loop with
  its numpy twin :func:`_strength_numpy`;
* the Ruge-Stueben C/F splitting (first pass): the point that the most undecided points
  depend on becomes a C point, the undecided points depending on it F points, and the
  undecided points those F points depend on gain weight (a bucket queue, ties to the
  lowest index; ``order='pyamg'``: pyamg's order, its splitting bit for bit) --
  :func:`rs_split`, one numba loop with its Python twin :func:`_rs_py`
  (:func:`_rs_pyamg_py`); optionally the second pass (``second_pass=True``, :func:`_pass2_py`,
  pyamg's step for step);
* modified classical ("standard", distance-1) interpolation (De Sterck, Falgout, Nolting,
  Yang 2008, eq. 9): an F point interpolates from its strong C neighbours; a strong F
  neighbour ``k``'s entry is distributed over them in proportion to ``a_km`` (the entries
  of sign opposite to ``a_kk`` only), or added to the diagonal when ``k`` shares none of
  them; weak entries are added to the diagonal -- :func:`classical_interpolation`, numba
  with its Python twin :func:`_interp_py`;
* or direct interpolation (``interpolation='direct'``, pyamg's, equal to 1e-16);
* ``R = P^T``, ``A_c = P^T A P``, down to ``max_coarse`` unknowns (a dense inverse).

The cycle smooths with one symmetric Gauss-Seidel sweep before and after (pyamg's default:
:class:`.amg_gs.BlockSGS` with 1-unknown blocks on a symmetric matrix, forward then backward
point sweeps on a non-symmetric one; Chebyshev on a GPU), and the V-cycle, ``precondition``
and ``aspreconditioner`` are :class:`.amg.SmoothedAggregation`'s.

>>> import scipy.sparse as sp
>>> A = sp.diags([-1, 2, -1], [-1, 0, 1], shape=(2000, 2000)).tocsr()
>>> RugeStuben(A).nlevels >= 2
True
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .amg import (
    DENSE_COARSE,
    SmoothedAggregation,
    _dense_enough,
    _gauss_seidel,
    _norm_dinv_a,
    _sparse_lu,
    coarse_inverse,
    finish_levels,
    is_symmetric,
)
from .amg_strength import rho_dinv_a
from .cancel import checkpoint

__all__ = ["RugeStuben", "classical_interpolation", "classical_strength",
           "direct_interpolation", "extended_interpolation", "pmis_split", "pmis_weights",
           "prolongator_rows", "rs_split", "suits_classical", "truncate_rows"]

RS_THETA = 0.25   # pyamg's ruge_stuben_solver default
# Solver's amg='auto' takes classical AMG for a diffusion M-matrix whose diagonal, per entry
# of its row, spreads more than this (a heterogeneous coefficient): see suits_classical
CLASSICAL_SPREAD = 1e2
# ... and for one whose rows couple unequally (anisotropy, stretched cells): the median row's
# largest off-diagonal magnitude over its smallest at least this, rows at most
# CLASSICAL_ROW long (grid stencils, not a graph's hubs): see suits_classical (round 36)
CLASSICAL_ANISOTROPY = 10.0
CLASSICAL_ROW = 27
INTERPOLATIONS = ("classical", "direct", "extended+i")
SPLIT_ORDERS = ("lowest", "pyamg", "front")
SPLITTINGS = ("RS", "PMIS")   # pyamg's CF= names that RugeStuben(cf=) takes


def suits_classical(A: sp.csr_matrix) -> str:
    """Why classical AMG suits ``A`` (real, symmetric: the caller knows) better than smoothed
    aggregation, or ``''`` where it does not. Both reasons need a diffusion M-matrix (no
    positive off-diagonal entry) with weakly diagonally dominant rows (``a_ii >= sum_j
    |a_ij|``, to 1e-8):

    * ``"for the coefficient's contrast"``: the diagonal's spread, divided by the row
      lengths, above ``CLASSICAL_SPREAD`` (a heterogeneous coefficient). CG iterations,
      smoothed aggregation -> classical (round 33): random cells at 1e6 in 3-D (30 %) 14 ->
      13 at a sixth of the setup, 2-D 23 -> 16, at 1e3 83 -> 16; log-normal fields (2
      decades a sigma) 256^2 51 -> 17, 40^3 14 -> 11, uncorrelated 89 -> 18; the
      1e-6..1e6 checkerboard (P1, 261 121) 35 -> 17.
    * ``"for the anisotropy"`` (round 36): the median row's largest off-diagonal magnitude
      over its smallest at least ``CLASSICAL_ANISOTROPY`` and no row longer than
      ``CLASSICAL_ROW`` (a stencil's coupling strong in some directions only: grid-aligned
      anisotropy, stretched cells). CPU s setup + solve, SA -> classical (CG rtol 1e-8):
      2-D 300^2 at 1e-3 0.58 -> 0.10, at 1e-2 0.31 -> 0.15; 3-D 40^3 with z at 1e-2 0.26 ->
      0.14, y and z at 1e-2 2.38 -> 0.10 (SA's setup 2.2 s).

    Not taken: a Laplacian scaled ``D L D`` (rows not dominant: classical 100 against 18), a
    graph's Laplacian (its diagonal is its row length; hubs' rows are long), P2 or obtuse
    P1 elements (positive off-diagonal entries: P2 with inclusions took 766 against 365),
    uniform isotropic coefficients (P1 Poisson: no spread; 17 -> 13 iterations but no
    faster; 3-D 7- and 27-point Poisson tie)."""
    A = sp.csr_matrix(A)
    n = A.shape[0]
    if n < 2 or A.dtype.kind != "f":
        return ""
    d = A.diagonal()
    if d.min() <= 0:
        return ""
    fn = _kernel("suits")
    if fn is _suits_py:   # no numba here: the vectorised form
        return _suits_numpy(A, d)
    return _suits_answer(*fn(A.indptr, A.indices, A.data, d, CLASSICAL_SPREAD,
                             CLASSICAL_ROW))


def _suits_answer(code, ratio) -> str:
    """:func:`suits_classical`'s reason from :func:`_suits_py`'s ``(code, ratio)``."""
    if code == 1:
        return "for the coefficient's contrast"
    if code < 2:
        return ""
    return "for the anisotropy" if np.median(ratio) >= CLASSICAL_ANISOTROPY else ""


def _suits_py(indptr, indices, data, d, spread, longest):
    """:func:`suits_classical`'s tests in one pass over A (round 37: the numpy form took
    0.37 s CPU on a 27-point 60^3 Laplacian before every setup, a cancel could not land in
    it): ``(-1, _)`` not taken, ``(1, _)`` the contrast, ``(0, _)`` neither,
    ``(2, ratio)`` each row's largest off-diagonal magnitude over its smallest (rows
    without one left out) for the median's test. The sums in :func:`_suits_numpy`'s order."""
    n = indptr.shape[0] - 1
    ratio = np.empty(n)
    m = 0
    any_off = False
    lo_per = np.inf
    hi_per = -np.inf
    too_long = False
    for i in range(n):
        offsum = 0.0
        big = 0.0
        small = np.inf
        seen = False
        for p in range(indptr[i], indptr[i + 1]):
            v = data[p]
            if indices[p] == i or v == 0.0:
                continue
            if v > 0.0:
                return -1, ratio[:0]
            offsum += -v
            a = abs(v)
            big = max(big, a)
            small = min(small, a)
            seen = True
        if d[i] < (1.0 - 1e-8) * offsum:
            return -1, ratio[:0]
        length = indptr[i + 1] - indptr[i]
        per = d[i] / max(length, 1)
        lo_per = min(lo_per, per)
        hi_per = max(hi_per, per)
        too_long = too_long or length > longest
        if seen:
            any_off = True
            ratio[m] = big / small
            m += 1
    if hi_per > spread * lo_per:
        return 1, ratio[:0]
    if too_long or not any_off:
        return 0, ratio[:0]
    return 2, ratio[:m]


def _suits_numpy(A, d) -> str:
    """:func:`suits_classical` in numpy (without numba; the test's reference)."""
    n = A.shape[0]
    lengths = np.diff(A.indptr)
    rows = np.repeat(np.arange(n), lengths)
    off = (rows != A.indices) & (A.data != 0)
    if np.any(A.data[off] > 0):
        return ""
    offsum = np.bincount(rows[off], weights=-A.data[off], minlength=n)
    if np.any(d < (1.0 - 1e-8) * offsum):
        return ""
    per = d / np.maximum(lengths, 1)
    if per.max() > CLASSICAL_SPREAD * per.min():
        return "for the coefficient's contrast"
    if lengths.max() > CLASSICAL_ROW or not off.any():
        return ""
    mag = np.abs(A.data[off])
    starts = np.flatnonzero(np.r_[True, rows[off][1:] != rows[off][:-1]])
    ratio = np.maximum.reduceat(mag, starts) / np.minimum.reduceat(mag, starts)
    return "for the anisotropy" if np.median(ratio) >= CLASSICAL_ANISOTROPY else ""


def classical_strength(A: sp.csr_matrix, theta: float = RS_THETA, kernel=None) -> sp.csr_matrix:
    """Strong connections ``|a_ij| >= theta max_{k != i} |a_ik|`` (off-diagonal, nonzero) as a
    CSR pattern with sorted indices: row ``i`` lists the points ``i`` depends on (pyamg's
    ``classical_strength_of_connection`` with ``norm='abs'``). :func:`_strength_py`, numba
    where it runs (round 35: 2.3x faster than its numpy twin :func:`_strength_numpy`, the
    same pattern); ``kernel``: the function to run (the tests' twins)."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    n = A.shape[0]
    if kernel is None and _kernel("strength") is _strength_py:
        return _strength_numpy(A, theta)   # no numba here: the vectorised twin
    fn = kernel or _kernel("strength")
    indptr, indices = fn(A.indptr, A.indices, A.data.astype(np.float64, copy=False),
                         float(theta))
    return sp.csr_matrix((np.ones(int(indptr[-1])), indices, indptr), shape=(n, n))


def _strength_numpy(A: sp.csr_matrix, theta: float = RS_THETA) -> sp.csr_matrix:
    """:func:`classical_strength` in numpy (``A`` canonical CSR): the reference of
    :func:`_strength_py`, and what runs where numba does not."""
    n = A.shape[0]
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    v = np.abs(A.data)
    off = (rows != A.indices) & (v > 0)
    big = np.zeros(n)
    if A.nnz:   # each row's largest off-diagonal |a_ik| (reduceat: 10x np.maximum.at)
        full = np.diff(A.indptr) > 0
        big[full] = np.maximum.reduceat(np.where(off, v, 0.0), A.indptr[:-1][full])
    keep = off & (v >= theta * big[rows])
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
    return sp.csr_matrix((np.ones(int(indptr[-1])), A.indices[keep], indptr), shape=(n, n))


def _strength_py(indptr, indices, data, theta):
    """The loop of :func:`classical_strength` (numba's source): each row's largest
    off-diagonal ``|a_ik|`` (nonzero entries; NaN ones never strong, as in
    :func:`_strength_numpy`), then the entries at least ``theta`` times it. Returns
    ``(sptr, sidx)``, ``sidx`` of ``indices``' dtype."""
    n = indptr.shape[0] - 1
    sptr = np.zeros(n + 1, dtype=np.int64)
    sidx = np.empty(indices.shape[0], dtype=indices.dtype)
    q = 0
    for i in range(n):
        big = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = abs(data[p])
            if indices[p] != i and v > 0 and v > big:
                big = v
        t = theta * big
        for p in range(indptr[i], indptr[i + 1]):
            v = abs(data[p])
            if indices[p] != i and v > 0 and v >= t:
                sidx[q] = indices[p]
                q += 1
        sptr[i + 1] = q
    return sptr, sidx[:q].copy()


def _rs_py(sptr, sidx, tptr, tidx, n):
    """The first pass of the Ruge-Stueben splitting: 1 for a C point, 0 for an F point.
    ``S`` (sptr, sidx): the points each point depends on; ``T = S^T`` (tptr, tidx): the
    points depending on each. Ties go to the lowest index (a bucket per weight, LIFO)."""
    split = np.full(n, -1, dtype=sptr.dtype)   # -1: undecided
    lam = np.zeros(n, dtype=sptr.dtype)
    top = 0
    for i in range(n):
        lam[i] = tptr[i + 1] - tptr[i]
        bound = lam[i] + sptr[i + 1] - sptr[i]
        if bound > top:
            top = bound
    head = np.full(top + 1, -1, dtype=sptr.dtype)
    nxt = np.full(n, -1, dtype=sptr.dtype)
    prv = np.full(n, -1, dtype=sptr.dtype)
    for i in range(n - 1, -1, -1):
        if lam[i] == 0 and sptr[i + 1] == sptr[i]:
            split[i] = 0   # no strong connection either way: the smoother resolves it
            continue
        h = head[lam[i]]
        nxt[i] = h
        if h >= 0:
            prv[h] = i
        head[lam[i]] = i
    while True:
        while top >= 0 and head[top] < 0:
            top -= 1
        if top < 0:
            break
        i = head[top]
        head[top] = nxt[i]   # pop i
        if nxt[i] >= 0:
            prv[nxt[i]] = -1
        split[i] = 1
        for p in range(tptr[i], tptr[i + 1]):   # the undecided depending on i: F
            j = tidx[p]
            if split[j] != -1:
                continue
            if prv[j] >= 0:   # unlink j
                nxt[prv[j]] = nxt[j]
            else:
                head[lam[j]] = nxt[j]
            if nxt[j] >= 0:
                prv[nxt[j]] = prv[j]
            split[j] = 0
            for r in range(sptr[j], sptr[j + 1]):   # what j depends on gains weight
                k = sidx[r]
                if split[k] != -1:
                    continue
                if prv[k] >= 0:
                    nxt[prv[k]] = nxt[k]
                else:
                    head[lam[k]] = nxt[k]
                if nxt[k] >= 0:
                    prv[nxt[k]] = prv[k]
                lam[k] += 1
                h = head[lam[k]]
                nxt[k] = h
                prv[k] = -1
                if h >= 0:
                    prv[h] = k
                head[lam[k]] = k
                if lam[k] > top:
                    top = lam[k]
        for p in range(sptr[i], sptr[i + 1]):   # what i depends on loses weight
            k = sidx[p]
            if split[k] != -1 or lam[k] == 0:
                continue
            if prv[k] >= 0:
                nxt[prv[k]] = nxt[k]
            else:
                head[lam[k]] = nxt[k]
            if nxt[k] >= 0:
                prv[nxt[k]] = prv[k]
            lam[k] -= 1
            h = head[lam[k]]
            nxt[k] = h
            prv[k] = -1
            if h >= 0:
                prv[h] = k
            head[lam[k]] = k
    return split


def _rs_pyamg_py(sptr, sidx, tptr, tidx, n, front=0):
    """The first pass in pyamg's order (``amg_core.rs_cf_splitting``, the same splitting bit
    for bit): the points sit in one array sorted by weight, an interval per weight; the
    next C point is the top of the array; a point gaining weight moves to the end of its
    interval (then the start of the next one up), one losing weight to the start of its
    interval. Points with no dependant start as F. ``S`` (sptr, sidx): the points each
    point depends on; ``T = S^T`` (tptr, tidx): the points depending on each; 1 for a C
    point, 0 for an F point. ``order='pyamg'`` of :func:`rs_split`: the default
    (:func:`_rs_py`, ties to the lowest index) gives another splitting of the same size,
    better on log-normal coefficients (160^2, 2 decades a sigma: 14 CG iterations against
    this order's 99, pyamg's 101), worse with direct interpolation on rotated anisotropy
    (100^2, epsilon 1e-3, 30 degrees: 18 against 14).

    ``front=1`` (``order='front'``, round 35): a point no other depends on but which depends
    on others is not F from the start (pyamg makes it F, and where its strong neighbours
    all end F it has nothing to interpolate from: log-normal coefficients, 256^2, 300 CG
    iterations), and the points left undecided at the end become C when they depend on
    any (none of them depends on a C point, or it would be F). Log-normal 256^2: 20
    iterations (lowest order 20, pyamg's order 300); rotated anisotropy (FD, 1e-3, 30
    degrees, 120^2): 14 (lowest order 33, pyamg 14)."""
    split = np.full(n, -1, dtype=sptr.dtype)   # -1: undecided
    lam = np.zeros(n, dtype=sptr.dtype)
    lmax = 0
    for i in range(n):
        lam[i] = tptr[i + 1] - tptr[i]
        if lam[i] > lmax:
            lmax = lam[i]
    lmax = max(2 * lmax, n + 1)
    iptr = np.zeros(lmax, dtype=sptr.dtype)
    icount = np.zeros(lmax, dtype=sptr.dtype)
    node = np.zeros(n, dtype=sptr.dtype)       # index -> node
    index = np.zeros(n, dtype=sptr.dtype)      # node -> index
    for i in range(n):
        icount[lam[i]] += 1
    total = 0
    for v in range(lmax):
        iptr[v] = total
        total += icount[v]
        icount[v] = 0
    for i in range(n):
        q = iptr[lam[i]] + icount[lam[i]]
        node[q] = i
        index[i] = q
        icount[lam[i]] += 1
    for i in range(n):
        if (lam[i] == 0 or (lam[i] == 1 and tidx[tptr[i]] == i)) and (
                front == 0 or sptr[i + 1] == sptr[i]):
            split[i] = 0
    for top in range(n - 1, -1, -1):
        i = node[top]
        icount[lam[i]] -= 1
        if lam[i] <= 0:
            break
        if split[i] != -1:
            continue
        split[i] = 1
        for p in range(tptr[i], tptr[i + 1]):
            if split[tidx[p]] == -1:
                split[tidx[p]] = 2               # tentatively F
        for p in range(tptr[i], tptr[i + 1]):
            j = tidx[p]
            if split[j] != 2:
                continue
            split[j] = 0
            for r in range(sptr[j], sptr[j + 1]):
                k = sidx[r]
                if split[k] != -1 or lam[k] >= n - 1:
                    continue
                lk = lam[k]
                old = index[k]
                new = iptr[lk] + icount[lk] - 1
                index[node[old]] = new
                index[node[new]] = old
                node[old], node[new] = node[new], node[old]
                icount[lk] -= 1
                icount[lk + 1] += 1
                iptr[lk + 1] = new
                lam[k] += 1
        for p in range(sptr[i], sptr[i + 1]):
            j = sidx[p]
            if split[j] != -1 or lam[j] == 0:
                continue
            lj = lam[j]
            old = index[j]
            new = iptr[lj]
            index[node[old]] = new
            index[node[new]] = old
            node[old], node[new] = node[new], node[old]
            icount[lj] -= 1
            icount[lj - 1] += 1
            iptr[lj] += 1
            iptr[lj - 1] = iptr[lj] - icount[lj - 1]
            lam[j] -= 1
    for i in range(n):
        if split[i] == -1:
            split[i] = 1 if front != 0 and sptr[i + 1] > sptr[i] else 0
    return split


def _rows_py(sptr, sidx, split):
    """The row pointer of a classical prolongator (:func:`prolongator_rows`)."""
    n = split.shape[0]
    pptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        c = 1
        if split[i] != 1:
            c = 0
            for p in range(sptr[i], sptr[i + 1]):
                if split[sidx[p]] == 1 and sidx[p] != i:
                    c += 1
        pptr[i + 1] = pptr[i] + c
    return pptr


def prolongator_rows(S: sp.csr_matrix, split: np.ndarray, kernel=None) -> np.ndarray:
    """The row pointer of a classical prolongator, shared by :func:`_interp_py` and
    :func:`_direct_py` (their common prologue, round 35): a C point's row holds its one
    entry, an F point's one per strong C neighbour (``S``'s row, the diagonal not counted).
    :func:`_rows_py`, numba where it runs (numpy's vectorised count took 4x longer)."""
    fn = kernel or _kernel("rows")
    idx = _index_dtype(S)
    return fn(np.asarray(S.indptr, dtype=idx), np.asarray(S.indices, dtype=idx),
              np.asarray(split, dtype=idx))


def _pmis_py(gptr, gidx, order):
    """PMIS (De Sterck, Yang, Heys 2006; pyamg's ``CF='PMIS'``): a maximal independent set
    of the symmetrised strength graph ``G = S + S^T`` (gptr, gidx; no diagonal), its points
    taken by decreasing weight (the number of points depending on each plus a random number
    in [0, 1)). pyamg's parallel rounds (a point with the largest weight among its undecided
    neighbours joins, its neighbours leave) pick the same set; a point with no strong
    connection is F (pyamg's too). ``order``: the points by decreasing weight. 1 for a C
    point, 0 for an F point."""
    n = order.shape[0]
    split = np.full(n, -1, dtype=np.int64)
    for t in range(n):
        i = order[t]
        if gptr[i + 1] == gptr[i]:
            split[i] = 0
            continue
        if split[i] != -1:
            continue
        split[i] = 1
        for p in range(gptr[i], gptr[i + 1]):
            if split[gidx[p]] == -1:
                split[gidx[p]] = 0
    return split


def _longest_row(indptr):
    """The longest row of a CSR row pointer: the size of the interpolation and truncation
    kernels' per-row scratch (one definition for :func:`_interp_py`, :func:`_extended_py`
    and :func:`_truncate_py`; numba compiles it into them, :func:`_kernel`)."""
    longest = 0
    for i in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[i + 1] - indptr[i])
    return longest


def _interp_py(indptr, indices, data, sptr, sidx, split, cindex, diag, pptr):
    """Modified classical interpolation, ``P`` as CSR arrays (see the module's text);
    ``pptr``: its row pointer (:func:`prolongator_rows`). ``diag`` is ``A``'s diagonal
    (kept in the signature; a strong F neighbour's sign is read from its own row, which the
    loop reads anyway: round 35, one random read less per neighbour, the same P)."""
    n = split.shape[0]
    pidx = np.zeros(pptr[n], dtype=np.int64)
    pval = np.zeros(pptr[n], dtype=np.float64)
    # row i's strong neighbours: a C point's place in P's row (>= 0), -2 for an F point,
    # -1 for the rest (one array: the hot loop reads one place per entry, round 35)
    mark = np.full(n, -1, dtype=np.int64)
    hit = np.empty(_longest_row(indptr), dtype=np.int64)   # row k's entries over i's C points
    for i in range(n):
        q = pptr[i]
        if split[i] == 1:
            pidx[q] = cindex[i]
            pval[q] = 1.0
            continue
        for p in range(sptr[i], sptr[i + 1]):
            j = sidx[p]
            if split[j] == 1:
                mark[j] = q
                pidx[q] = cindex[j]
                q += 1
            elif mark[j] == -1:
                mark[j] = -2
        d = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            a = data[p]
            mk = mark[k]
            if k == i or mk == -1:
                d += a                       # the diagonal and the weak entries
            elif mk >= 0:
                pval[mk] += a
            else:                            # a strong F neighbour: over the C points
                # the entries of sign opposite to a_kk: both sums kept, in row order
                dkk = 0.0
                den_pos = 0.0
                den_neg = 0.0
                h = 0
                for r in range(indptr[k], indptr[k + 1]):
                    m = indices[r]
                    if m == k:
                        dkk = data[r]
                    if mark[m] >= 0:
                        if data[r] > 0:
                            den_pos += data[r]
                        else:
                            den_neg += data[r]
                        hit[h] = r           # row k read once (was twice)
                        h += 1
                pos = dkk > 0
                den = den_neg if pos else den_pos
                if den == 0.0:
                    # none shared: to the diagonal, which keeps the constant's row sum
                    # (pyamg drops the entry: grid-aligned anisotropy 1e-3, 100^2, CG
                    # 115 iterations; 94 so)
                    d += a
                else:
                    for t in range(h):
                        r = hit[t]
                        if (data[r] > 0) != pos:
                            pval[mark[indices[r]]] += a * data[r] / den
        if d * diag[i] <= 0.0:   # lumped past zero (not an M-matrix row): the diagonal
            d = diag[i]
        for q in range(pptr[i], pptr[i + 1]):
            pval[q] = -pval[q] / d if d != 0.0 else 0.0
        for p in range(sptr[i], sptr[i + 1]):
            mark[sidx[p]] = -1
    return pptr, pidx, pval


def _extended_py(indptr, indices, data, sptr, sidx, split, cindex, diag):
    """Extended+i (distance-two) interpolation (De Sterck, Falgout, Nolting, Yang 2008,
    eqs. 4.10-4.11; hypre's ``ext+i``), ``P`` as CSR arrays: an F point ``i`` interpolates
    from ``C^_i``, its strong C neighbours and those of its strong F neighbours;
    ``w_ij = -(a_ij + sum_k a_ik a'_kj / d_k) / a~_ii`` over the strong F neighbours
    ``k``, ``d_k = sum_{l in C^_i + i} a'_kl``, ``a~_ii = a_ii + (weak entries outside
    C^_i) + sum_k a_ik a'_ki / d_k``, ``a'`` the entries of sign opposite to the row's
    diagonal. A row of zero sum keeps the constant (``sum_j w_ij = 1``). Where ``d_k`` is
    0 the entry goes to the diagonal, as in :func:`_interp_py`. For PMIS splittings, whose
    F points may have no strong C neighbour.

    One pass over the distance-two neighbourhoods (round 36: was three, a count, the fill
    and a reset): P's arrays grow as rows are added, ``slot[m] >= pptr[i]`` says ``m`` is
    in ``C^_i`` (places only grow, so an earlier row's slots fail the test and need no
    reset) and ``strong[j] == i`` that ``j`` is a strong neighbour of ``i``."""
    n = split.shape[0]
    pptr = np.zeros(n + 1, dtype=np.int64)
    size = 2 * sptr[n] + n + 16
    pidx = np.empty(size, dtype=np.int64)
    pval = np.empty(size, dtype=np.float64)
    slot = np.full(n, -1, dtype=np.int64)
    strong = np.full(n, -1, dtype=np.int64)
    hit = np.empty(_longest_row(indptr), dtype=np.int64)   # row k's entries over C^_i and i
    reach = 1 + _longest_row(sptr)    # a strong neighbour and its own strong ones, at most
    q = 0
    for i in range(n):
        start = q
        bound = 1 + (sptr[i + 1] - sptr[i]) * reach   # C^_i's size at most: room before it
        if q + bound > size:
            size = max(2 * size, q + bound)
            grown = np.empty(size, dtype=np.int64)
            grown[:q] = pidx[:q]
            pidx = grown
            again = np.empty(size, dtype=np.float64)
            again[:q] = pval[:q]
            pval = again
        if split[i] == 1:
            pidx[q] = cindex[i]
            pval[q] = 1.0
            pptr[i + 1] = q + 1
            q += 1
            continue
        for p in range(sptr[i], sptr[i + 1]):
            j = sidx[p]
            if j == i:
                continue
            strong[j] = i
            if split[j] == 1:
                if slot[j] < start:
                    slot[j] = q
                    pidx[q] = cindex[j]
                    pval[q] = 0.0
                    q += 1
            else:
                for r in range(sptr[j], sptr[j + 1]):
                    m = sidx[r]
                    if split[m] == 1 and slot[m] < start:
                        slot[m] = q
                        pidx[q] = cindex[m]
                        pval[q] = 0.0
                        q += 1
        d = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            a = data[p]
            if k == i:
                d += a
            elif slot[k] >= start:                      # in C^_i (strong or weak)
                pval[slot[k]] += a
            elif strong[k] != i or split[k] == 1:       # weak, outside C^_i
                d += a
            else:                                       # a strong F neighbour
                pos = diag[k] > 0
                den = 0.0
                h = 0
                for r in range(indptr[k], indptr[k + 1]):
                    m = indices[r]
                    if (slot[m] >= start or m == i) and (data[r] > 0) != pos:
                        den += data[r]
                        hit[h] = r           # row k read once (round 35: was twice)
                        h += 1
                if den == 0.0:
                    d += a
                else:
                    for t in range(h):
                        r = hit[t]
                        m = indices[r]
                        if slot[m] >= start:
                            pval[slot[m]] += a * data[r] / den
                        else:
                            d += a * data[r] / den
        if d * diag[i] <= 0.0:   # lumped past zero (not an M-matrix row): the diagonal
            d = diag[i]
        for t in range(start, q):
            pval[t] = -pval[t] / d if d != 0.0 else 0.0
        pptr[i + 1] = q
    return pptr, pidx[:q].copy(), pval[:q].copy()


def _pass2_py(sptr, sidx, split):
    """The Ruge-Stueben second pass, in place on ``split`` (1 = C): for each F point ``i``,
    each strong F neighbour ``j`` that shares no strong C point with ``i`` (``S_j`` and
    ``S_i`` meet in no C point, the tentative one counted) becomes the tentative C point,
    the one before it going back to F (pyamg's ``rs_cf_splitting_pass2`` step for step; a
    ``mark`` array holds ``S_i``'s C points instead of its scan of ``S_i`` per pair)."""
    n = split.shape[0]
    mark = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        if split[i] != 0:
            continue
        for p in range(sptr[i], sptr[i + 1]):
            if split[sidx[p]] == 1:
                mark[sidx[p]] = i
        c0 = -1
        for p in range(sptr[i], sptr[i + 1]):
            j = sidx[p]
            if split[j] != 0:
                continue
            shared = False
            for q in range(sptr[j], sptr[j + 1]):
                if mark[sidx[q]] == i:
                    shared = True
                    break
            if shared:
                continue
            if c0 >= 0:
                split[c0] = 0
                mark[c0] = -1
            c0 = j
            split[j] = 1
            mark[j] = i
    return split


def _direct_py(indptr, indices, data, sptr, sidx, split, cindex, pptr):
    """Direct interpolation (pyamg's ``rs_direct_interpolation``): an F point interpolates
    from its strong C neighbours only, its negative and positive entries each scaled so the
    row sums of ``A`` are kept (``w_ij = -(sum of all a_ik of a_ij's sign) / (the strong C
    ones') a_ij / a_ii``; with no positive strong C entry the positive ones go to the
    diagonal); ``pptr``: its row pointer (:func:`prolongator_rows`)."""
    n = split.shape[0]
    pidx = np.zeros(pptr[n], dtype=np.int64)
    pval = np.zeros(pptr[n], dtype=np.float64)
    strong = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        q = pptr[i]
        if split[i] == 1:
            pidx[q] = cindex[i]
            pval[q] = 1.0
            continue
        for p in range(sptr[i], sptr[i + 1]):
            if split[sidx[p]] == 1 and sidx[p] != i:
                strong[sidx[p]] = True
        sneg = spos = aneg = apos = diag = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            a = data[p]
            if k == i:
                diag += a
                continue
            if a < 0:
                aneg += a
            else:
                apos += a
            if strong[k]:
                if a < 0:
                    sneg += a
                else:
                    spos += a
        alpha = aneg / sneg if sneg != 0.0 else 0.0
        beta = 0.0
        if spos == 0.0:
            diag += apos
        else:
            beta = apos / spos
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            if k != i and strong[k]:
                a = data[p]
                pidx[q] = cindex[k]
                pval[q] = (-alpha / diag if a < 0 else -beta / diag) * a
                q += 1
        for p in range(sptr[i], sptr[i + 1]):
            strong[sidx[p]] = False
    return pptr, pidx, pval


_JIT = {}


def _kernel(name):
    """The numba twin of ``_rs_py`` / ``_interp_py`` where numba runs (and is not being
    deferred), else the Python function itself."""
    fn = {"rs": _rs_py, "rs-pyamg": _rs_pyamg_py, "interp": _interp_py, "pass2": _pass2_py,
          "direct": _direct_py, "pmis": _pmis_py, "extended": _extended_py,
          "rows": _rows_py, "strength": _strength_py,
          "truncate": _truncate_py, "suits": _suits_py}[name]
    from skiff.kernels.backend import numba_available

    from .fused import deferring

    if deferring() or not numba_available():
        return fn
    if name not in _JIT:
        from numba import njit
        from numba.extending import register_jitable

        if "_longest_row" not in _JIT:   # the kernels' shared helper, callable in numba
            _JIT["_longest_row"] = register_jitable(_longest_row)
        _JIT[name] = njit(cache=True)(fn)
    return _JIT[name]


def _index_dtype(*mats) -> type:
    """32-bit indices where every matrix's size and entries fit (round 35: the kernels read
    half the bytes and the CSR arrays pass without copies; classical interpolation on
    anisors' first level 0.054 -> 0.045 s CPU, the same P), else 64-bit."""
    big = max((M.shape[0] + M.nnz for M in mats), default=0)
    return np.int32 if big < 2 ** 31 - 1 else np.int64


def pmis_weights(S: sp.csr_matrix, seed: int = 0) -> np.ndarray:
    """PMIS's weights (pyamg's): how many points depend on each, plus a random number in
    [0, 1) (``numpy.random.default_rng(seed)``: the same splitting on every run)."""
    S = sp.csr_matrix(S)
    depend = np.bincount(S.indices, minlength=S.shape[0]).astype(np.float64)
    return depend + np.random.default_rng(seed).random(S.shape[0])


def pmis_split(S: sp.csr_matrix, weights=None, kernel=None, *, seed: int = 0) -> np.ndarray:
    """The PMIS C/F splitting of the strength pattern ``S`` (pyamg's ``CF='PMIS'``; 1 = C):
    :func:`_pmis_py` on ``S + S^T`` without its diagonal, ``weights`` default
    :func:`pmis_weights`. Fewer C points than Ruge-Stueben's (no point's F neighbours need
    a common C point): lower operator complexity, more iterations with distance-1
    interpolation."""
    S = sp.csr_matrix(S)
    n = S.shape[0]
    pattern = sp.csr_matrix((np.ones(S.nnz), S.indices, S.indptr), shape=S.shape)
    G = (pattern + pattern.T).tocsr()
    G.setdiag(0)
    G.eliminate_zeros()
    w = pmis_weights(S, seed) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"pmis_split: weights must have shape ({n},), got {w.shape}")
    fn = kernel or _kernel("pmis")
    order = np.argsort(-w, kind="stable").astype(np.int64)
    return fn(G.indptr.astype(np.int64), G.indices.astype(np.int64), order)


def rs_split(S: sp.csr_matrix, kernel=None, *, second_pass: bool = False,
             pass2_kernel=None, order: str = "lowest") -> np.ndarray:
    """C/F splitting of the strength pattern ``S`` (row ``i``: the points ``i`` depends
    on): 1 for C, 0 for F (int64). ``kernel``: the function to run (the Python twin in the
    tests), default the numba one. ``second_pass``: then the Ruge-Stueben second pass
    (pyamg's ``second_pass=True``; ``pass2_kernel`` as ``kernel``): every pair of strong F
    neighbours shares a strong C point, more C points. ``order``: ``'lowest'`` (ties to
    the lowest index), ``'pyamg'`` (pyamg's ``RS``, bit for bit: :func:`_rs_pyamg_py`) or
    ``'front'`` (pyamg's order without leaving F points that cannot interpolate;
    :class:`RugeStuben`'s default)."""
    if order not in SPLIT_ORDERS:
        raise ValueError(f"amg: order must be one of {SPLIT_ORDERS}, got {order!r}")
    S = sp.csr_matrix(S)
    T = S.T.tocsr()
    fn = kernel or _kernel("rs" if order == "lowest" else "rs-pyamg")
    i64 = np.int64
    extra = (1,) if order == "front" else ()   # pyamg's order, with round 35's fix
    # 32-bit indices where they fit: the kernels' arrays take their dtype (round 35: the
    # first pass 0.058 -> 0.040 s CPU on anisors' first level, pyamg's 0.034; the same split)
    idx = np.int32 if S.shape[0] + S.nnz < 2 ** 31 - 1 else i64
    split = fn(S.indptr.astype(idx, copy=False), S.indices.astype(idx, copy=False),
               T.indptr.astype(idx, copy=False), T.indices.astype(idx, copy=False),
               S.shape[0], *extra).astype(i64)
    if second_pass:
        fn2 = pass2_kernel or _kernel("pass2")
        split = fn2(S.indptr.astype(i64), S.indices.astype(i64),
                    np.ascontiguousarray(split, dtype=i64))
    return split


def direct_interpolation(A: sp.csr_matrix, S: sp.csr_matrix, split: np.ndarray,
                         kernel=None) -> sp.csr_matrix:
    """The prolongator of direct interpolation (pyamg's ``interpolation='direct'``): from the
    strong C neighbours only (:func:`_direct_py`)."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    A.sort_indices()
    split = np.asarray(split, dtype=np.int64)
    cindex = np.cumsum(split) - 1
    fn = kernel or _kernel("direct")
    i = _index_dtype(A, S)
    pptr = prolongator_rows(S, split)
    pptr, pidx, pval = fn(A.indptr.astype(i, copy=False), A.indices.astype(i, copy=False),
                          A.data.astype(np.float64), S.indptr.astype(i, copy=False),
                          S.indices.astype(i, copy=False), split.astype(i, copy=False),
                          cindex.astype(i, copy=False), pptr)
    return sp.csr_matrix((pval, pidx, pptr), shape=(A.shape[0], int(split.sum())))


def _diagonal(A: sp.csr_matrix, diag) -> np.ndarray:
    """``A``'s diagonal as float64: ``diag`` where the caller has it (RugeStuben's level,
    round 35: one ``A.diagonal()`` a level, was three), else computed."""
    if diag is None:
        return A.diagonal().astype(np.float64)
    return np.asarray(diag, dtype=np.float64)


def extended_interpolation(A: sp.csr_matrix, S: sp.csr_matrix, split: np.ndarray,
                           kernel=None, max_elements: int = 4, diag=None) -> sp.csr_matrix:
    """The prolongator of extended+i (distance-two) interpolation (:func:`_extended_py`;
    ``interpolation='extended+i'``): with PMIS's splitting, hypre's default pairing; at
    most ``max_elements`` entries a row (:func:`truncate_rows`; 0: all)."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    split = np.asarray(split, dtype=np.int64)
    cindex = np.cumsum(split) - 1
    fn = kernel or _kernel("extended")
    i = _index_dtype(A, S)   # 32-bit where they fit: no copies (round 35)
    pptr, pidx, pval = fn(A.indptr.astype(i, copy=False), A.indices.astype(i, copy=False),
                          A.data.astype(np.float64, copy=False),
                          S.indptr.astype(i, copy=False), S.indices.astype(i, copy=False),
                          split.astype(i, copy=False), cindex.astype(i, copy=False),
                          _diagonal(A, diag))
    P = sp.csr_matrix((pval, pidx, pptr), shape=(A.shape[0], int(split.sum())))
    if max_elements:
        P = truncate_rows(P, max_elements)
    P.sort_indices()
    return P


def truncate_rows(P: sp.csr_matrix, max_elements: int, kernel=None) -> sp.csr_matrix:
    """``P`` with at most ``max_elements`` entries a row, the largest in magnitude (ties to
    the lower column), each cut row rescaled to keep its sum (hypre's ``P_max_elmts``:
    distance-two interpolation without it fills the coarse levels: 3-D Poisson, PMIS,
    operator complexity 3.95 -> 2.3 at 4). :func:`_truncate_py` by numba where it runs
    (round 35: 0.14 -> 0.01 s CPU per extended+i setup on contrast, 261 121 rows; the
    same P as its numpy twin :func:`_truncate_numpy`); ``kernel``: the function to run."""
    P = sp.csr_matrix(P)
    counts = np.diff(P.indptr)
    if counts.max(initial=0) <= max_elements:
        return P
    fn = kernel or _kernel("truncate")
    if fn is _truncate_py and kernel is None:
        return _truncate_numpy(P, max_elements)   # no numba here: the vectorised twin
    indptr, indices, data = fn(P.indptr, P.indices, P.data.astype(np.float64, copy=False),
                               int(max_elements))
    return sp.csr_matrix((data, indices, indptr), shape=P.shape)


def _truncate_numpy(P: sp.csr_matrix, max_elements: int) -> sp.csr_matrix:
    """:func:`truncate_rows` in numpy (the reference of :func:`_truncate_py`)."""
    n = P.shape[0]
    counts = np.diff(P.indptr)
    rows = np.repeat(np.arange(n), counts)
    order = np.lexsort((P.indices, -np.abs(P.data), rows))
    rank = np.arange(P.nnz) - P.indptr[rows[order]]
    keep = np.zeros(P.nnz, dtype=bool)
    keep[order[rank < max_elements]] = True
    total = np.bincount(rows, weights=P.data, minlength=n)
    kept = np.bincount(rows[keep], weights=P.data[keep], minlength=n)
    scale = np.where(kept != 0, total / np.where(kept != 0, kept, 1.0), 1.0)
    data = P.data[keep] * scale[rows[keep]]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
    return sp.csr_matrix((data, P.indices[keep], indptr), shape=P.shape)


def _truncate_py(pptr, pidx, pval, m):
    """The loop of :func:`truncate_rows` (numba's source): per row, the ``m`` entries of
    largest magnitude (ties to the lower column) kept in the row's order, scaled by the
    row's sum over the kept entries' sum (both summed in the row's order, as
    :func:`_truncate_numpy`'s ``bincount``)."""
    n = pptr.shape[0] - 1
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    out_idx = np.empty(pidx.shape[0], dtype=pidx.dtype)
    out_val = np.empty(pval.shape[0], dtype=np.float64)
    take = np.zeros(_longest_row(pptr), dtype=np.bool_)
    q = 0
    for i in range(n):
        a, b = pptr[i], pptr[i + 1]
        c = b - a
        for t in range(c):
            take[t] = c <= m
        if c > m:
            for _ in range(m):    # the next largest |p| not taken, ties to the lower column
                best = -1
                for t in range(c):
                    if take[t]:
                        continue
                    if best < 0:
                        best = t
                        continue
                    v, w = abs(pval[a + t]), abs(pval[a + best])
                    v = -1.0 if v != v else v    # NaN last, as numpy's sort puts it
                    w = -1.0 if w != w else w
                    if v > w or (v == w and pidx[a + t] < pidx[a + best]):
                        best = t
                take[best] = True
        total = 0.0
        kept = 0.0
        for t in range(c):
            total += pval[a + t]
            if take[t]:
                kept += pval[a + t]
        scale = total / kept if kept != 0 else 1.0
        for t in range(c):
            if take[t]:
                out_idx[q] = pidx[a + t]
                out_val[q] = pval[a + t] * scale
                q += 1
        out_ptr[i + 1] = q
    return out_ptr, out_idx[:q].copy(), out_val[:q].copy()


def classical_interpolation(A: sp.csr_matrix, S: sp.csr_matrix, split: np.ndarray,
                            kernel=None, diag=None) -> sp.csr_matrix:
    """The prolongator (n x number of C points) of modified classical interpolation from
    ``A`` (real CSR), its strength pattern ``S`` and the splitting ``split`` (1 = C)."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    split = np.asarray(split, dtype=np.int64)
    cindex = np.cumsum(split) - 1
    nc = int(split.sum())
    fn = kernel or _kernel("interp")
    i = _index_dtype(A, S)
    pptr = prolongator_rows(S, split)
    pptr, pidx, pval = fn(A.indptr.astype(i, copy=False), A.indices.astype(i, copy=False),
                          A.data.astype(np.float64, copy=False),
                          S.indptr.astype(i, copy=False), S.indices.astype(i, copy=False),
                          split.astype(i, copy=False), cindex.astype(i, copy=False),
                          _diagonal(A, diag), pptr)
    return sp.csr_matrix((pval, pidx, pptr), shape=(A.shape[0], nc))


class RugeStuben(SmoothedAggregation):
    """A classical (Ruge-Stueben) AMG hierarchy for a real sparse matrix ``A``, with
    :class:`.SmoothedAggregation`'s V-cycle (``precondition``, ``aspreconditioner``).

    Parameters
    ----------
    A : scipy.sparse matrix, square, real (an M-matrix or near one: scalar diffusion)
    theta : float
        Classical strength threshold (pyamg's default 0.25).
    max_coarse, max_levels : int
        Coarsen until at most ``max_coarse`` unknowns remain (a dense inverse).
    degree : int
        Smoothing: ``degree / 2`` symmetric Gauss-Seidel sweeps before and after (pyamg's
        one), or a Chebyshev polynomial of that degree on a GPU.
    xp : numpy or cupy (the cycles; the setup is on the host)
    symmetric : bool, optional
        Whether ``A`` is symmetric (looked at when not given).
    reason : str
        Why it was chosen, for ``describe()`` (``Solver``'s ``amg='auto'``).
    second_pass : bool
        The Ruge-Stueben second pass (pyamg's ``CF=('RS', {'second_pass': True})``): F
        points whose strong F neighbours share no strong C point with them get one more C
        point (:func:`rs_split`).
    interpolation : ``'classical'`` (default: modified classical, pyamg's ``'classical'``)
        or ``'direct'`` (pyamg's ``'direct'``: from the strong C neighbours only, cheaper
        and sparser, weaker where strong F-F links matter).
    order : ``'front'`` (default since round 35), ``'lowest'`` or ``'pyamg'``: the first
        pass's order (:func:`rs_split`); ``'pyamg'`` builds pyamg's hierarchy (level sizes
        equal with ``interpolation='direct'``), for comparisons; ``'front'`` is pyamg's
        order where a point that depends on others is never left F with nothing to
        interpolate from (:func:`_rs_pyamg_py`); ``'lowest'`` (round 33's default) ties to
        the lowest index. CG iterations lowest -> front (round 35): rotated anisotropy (FD,
        1e-3, 30 degrees) 33 -> 14 (pyamg 14), at 22.5 degrees 16 -> 27 (pyamg 49),
        log-normal 256^2 20 -> 20 (pyamg 300), 2-D Poisson 6 -> 5 (pyamg 5).
    cf : ``'RS'`` (default) or ``'PMIS'`` (pyamg's ``CF='PMIS'``, :func:`pmis_split`:
        fewer C points, lower complexity; its random weights seeded by the level).
    aggressive : int
        The first ``aggressive`` levels coarsen twice (hypre's aggressive coarsening with
        two-stage interpolation: ``P = P1 P2``, the level between never smoothed): fewer
        unknowns and entries on the coarse levels for more iterations; best with
        ``interpolation='extended+i'``.
    """

    def __init__(self, A, *, theta=RS_THETA, max_coarse=400, max_levels=25, degree=2,
                 xp=np, symmetric=None, reason="", second_pass=False,
                 interpolation="classical", order="front", cf="RS", aggressive=0):
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"amg: interpolation must be one of {INTERPOLATIONS} (pyamg's "
                             f"names), got {interpolation!r}")
        if order not in SPLIT_ORDERS:
            raise ValueError(f"amg: order must be one of {SPLIT_ORDERS}, got {order!r}")
        if cf not in SPLITTINGS:
            raise ValueError(f"amg: cf must be one of {SPLITTINGS} (pyamg's CF names), got "
                             f"{cf!r}")
        if cf == "PMIS" and (second_pass or order != "front"):
            raise ValueError("amg: second_pass and order are Ruge-Stueben's (cf='RS'); "
                             "PMIS takes neither")
        self.cf = cf
        self.aggressive = int(aggressive)
        if self.aggressive < 0:
            raise ValueError(f"amg: aggressive is a number of levels (>= 0), got {aggressive!r}")
        self.second_pass, self.interpolation = bool(second_pass), interpolation
        self.order = order
        A = sp.csr_matrix(A)
        if A.dtype.kind == "c":
            raise ValueError("amg='classical' takes real matrices; a complex one needs the "
                             "smoothed aggregation (amg='sa')")
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"amg: the matrix is not square ({A.shape})")
        self.complex = False
        self.dtype = np.dtype(np.float64)
        A = A.astype(np.float64)
        A.sum_duplicates()
        A.sort_indices()
        self._finest = A   # the user's matrix, for solve()'s residuals (pyamg's ml.solve)
        self.xp = xp
        self.degree = int(degree)
        self.theta = float(theta)
        self.reason = reason
        self.symmetric = bool(is_symmetric(A) if symmetric is None else symmetric)
        self.row_scale = self._scale = None
        self.contrast = self.reused = False
        self.strength = "classical"
        self.aggregates, self.unsmoothed = [], []
        self.splittings = []
        host_sgs = self.symmetric and xp is np
        self._gs = None if self.symmetric or xp is not np else _gauss_seidel()
        self.levels = []
        while A.shape[0] > max_coarse and len(self.levels) < max_levels - 1:
            checkpoint()   # a cancel between the phases of a long setup (cancel.py)
            if self.levels and _dense_enough(A):
                break
            d = A.diagonal()
            if np.any(d == 0):
                if self.levels:
                    break
                i = int(np.flatnonzero(d == 0)[0])
                raise ValueError(f"amg: the matrix has zeros on its diagonal (entry {i}); "
                                 f"the Gauss-Seidel smoother divides by it")
            P, split = self._coarsen(A, cf, order, interpolation, d)
            if P is None:
                break
            if len(self.levels) < self.aggressive and P.shape[1] > max_coarse:
                # aggressive coarsening (two-stage): coarsen the coarse level once more and
                # interpolate through it, P = P1 P2, the middle level never smoothed
                A1 = (P.T.tocsr() @ (A @ P)).tocsr()
                A1.eliminate_zeros()
                A1.sort_indices()
                P2, split2 = self._coarsen(A1, cf, order, interpolation)
                if P2 is not None:
                    P = (P @ P2).tocsr()
                    if interpolation == "extended+i":
                        P = truncate_rows(P, 4)
                    P.sort_indices()
                    full = np.flatnonzero(split)
                    split = np.zeros_like(split)
                    split[full[split2 == 1]] = 1
            checkpoint()
            R = P.T.tocsr()
            dinv = 1.0 / d
            lmax = 0.0
            if not host_sgs:   # Chebyshev's interval top, or the Jacobi bound
                lmax = (1.1 * rho_dinv_a(A, dinv, seed=1) if self.symmetric
                        else _norm_dinv_a(A, dinv))
            self.splittings.append(split)
            self.levels.append((A, dinv, lmax, P, R))
            A = (R @ (A @ P)).tocsr()
            A.eliminate_zeros()
            A.sort_indices()
        self.coarse_n = A.shape[0]
        self.smoother = "gauss-seidel" if host_sgs else "jacobi"
        self._sgs = None
        if host_sgs:
            from .amg_gs import BlockSGS

            # point-wise: the level's 1 / diagonal is BlockSGS.build's (no zero on it)
            self._sgs = [BlockSGS(lv[0], 1, lv[1].reshape(-1, 1, 1), max(1, self.degree // 2))
                         for lv in self.levels]
            if any(s is None for s in self._sgs):
                self._sgs = None
        self._dev = [self._to_device(*level) for level in self.levels]
        self.coarse_inv = self.coarse_lu = None
        if A.shape[0] <= DENSE_COARSE or _dense_enough(A):
            self.coarse_inv = xp.asarray(coarse_inverse(A.toarray()))
        else:
            self.coarse_lu = _sparse_lu(A)
        finish_levels(self, A)   # levels as pyamg's: the coarsest last, complexities

    def _coarsen(self, A, cf, order, interpolation, diag=None):
        """One level's splitting and prolongator (None where it would not coarsen);
        ``diag``: ``A``'s diagonal where the caller has it."""
        S = classical_strength(A, self.theta)
        checkpoint()
        split = (pmis_split(S, seed=len(self.levels)) if cf == "PMIS" else
                 rs_split(S, second_pass=self.second_pass, order=order))
        checkpoint()
        nc = int(split.sum())
        if nc == 0 or nc >= A.shape[0]:
            return None, split
        if interpolation == "direct":
            return direct_interpolation(A, S, split), split
        fn = extended_interpolation if interpolation == "extended+i" else classical_interpolation
        return fn(A, S, split, diag=diag), split

    def describe(self) -> str:
        sizes = [lv.A.shape[0] for lv in self.levels]
        kind = ("symmetric Gauss-Seidel" if self._sgs is not None else
                "Gauss-Seidel" if self._gs is not None else "Chebyshev")
        why = f" {self.reason}," if self.reason else ""
        extra = ("" if self.interpolation == "classical" else
                 f", {self.interpolation} interpolation")
        extra += ", second pass" if self.second_pass else ""
        extra += {"pyamg": ", pyamg's order", "lowest": ", lowest-index order"}.get(
            self.order, "") if self.cf == "RS" else ""
        extra += ", PMIS splitting" if self.cf == "PMIS" else ""
        extra += (f", aggressive coarsening on {self.aggressive} level"
                  f"{'s' if self.aggressive > 1 else ''}" if self.aggressive else "")
        return (f"classical (Ruge-Stueben),{why} theta {self.theta:g}{extra}, {kind}, "
                f"{self.nlevels} levels: " + " > ".join(map(str, sizes))
                + f", operator complexity {self.operator_complexity:.2f}")
