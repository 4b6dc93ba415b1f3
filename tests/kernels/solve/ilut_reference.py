"""ILUT on a dense copy, row by row in numpy (Saad, Algorithm 10.6, with L's entries measured
as ``|l_ik u_kk|``): the oracle of skiff's sparse ILUT kernel (``skiff/kernels/solve/ilut.py``,
a numba loop over a work row and a column list). The same rules, written as whole-row array
operations: the drop test, the ``lfil`` largest by ``np.lexsort`` (ties to the lower column)."""

from __future__ import annotations

import math

import numpy as np


def _largest(cols, mags, keep):
    """``cols`` of the ``keep`` largest ``mags`` (ties: the lower column), sorted."""
    if cols.size <= keep:
        return np.sort(cols)
    order = np.lexsort((cols, -mags))[:keep]
    return np.sort(cols[order])


def dense_ilut(A, drop_tol=1e-4, fill_factor=10.0):
    """``(L, U)`` dense: L unit lower, U upper, of ILUT(``drop_tol``, ``fill_factor``)."""
    a = A.toarray().astype(np.float64)
    n = a.shape[0]
    nnz_rows = np.diff(A.tocsr().indptr)
    L, U = np.eye(n), np.zeros((n, n))
    for i in range(n):
        w = a[i].copy()
        norm = float(np.sqrt(np.sum(A.tocsr()[i].data ** 2)))
        assert norm > 0
        tau = drop_tol * norm
        lfil = int(math.ceil(fill_factor * nnz_rows[i] / 2.0))
        for k in range(i):
            if w[k] == 0.0:
                continue
            if abs(w[k]) < tau:
                w[k] = 0.0
                continue
            w[k] = w[k] / U[k, k]
            w[k + 1:] -= w[k] * np.where(np.arange(k + 1, n) > k, U[k, k + 1:], 0.0)
        lower = np.arange(i)
        lower = lower[(w[:i] != 0) & (np.abs(w[:i] * np.diag(U)[:i]) >= tau)]
        upper = np.arange(i + 1, n)
        upper = upper[(w[i + 1:] != 0) & (np.abs(w[i + 1:]) >= tau)]
        keep_l = _largest(lower, np.abs(w[lower] * np.diag(U)[lower]), lfil)
        keep_u = _largest(upper, np.abs(w[upper]), lfil)
        L[i, keep_l] = w[keep_l]
        U[i, keep_u] = w[keep_u]
        U[i, i] = w[i] if w[i] != 0.0 else max(drop_tol, 1e-8) * norm
    return L, U
