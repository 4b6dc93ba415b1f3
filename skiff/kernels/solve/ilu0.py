"""ILU(0), the incomplete LU on a sparse matrix's own pattern (round 40: h7 wrote it for the
block Jacobi of a row split, ``parallel/block_local.py``; h10 moved it here so that one
rank's ``Solver(A, precond='ilu')`` runs the same kernel). On a symmetric matrix it is IC(0)
in ``L D L^T`` form (``U = D L^T``), so CG takes it. numba when there is numba, else the same
loops in Python.
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp

__all__ = ["ILU0"]

_JIT: dict = {}
_JIT_LOCK = threading.Lock()


def _ilu0_factor(indptr, indices, data, diag):
    """ILU(0) in place on a CSR matrix with sorted columns (``diag[i]``: the position of
    ``a_ii``): the IKJ loop, fill outside the pattern dropped. Returns the first row with a
    zero pivot, or -1."""
    n = indptr.shape[0] - 1
    where = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            where[indices[p]] = p
        for p in range(indptr[i], diag[i]):
            k = indices[p]
            piv = data[diag[k]]
            if piv == 0.0:
                return k
            lik = data[p] / piv
            data[p] = lik
            for q in range(diag[k] + 1, indptr[k + 1]):
                w = where[indices[q]]
                if w >= 0:
                    data[w] -= lik * data[q]
        for p in range(indptr[i], indptr[i + 1]):
            where[indices[p]] = -1
        if data[diag[i]] == 0.0:
            return i
    return -1


def _ilu0_solve(indptr, indices, data, diag, r, out):
    """``out = U^-1 L^-1 r`` (L unit lower, U upper with the diagonal, both in ``data``)."""
    n = indptr.shape[0] - 1
    for i in range(n):
        s = r[i]
        for p in range(indptr[i], diag[i]):
            s -= data[p] * out[indices[p]]
        out[i] = s
    for i in range(n - 1, -1, -1):
        s = out[i]
        for p in range(diag[i] + 1, indptr[i + 1]):
            s -= data[p] * out[indices[p]]
        out[i] = s / data[diag[i]]
    return out


def _kernels():
    # built once under a lock and put in whole: ranks on threads building at once saw a
    # half-filled table (``KeyError: 'solve'`` on one rank, round 42's CI)
    with _JIT_LOCK:
        if not _JIT:
            from skiff.kernels.backend import numba_available

            if numba_available():
                from numba import njit

                kernels = {"factor": njit(cache=True)(_ilu0_factor),
                           "solve": njit(cache=True)(_ilu0_solve)}
            else:   # plain Python: slow, but the same numbers
                kernels = {"factor": _ilu0_factor, "solve": _ilu0_solve}
            _JIT.update(kernels)
    return _JIT["factor"], _JIT["solve"]


class ILU0:
    """ILU(0) of a square sparse matrix, real or complex (round 45 h14: complex128, the same
    kernels compiled for it; a Hermitian A gives ``U = D L^H``, a complex symmetric one ``U
    = D L^T``): :meth:`solve` applies ``(L U)^-1``. A zero
    pivot (a zero on the diagonal, or one made by the elimination) is refused in one line.
    ``names``: the user's index of each row when A is a reordering ``P A P^T`` (``names[i]``
    the row the message names; round 44 h17), else the rows' own."""

    def __init__(self, A, what="ILU(0)", names=None):
        self.dtype = np.dtype(np.complex128 if np.iscomplexobj(A.data if sp.issparse(A)
                                                                else A) else np.float64)
        A = sp.csr_matrix(A, dtype=self.dtype, copy=True)
        A.sum_duplicates()
        A.sort_indices()
        n = A.shape[0]
        rows = np.repeat(np.arange(n), np.diff(A.indptr))
        on = np.flatnonzero(A.indices == rows)
        if on.size != n:
            missing = np.setdiff1d(np.arange(n), rows[on])[0]
            missing = missing if names is None else int(names[missing])
            raise ValueError(f"{what}: row {missing} has no diagonal entry (ILU(0) divides "
                             f"by it): give precond='jacobi' or 'none', or 'amg'")
        self.indptr = A.indptr.astype(np.int64)
        self.indices = A.indices.astype(np.int64)
        self.data = A.data
        self.diag = on.astype(np.int64)   # one diagonal entry per row, rows in order
        factor, self._solve = _kernels()
        bad = int(factor(self.indptr, self.indices, self.data, self.diag))
        if bad >= 0:
            bad = bad if names is None else int(names[bad])
            raise ValueError(f"{what}: a zero pivot at row {bad} (ILU(0) divides by it): "
                             f"give precond='jacobi', 'amg' or 'none'")
        self.n = n

    def solve(self, r) -> np.ndarray:
        dtype = np.result_type(self.dtype, np.asarray(r).dtype)
        if dtype.kind == "c" and self.dtype.kind != "c":   # a real factor, a complex r: by parts
            r = np.asarray(r)
            return self.solve(r.real) + 1j * self.solve(r.imag)
        r = np.ascontiguousarray(r, dtype=self.dtype)
        return self._solve(self.indptr, self.indices, self.data, self.diag, r,
                           np.empty(self.n, dtype=self.dtype))
