"""Nodal-block symmetric Gauss-Seidel, the symmetric AMG cycle's smoother on the host.

One symmetric sweep (forward over the nodes, then backward) solves each node's
``bs x bs`` diagonal block exactly (``bs`` unknowns per node, numbered together: 3 for 3-D
elasticity, the candidates of an aggregate on a coarse level of a system, 1 for a scalar
problem), as pyamg's ``block_gauss_seidel`` with ``sweep='symmetric'``. It costs less than
two products with ``A``: the forward sweep keeps, per row, the sum over the columns of the
nodes before it (``sl``); the backward sweep then needs only the columns after the node
(the nodes before it have not moved since), so a symmetric sweep is 1.5 products, 1 from
``x = 0`` (no "after" part going forward), and the residual ``b - A x`` after it is half a
product (``sl - L x``: the node's own block equation is solved exactly, and the columns
after it have not moved since). A V-cycle's fine-level work: pre-sweep and residual 1.5,
post-sweep 1.5, against Chebyshev degree 2's 1 + 1 and 2.

:func:`sweep_reference` is the twin by SciPy (the sweeps as block-triangular solves, SuperLU
in the natural order); the numba kernel :func:`_sgs_nb` is used where numba is loaded.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["BlockSGS", "block_inverses", "sweep_reference"]


def _splits(A: sp.csr_matrix, bs: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the first entry whose column is in the row's node (``lo``) and the first
    after it (``hi``); ``A``'s indices sorted. :func:`_splits_py` by numba where it runs
    (round 35: 0.015 -> 0.002 s CPU on a 261 121-row P1 matrix's first level, the
    classical setup's second largest extra over pyamg's), else :func:`_splits_numpy`."""
    fn = _splits_kernel()
    if fn is None:
        return _splits_numpy(A, bs)
    return fn(A.indptr, A.indices, int(bs))


def _splits_numpy(A: sp.csr_matrix, bs: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_splits` vectorised (the reference of :func:`_splits_py`)."""
    n = A.shape[0]
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    first = (rows // bs) * bs
    before = A.indices < first
    after = A.indices >= first + bs
    lo = A.indptr[:-1] + np.add.reduceat(before, A.indptr[:-1]) if A.nnz else A.indptr[:-1]
    nafter = np.add.reduceat(after, A.indptr[:-1]) if A.nnz else np.zeros(n, np.int64)
    empty = np.diff(A.indptr) == 0   # reduceat gives the next row's value for an empty row
    lo = np.where(empty, A.indptr[:-1], lo)
    hi = np.where(empty, A.indptr[:-1], A.indptr[1:] - nafter)
    return lo.astype(np.uint64), hi.astype(np.uint64)


def _splits_py(indptr, indices, bs):
    """The loop of :func:`_splits` (numba's source): per row, its entries before the row's
    node and after it counted, as :func:`_splits_numpy` does."""
    n = indptr.shape[0] - 1
    lo = np.empty(n, dtype=np.uint64)
    hi = np.empty(n, dtype=np.uint64)
    for i in range(n):
        first = (i // bs) * bs
        nb = 0
        na = 0
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            if c < first:
                nb += 1
            elif c >= first + bs:
                na += 1
        lo[i] = indptr[i] + nb
        hi[i] = indptr[i + 1] - na
    return lo, hi


_SPLITS_NB = None


def _splits_kernel():
    """The numba twin of :func:`_splits_py`, or None (no numba, or deferring)."""
    global _SPLITS_NB
    if _SPLITS_NB is None:
        from skiff.kernels.backend import numba_available

        from .fused import deferring

        if deferring() or not numba_available():
            return None
        from numba import njit

        _SPLITS_NB = njit(cache=True)(_splits_py)
    return _SPLITS_NB


def unsigned(A: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """``A``'s indptr and indices as unsigned integers for the numba kernels: a signed index
    makes numba test it for a negative (wrap-around) value on every access, which keeps
    LLVM from vectorising the row's loop: a numba product with ``A`` (el3i, 252 946
    entries) took 0.35 ms with int32 indices, 0.125 ms with uint32 (SciPy's: 0.122)."""
    return (A.indptr.astype(np.uint64),
            A.indices.view(np.uint32) if A.indices.dtype == np.int32
            else A.indices.astype(np.uint64))


def block_inverses(A: sp.csr_matrix, bs: int) -> np.ndarray | None:
    """The inverses of ``A``'s ``bs x bs`` diagonal blocks, shape ``(n / bs, bs, bs)``; None
    when one is not safely invertible (its condition number over 1e12: the caller then
    takes the unknowns one by one)."""
    n = A.shape[0]
    nb = n // bs
    if bs == 1:   # the diagonal itself (np.add.at below: 10x slower, the same values)
        d = np.asarray(A.diagonal(), dtype=np.float64)
        if np.any(d == 0):
            return None
        return (1.0 / d).reshape(nb, 1, 1)
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    inside = (A.indices // bs) == (rows // bs)
    D = np.zeros((nb, bs, bs))
    np.add.at(D, (rows[inside] // bs, rows[inside] % bs, A.indices[inside] % bs),
              A.data[inside])
    if bs == 1:
        d = D[:, 0, 0]
        if np.any(d == 0):
            return None
        return (1.0 / d).reshape(nb, 1, 1)
    try:
        cond = np.linalg.cond(D)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(cond)) or cond.max() > 1e12:
        return None
    return np.linalg.inv(D)


def _triangles(A: sp.csr_matrix, bs: int):
    """SuperLU factors (natural order: the triangles themselves) of ``D + L`` and
    ``D + U`` (block triangles)."""
    from scipy.sparse.linalg import splu

    coo = sp.csr_matrix(A).tocoo()
    rn, cn = coo.row // bs, coo.col // bs
    parts = []
    for keep in (cn <= rn, cn >= rn):
        T = sp.csc_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=A.shape)
        parts.append(splu(T, permc_spec="NATURAL", diag_pivot_thresh=0.0))
    return parts


def sweep_reference(A: sp.csr_matrix, bs: int, x: np.ndarray, b: np.ndarray,
                    sweeps: int = 1, parts=None) -> np.ndarray:
    """``sweeps`` symmetric block Gauss-Seidel sweeps by SciPy: ``x += (D + L)^-1 (b - A x)``
    then ``x += (D + U)^-1 (b - A x)``, ``D`` the ``bs x bs`` diagonal blocks, ``L`` / ``U``
    the rest of the lower / upper block triangle (the test's oracle and the numba-less
    path)."""
    A = sp.csr_matrix(A)
    parts = _triangles(A, bs) if parts is None else parts
    for _ in range(sweeps):
        for lu in parts:
            x += lu.solve(b - A @ x)
    return x


_NB = None


def _kernel():
    """The numba sweep, or None without numba or inside a small first solve that does not
    wait for numba (``fused.deferring``): the SciPy twin then."""
    global _NB
    if _NB is None:
        from skiff.kernels.backend import numba_available

        from .fused import deferring

        if deferring() or not numba_available():
            return None
        from numba import njit

        @njit(cache=True, fastmath=True)
        def _sgs_nb(indptr, indices, data, lo, hi, dinv, bs, x, b, sl, tmp, zero, r):
            """One symmetric sweep in place on x; ``zero``: x is 0 on entry; ``r`` of
            size n: the residual b - A x after it (else size 0)."""
            nb = x.shape[0] // bs
            for node in range(nb):
                r0 = node * bs
                for c in range(bs):
                    i = r0 + c
                    s = 0.0
                    for p in range(indptr[i], lo[i]):
                        s += data[p] * x[indices[p]]
                    sl[i] = s
                    t = b[i] - s
                    if not zero:
                        for p in range(hi[i], indptr[i + 1]):
                            t -= data[p] * x[indices[p]]
                    tmp[c] = t
                for c in range(bs):
                    v = 0.0
                    for d in range(bs):
                        v += dinv[node, c, d] * tmp[d]
                    x[r0 + c] = v
            for node in range(nb - 1, -1, -1):
                r0 = node * bs
                for c in range(bs):
                    i = r0 + c
                    t = b[i] - sl[i]
                    for p in range(hi[i], indptr[i + 1]):
                        t -= data[p] * x[indices[p]]
                    tmp[c] = t
                for c in range(bs):
                    v = 0.0
                    for d in range(bs):
                        v += dinv[node, c, d] * tmp[d]
                    x[r0 + c] = v
            if r.shape[0]:
                for i in range(x.shape[0]):
                    s = sl[i]
                    for p in range(indptr[i], lo[i]):
                        s -= data[p] * x[indices[p]]
                    r[i] = s

        _NB = _sgs_nb
    return _NB


class BlockSGS:
    """A level's symmetric block Gauss-Seidel: ``pre(x, b)`` (x is 0 on entry unless
    ``zero=False``) returns x
    after ``sweeps`` symmetric sweeps and the residual ``b - A x``; ``post(x, b)`` smooths x
    in place. ``A`` real CSR with sorted indices; ``bs`` must divide its size."""

    def __init__(self, A: sp.csr_matrix, bs: int, dinv: np.ndarray, sweeps: int = 1):
        self.A, self.bs, self.sweeps = A, int(bs), max(1, int(sweeps))
        self.dinv = np.ascontiguousarray(dinv, dtype=np.float64)
        self.lo, self.hi = _splits(A, self.bs)
        self.indptr, self.indices = unsigned(A)
        self._none = np.empty(0)

    @classmethod
    def build(cls, A: sp.csr_matrix, bs: int, sweeps: int = 1) -> BlockSGS | None:
        """The smoother with ``bs``-blocks, or point-wise when a block is singular; None when
        a diagonal entry is zero."""
        if bs > 1 and A.shape[0] % bs == 0:
            dinv = block_inverses(A, bs)
            if dinv is not None:
                return cls(A, bs, dinv, sweeps)
        dinv = block_inverses(A, 1)
        return None if dinv is None else cls(A, 1, dinv, sweeps)

    def _run(self, x, b, zero, r):
        kernel = _kernel()
        if kernel is None:   # SciPy's block-triangular solves (factors kept on the level)
            if getattr(self, "_parts", None) is None:
                self._parts = _triangles(self.A, self.bs)
            sweep_reference(self.A, self.bs, x, b, 1, self._parts)
            if r.shape[0]:
                r[:] = b - self.A @ x
            return
        # the work arrays per call: a kept hierarchy may serve two threads' solves at once
        kernel(self.indptr, self.indices, self.A.data, self.lo, self.hi, self.dinv, self.bs, x, b,
               np.empty(x.shape[0]), np.empty(self.bs), zero, r)

    def pre(self, x, b, zero=True):
        n = x.shape[0]
        r = np.empty(n)
        for k in range(self.sweeps):
            last = k == self.sweeps - 1
            self._run(x, b, zero and k == 0, r if last else self._none)
        return x, r

    def post(self, x, b):
        for _ in range(self.sweeps):
            self._run(x, b, False, self._none)
        return x
