"""ILUT, the incomplete LU with threshold and fill (Saad, *Iterative Methods for Sparse
Linear Systems*, Algorithm 10.6): ``precond='ilut'`` (round 44 h13). ILU(0) (:mod:`.ilu0`)
keeps only A's pattern: on a convection-dominated upwind matrix (100^2) GMRES took 16
iterations with it where SciPy's ``spilu`` (a threshold ILU with fill) takes 3.

Row ``i`` is eliminated in a dense work row ``w = a_i``: for each ``k < i`` with ``w_k != 0``
in increasing ``k`` (fill included), ``w_k`` is dropped when ``|w_k| < tau_i``, else
``w_k /= u_kk`` and ``w -= w_k u_k``; then every entry under ``tau_i`` is dropped (the
diagonal kept) and the ``lfil_i`` largest of L's part and of U's part are kept (ties: the
lower column). L's entries are measured in A's units, ``|l_ik u_kk|`` (Saad compares
``|l_ik|`` itself with ``tau_i``: on the upwind matrix of the tests that dropped so much
that GMRES took 14 iterations at fill 2.5x; measured so, 4 at fill 4.2x, spilu 3 at 6.7x).
``tau_i = drop_tol * ||a_i||_2`` and ``lfil_i = ceil(fill_factor * nnz(a_i) / 2)``: SciPy's
names (``spilu(drop_tol=1e-4, fill_factor=10)``), so nnz(L + U) stays under
``fill_factor * nnz(A) + n``. A zero pivot is replaced by ``max(drop_tol, 1e-8) * ||a_i||``
(Saad's remedy); a zero row is refused. numba when there is numba, else the same loops in
Python; ``tests/kernels/solve/ilut_reference.py`` is its numpy twin.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import scipy.sparse as sp

__all__ = ["ILUT", "DROP_TOL", "FILL_FACTOR"]

DROP_TOL = 1e-4     # SciPy spilu's defaults
FILL_FACTOR = 10.0

_JIT: dict = {}
_JIT_LOCK = threading.Lock()


def _push(heap, h, v):
    """Put ``v`` in the binary min-heap ``heap[:h]``; returns the new size."""
    t = h
    heap[t] = v
    while t > 0:
        parent = (t - 1) // 2
        if heap[parent] <= heap[t]:
            break
        heap[parent], heap[t] = heap[t], heap[parent]
        t = parent
    return h + 1


def _pop(heap, h):
    """Remove the least of ``heap[:h]`` (``heap[0]``); returns the new size."""
    h -= 1
    heap[0] = heap[h]
    t = 0
    while True:
        a = 2 * t + 1
        if a >= h:
            break
        if a + 1 < h and heap[a + 1] < heap[a]:
            a += 1
        if heap[t] <= heap[a]:
            break
        heap[t], heap[a] = heap[a], heap[t]
        t = a
    return h


def _ilut_factor(n, indptr, indices, data, drop_tol, fill_factor, zero_floor,
                 l_ptr, l_idx, l_val, u_ptr, u_idx, u_val, u_diag):
    """ILUT of the CSR matrix (``indptr``, ``indices``, ``data``) into L (strict lower, unit
    diagonal) and U (strict upper + ``u_diag``), both CSR with sorted columns, in the
    preallocated arrays. Returns -1, or the first row that is all zeros."""
    w = np.zeros(n, dtype=data.dtype)   # real or complex (round 45 h14)
    where = np.full(n, -1, dtype=np.int64)     # position of a column in cols, or -1
    cols = np.empty(n, dtype=np.int64)
    lc = np.empty(n, dtype=np.int64)
    lv = np.empty(n, dtype=data.dtype)
    uc = np.empty(n, dtype=np.int64)
    uv = np.empty(n, dtype=data.dtype)
    heap = np.empty(n, dtype=np.int64)   # the columns k < i of w still to eliminate
    nl = 0
    nu = 0
    l_ptr[0] = 0
    u_ptr[0] = 0
    for i in range(n):
        m = 0
        norm = 0.0
        h = 0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            v = data[p]
            if where[j] < 0:
                where[j] = m
                cols[m] = j
                w[j] = v
                m += 1
                if j < i:
                    h = _push(heap, h, j)
            else:
                w[j] += v
            av = abs(v)
            norm += av * av   # |v|^2: v * v for a real v, bit for bit
        norm = math.sqrt(norm)
        if norm == 0.0:
            for t in range(m):
                where[cols[t]] = -1
                w[cols[t]] = 0.0
            return i
        tau = drop_tol * norm
        row_nnz = indptr[i + 1] - indptr[i]
        lfil = int(math.ceil(fill_factor * row_nnz / 2.0))
        if where[i] < 0:     # the diagonal is always in the row
            where[i] = m
            cols[m] = i
            w[i] = 0.0
            m += 1
        while h > 0:           # the next column k < i of w, in increasing order
            k = heap[0]
            h = _pop(heap, h)
            wk = w[k] / u_diag[k]
            if abs(w[k]) < tau:    # |l_ik u_kk|: in A's units, as U's entries

                w[k] = 0.0
                continue
            w[k] = wk
            for q in range(u_ptr[k], u_ptr[k + 1]):
                j = u_idx[q]
                if where[j] < 0:
                    where[j] = m
                    cols[m] = j
                    w[j] = -wk * u_val[q]
                    m += 1
                    if j < i:
                        h = _push(heap, h, j)
                else:
                    w[j] -= wk * u_val[q]
        # the dropping rule on the whole row, then the lfil largest of each part
        a = 0
        b = 0
        for t in range(m):
            j = cols[t]
            v = w[j]
            if j < i:
                if v != 0.0 and abs(v * u_diag[j]) >= tau:
                    lc[a] = j
                    lv[a] = v
                    a += 1
            elif j > i:
                if v != 0.0 and abs(v) >= tau:
                    uc[b] = j
                    uv[b] = v
                    b += 1
        d = w[i]
        if d == 0.0:
            d = zero_floor * norm
        u_diag[i] = d
        for part in range(2):   # the lfil largest |v|, ties to the lower column
            pc = lc if part == 0 else uc
            pv = lv if part == 0 else uv
            count = a if part == 0 else b
            by_col = np.argsort(pc[:count], kind="mergesort")
            if count > lfil:
                mag = np.empty(count)
                for t in range(count):
                    c = pc[by_col[t]]
                    mag[t] = -abs(pv[by_col[t]] * (u_diag[c] if part == 0 else 1.0))
                best = by_col[np.argsort(mag, kind="mergesort")[:lfil]]
                bc = np.empty(lfil, dtype=np.int64)
                for t in range(lfil):
                    bc[t] = pc[best[t]]
                by_col = best[np.argsort(bc, kind="mergesort")]
            for t in range(by_col.shape[0]):
                if part == 0:
                    l_idx[nl] = pc[by_col[t]]
                    l_val[nl] = pv[by_col[t]]
                    nl += 1
                else:
                    u_idx[nu] = pc[by_col[t]]
                    u_val[nu] = pv[by_col[t]]
                    nu += 1
        l_ptr[i + 1] = nl
        u_ptr[i + 1] = nu
        for t in range(m):
            where[cols[t]] = -1
            w[cols[t]] = 0.0
    return -1


def _ilut_solve(l_ptr, l_idx, l_val, u_ptr, u_idx, u_val, u_diag, r, out):
    """``out = U^-1 L^-1 r``."""
    n = u_diag.shape[0]
    for i in range(n):
        s = r[i]
        for p in range(l_ptr[i], l_ptr[i + 1]):
            s -= l_val[p] * out[l_idx[p]]
        out[i] = s
    for i in range(n - 1, -1, -1):
        s = out[i]
        for p in range(u_ptr[i], u_ptr[i + 1]):
            s -= u_val[p] * out[u_idx[p]]
        out[i] = s / u_diag[i]
    return out


def _kernels(python: bool = False):
    if python:
        return _ilut_factor, _ilut_solve
    with _JIT_LOCK:
        if not _JIT:
            from skiff.kernels.backend import numba_available

            if numba_available():
                from numba import njit

                # the factor calls _push / _pop by their global names: numba compiles the
                # jitted ones where the factor is compiled (they are swapped in first)
                global _push, _pop
                _push, _pop = njit(cache=True)(_push), njit(cache=True)(_pop)
                _JIT.update(factor=njit(cache=True)(_ilut_factor),
                            solve=njit(cache=True)(_ilut_solve))
            else:   # plain Python: slow, but the same numbers
                _JIT.update(factor=_ilut_factor, solve=_ilut_solve)
    return _JIT["factor"], _JIT["solve"]


def check_options(drop_tol, fill_factor):
    for name, v in (("drop_tol", drop_tol), ("fill_factor", fill_factor)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"ILUT's {name} takes a number, got {v!r}")
    if not (np.isfinite(drop_tol) and 0 <= drop_tol < 1):
        raise ValueError(f"ILUT's drop_tol must be in [0, 1) (entries under drop_tol times "
                         f"their row's norm are dropped; SciPy's spilu default 1e-4), got "
                         f"{drop_tol!r}")
    if not (np.isfinite(fill_factor) and fill_factor >= 1):
        raise ValueError(f"ILUT's fill_factor must be >= 1 (each row of L and of U keeps at "
                         f"most fill_factor/2 times the row's entries in A; SciPy's spilu "
                         f"default 10), got {fill_factor!r}")


class ILUT:
    """ILUT of a square sparse matrix, real or complex (complex128, round 45 h14: the same
    kernels compiled for it, ``|v|`` for a row's norm and the dropping, as spilu's complex
    ``zgsitrf``): :meth:`solve` applies ``(L U)^-1``.
    ``drop_tol``, ``fill_factor``: SciPy ``spilu``'s names and defaults (1e-4, 10), with the
    per-row meaning of the module's docstring. ``python=True`` runs the factor's and the
    solve's Python source (the numba kernels'), whatever numba is there (its heap helpers
    are the jitted ones once numba has built them: the same numbers)."""

    def __init__(self, A, drop_tol: float = DROP_TOL, fill_factor: float = FILL_FACTOR,
                 what: str = "ILUT", python: bool = False):
        check_options(drop_tol, fill_factor)
        self.dtype = np.dtype(np.complex128 if np.iscomplexobj(A.data if sp.issparse(A)
                                                                else A) else np.float64)
        A = sp.csr_matrix(A, dtype=self.dtype, copy=True)
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"{what}: the matrix must be square, got {A.shape}")
        A.sum_duplicates()
        A.sort_indices()
        n = A.shape[0]
        self.drop_tol, self.fill_factor, self.n = float(drop_tol), float(fill_factor), n
        row_nnz = np.diff(A.indptr)
        lfil = np.ceil(self.fill_factor * row_nnz / 2.0).astype(np.int64)
        ar = np.arange(n)
        cap_l = int(np.minimum(lfil, ar).sum())
        cap_u = int(np.minimum(lfil, n - 1 - ar).sum())
        self.l_ptr = np.zeros(n + 1, dtype=np.int64)
        self.u_ptr = np.zeros(n + 1, dtype=np.int64)
        l_idx, l_val = np.empty(cap_l, dtype=np.int64), np.empty(cap_l, dtype=self.dtype)
        u_idx, u_val = np.empty(cap_u, dtype=np.int64), np.empty(cap_u, dtype=self.dtype)
        self.u_diag = np.empty(n, dtype=self.dtype)
        factor, self._solve = _kernels(python)
        bad = int(factor(n, A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data,
                         self.drop_tol, self.fill_factor, max(self.drop_tol, 1e-8),
                         self.l_ptr, l_idx, l_val, self.u_ptr, u_idx, u_val, self.u_diag))
        if bad >= 0:
            raise ValueError(f"{what}: row {bad} of the matrix is all zeros (the matrix is "
                             f"singular): no incomplete LU; check the assembly")
        nl, nu = int(self.l_ptr[-1]), int(self.u_ptr[-1])
        self.l_idx, self.l_val = l_idx[:nl].copy(), l_val[:nl].copy()
        self.u_idx, self.u_val = u_idx[:nu].copy(), u_val[:nu].copy()
        self.nnz = nl + nu + n
        self.fill = self.nnz / max(A.nnz, 1)    # nnz(L + U) / nnz(A), as spilu's

    def factors(self):
        """``(L, U)`` as scipy CSR matrices (L with its unit diagonal)."""
        n = self.n
        L = sp.csr_matrix((self.l_val, self.l_idx, self.l_ptr), shape=(n, n)) + sp.identity(
            n, format="csr")
        U = sp.csr_matrix((self.u_val, self.u_idx, self.u_ptr), shape=(n, n)) + sp.diags(
            self.u_diag, format="csr")
        return L.tocsr(), U.tocsr()

    def solve(self, r) -> np.ndarray:
        if np.iscomplexobj(r) and self.dtype.kind != "c":   # a real factor: by parts
            r = np.asarray(r)
            return self.solve(r.real) + 1j * self.solve(r.imag)
        r = np.ascontiguousarray(r, dtype=self.dtype)
        return self._solve(self.l_ptr, self.l_idx, self.l_val, self.u_ptr, self.u_idx,
                           self.u_val, self.u_diag, r, np.empty(self.n, dtype=self.dtype))
