"""Block Jacobi over the ranks of a row split (round 40 h7): each rank preconditions with its
own diagonal block ``A[lo:hi, lo:hi]`` (the ghosts' columns dropped), as PETSc's
``-pc_type bjacobi`` does, the block's solve being

* ``"ilu"``: ILU(0), the incomplete LU on the block's own pattern (PETSc's default
  ``-sub_pc_type ilu``); on a symmetric block it is IC(0) in ``L D L^T`` form (``U = D L^T``),
  so CG takes it;
* ``"amg"``: one V-cycle of skiff's smoothed aggregation set up on the block (PETSc's
  ``-sub_pc_type gamg``; symmetric positive definite for an SPD block: CG takes it).

No communication: the preconditioner is the same linear map each iteration, so CG, BiCGStab
and right-preconditioned GMRES run as with Jacobi.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["BLOCK_PRECONDS", "ILU0", "block_preconditioner", "own_block"]

BLOCK_PRECONDS = ("ilu", "amg")
# the names a PETSc / SciPy user gives for them
ALIASES = {"ilu0": "ilu", "ic": "ilu", "ic0": "ilu", "ichol": "ilu", "bjacobi": "ilu",
           "bjacobi-ilu": "ilu", "block-ilu": "ilu", "bjacobi-amg": "amg", "block-amg": "amg"}

_JIT: dict = {}


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
    if not _JIT:
        from skiff.kernels.backend import numba_available

        if numba_available():
            from numba import njit

            _JIT["factor"] = njit(cache=True)(_ilu0_factor)
            _JIT["solve"] = njit(cache=True)(_ilu0_solve)
        else:   # plain Python: slow, but the same numbers
            _JIT["factor"], _JIT["solve"] = _ilu0_factor, _ilu0_solve
    return _JIT["factor"], _JIT["solve"]


class ILU0:
    """ILU(0) of a square sparse matrix (real): :meth:`solve` applies ``(L U)^-1``. A zero
    pivot (a zero on the diagonal, or one made by the elimination) is refused in one line."""

    def __init__(self, A, what="ILU(0)"):
        A = sp.csr_matrix(A, dtype=np.float64, copy=True)
        A.sum_duplicates()
        A.sort_indices()
        n = A.shape[0]
        rows = np.repeat(np.arange(n), np.diff(A.indptr))
        on = np.flatnonzero(A.indices == rows)
        if on.size != n:
            missing = np.setdiff1d(np.arange(n), rows[on])[0]
            raise ValueError(f"{what}: row {missing} has no diagonal entry (ILU(0) divides "
                             f"by it): give precond='jacobi' or 'none', or 'amg'")
        self.indptr = A.indptr.astype(np.int64)
        self.indices = A.indices.astype(np.int64)
        self.data = A.data
        self.diag = on.astype(np.int64)   # one diagonal entry per row, rows in order
        factor, self._solve = _kernels()
        bad = int(factor(self.indptr, self.indices, self.data, self.diag))
        if bad >= 0:
            raise ValueError(f"{what}: a zero pivot at row {bad} (ILU(0) divides by it): "
                             f"give precond='jacobi', 'amg' or 'none'")
        self.n = n

    def solve(self, r) -> np.ndarray:
        r = np.ascontiguousarray(r, dtype=np.float64)
        return self._solve(self.indptr, self.indices, self.data, self.diag, r,
                           np.empty(self.n))


def own_block(local: sp.csr_matrix, m: int) -> sp.csr_matrix:
    """A rank's diagonal block: the plan's local rows (own columns ``0..m-1``, then the
    ghosts) without the ghosts' columns."""
    return sp.csr_matrix(local[:, :m])


def block_preconditioner(block: sp.csr_matrix, kind: str, rank: int = 0):
    """``r -> M^-1 r`` for the rank's diagonal block: ``kind`` 'ilu' (ILU(0) = IC(0) on a
    symmetric block) or 'amg' (one smoothed-aggregation V-cycle from zero)."""
    what = f"precond={kind!r} on rank {rank}'s block"
    if kind == "ilu":
        return ILU0(block, what).solve
    if kind == "amg":
        from ..amg import SmoothedAggregation

        if block.shape[0] == 0:
            return lambda r: np.zeros(0)
        op = SmoothedAggregation(sp.csr_matrix(block)).aspreconditioner()
        return lambda r: np.asarray(op.matvec(r), dtype=np.float64).ravel()
    raise ValueError(f"block preconditioner {kind!r}: 'ilu' or 'amg'")
