"""A user's sparse matrix split over MPI ranks by rows (round 39, the first step): each rank
holds a block of consecutive rows, its columns renumbered as its own unknowns then the
ghosts (the other ranks' unknowns its rows read: the halo, found from the column pattern);
a product exchanges the ghosts' values (one Alltoallv) and CG or BiCGStab with Jacobi runs
on it with global sums (one Allreduce per inner product).

Not yet: GMRES, AMG over the ranks, the jobs' ``--np`` with a matrix file (refused there).

>>> plan = RowPlan.build(A[lo:hi], lo, hi, ranges)     # ranges: every rank's (lo, hi)
>>> x, info = row_solve(A, b, method="cg", comm=MPI.COMM_WORLD)   # on every rank
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["RowPlan", "row_ranges", "row_solve"]


def row_ranges(n: int, size: int) -> list[tuple[int, int]]:
    """Blocks of consecutive rows, sizes within one of each other."""
    edges = [round(k * n / size) for k in range(size + 1)]
    return [(edges[k], edges[k + 1]) for k in range(size)]


@dataclass
class RowPlan:
    """One rank's rows ``[lo, hi)`` with columns renumbered (own ``0..m-1``, then the ghosts
    by owner and global index), and the halo's lists: ``ghosts[r]`` the global columns read
    from rank r, ``sends[r]`` the local indices rank r reads from this one."""

    local: sp.csr_matrix
    lo: int
    hi: int
    ghosts: list[np.ndarray]
    sends: list[np.ndarray]

    @classmethod
    def build(cls, rows, lo: int, hi: int, ranges, requests=None) -> RowPlan:
        """``rows``: this rank's rows of A (global columns). ``requests``: what the other
        ranks ask of this one (``requests[r]``: global columns rank r reads here), from an
        all-to-all of :meth:`asks` (``None``: fill ``sends`` later)."""
        rows = sp.csr_matrix(rows)
        rows.sum_duplicates()
        cols = rows.indices.astype(np.int64)
        outside = np.unique(cols[(cols < lo) | (cols >= hi)])
        ghosts = [outside[(outside >= a) & (outside < b)] for a, b in ranges]
        order = np.concatenate(ghosts) if ghosts else outside
        m = hi - lo
        where = np.empty(cols.shape, dtype=np.int64)
        own = (cols >= lo) & (cols < hi)
        where[own] = cols[own] - lo
        where[~own] = m + np.searchsorted(order, cols[~own]) if order.size else 0
        # ghosts are sorted within each owner and owners' ranges increase: order is sorted
        local = sp.csr_matrix((rows.data, where, rows.indptr), shape=(m, m + order.size))
        sends = [np.empty(0, dtype=np.int64) for _ in ranges] if requests is None else [
            np.asarray(r, dtype=np.int64) - lo for r in requests]
        return cls(local, lo, hi, ghosts, sends)

    def asks(self) -> list[np.ndarray]:
        """The global columns this rank reads from each rank (the all-to-all's payload)."""
        return self.ghosts

    def product(self, x, ghost_values) -> np.ndarray:
        """This rank's rows of A x, from its own x and the ghosts' values (in plan order)."""
        return self.local @ np.concatenate([x, ghost_values])


class _Rows:
    """The plan with its communicator: products exchange the halo, sums go over ranks."""

    def __init__(self, plan: RowPlan, comm):
        self.plan, self.comm = plan, comm
        self.bytes = 0
        if comm is not None:
            from mpi4py import MPI

            self._mpi = MPI
            self._scount = [int(s.size) for s in plan.sends]
            self._rcount = [int(g.size) for g in plan.ghosts]
            self._sdisp = [0] + list(np.cumsum(self._scount)[:-1])
            self._rdisp = [0] + list(np.cumsum(self._rcount)[:-1])
            self._send_index = (np.concatenate(plan.sends) if plan.sends
                                else np.empty(0, dtype=np.int64))

    def matvec(self, x) -> np.ndarray:
        if self.comm is None:
            return self.plan.product(x, np.empty(0))
        send = np.ascontiguousarray(x[self._send_index], dtype=np.float64)
        ghost = np.empty(sum(self._rcount))
        D = self._mpi.DOUBLE
        self.comm.Alltoallv([send, self._scount, self._sdisp, D],
                            [ghost, self._rcount, self._rdisp, D])
        self.bytes += send.nbytes
        return self.plan.product(x, ghost)

    def dot(self, u, v) -> float:
        local = np.array([float(np.dot(u, v))])
        if self.comm is None:
            return float(local[0])
        out = np.empty(1)
        self.comm.Allreduce(local, out, op=self._mpi.SUM)
        return float(out[0])


def _plan(A, comm) -> RowPlan:
    rank, size = (0, 1) if comm is None else (comm.Get_rank(), comm.Get_size())
    n = A.shape[0]
    ranges = row_ranges(n, size)
    lo, hi = ranges[rank]
    plan = RowPlan.build(A[lo:hi], lo, hi, ranges)
    if comm is not None:
        plan.sends = [np.asarray(r, dtype=np.int64) - lo for r in comm.alltoall(plan.asks())]
    return plan


def row_solve(A, b, *, method="cg", rtol=1e-8, atol=0.0, maxiter=None, comm=None):
    """Solve ``A x = b`` with this rank's block of rows (``A`` and ``b`` whole on every rank,
    as read from a file; each rank keeps its rows): CG (symmetric positive definite A) or
    BiCGStab, Jacobi-preconditioned, stopping on SciPy's ``|r| <= max(rtol |b|, atol)`` of
    the recurrence. Returns ``(x, info)`` on every rank, x whole (one Allgatherv), info 0
    when the true residual of x meets the tolerance, else the iterations done."""
    A = sp.csr_matrix(A)
    n = A.shape[0]
    if A.shape != (n, n):
        raise ValueError(f"row_solve: A is {A.shape[0]} x {A.shape[1]}, not square")
    if method not in ("cg", "bicgstab"):
        raise ValueError(f"row_solve: method={method!r}; distributed by rows: 'cg' or "
                         f"'bicgstab' (Jacobi-preconditioned)")
    b = np.asarray(b, dtype=np.float64).ravel()
    if b.size != n:
        raise ValueError(f"row_solve: b has {b.size} values and A is {n} x {n}")
    plan = _plan(A, comm)
    op = _Rows(plan, comm)
    lo, hi = plan.lo, plan.hi
    d = A.diagonal()[lo:hi]
    if np.any(d == 0):
        raise ValueError("row_solve: a zero on the diagonal (Jacobi divides by it)")
    dinv = 1.0 / d
    bl = b[lo:hi]
    bnorm = math.sqrt(op.dot(bl, bl))
    tol = max(rtol * bnorm, atol)
    maxiter = 10 * n if maxiter is None else int(maxiter)
    x = np.zeros(hi - lo)
    its = _cg(op, bl, x, dinv, tol, maxiter) if method == "cg" else \
        _bicgstab(op, bl, x, dinv, tol, maxiter)
    r = bl - op.matvec(x)
    true = math.sqrt(op.dot(r, r))
    info = 0 if true <= 10 * max(tol, 1e-300) and np.isfinite(true) else its
    if comm is None:
        return x, info
    counts = [b_ - a for a, b_ in row_ranges(n, comm.Get_size())]
    whole = np.empty(n)
    comm.Allgatherv(x, [whole, counts, [0] + list(np.cumsum(counts)[:-1]), op._mpi.DOUBLE])
    return whole, info


def _cg(op, b, x, dinv, tol, maxiter) -> int:
    r = b.copy()
    z = dinv * r
    p = z.copy()
    rz = op.dot(r, z)
    if math.sqrt(op.dot(r, r)) <= tol:
        return 0
    for k in range(1, maxiter + 1):
        q = op.matvec(p)
        alpha = rz / op.dot(p, q)
        x += alpha * p
        r -= alpha * q
        if math.sqrt(op.dot(r, r)) <= tol:
            return k
        z = dinv * r
        rz_new = op.dot(r, z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    return maxiter


def _bicgstab(op, b, x, dinv, tol, maxiter) -> int:
    r = b.copy()
    if math.sqrt(op.dot(r, r)) <= tol:
        return 0
    rhat = r.copy()
    rho = alpha = omega = 1.0
    v = np.zeros_like(r)
    p = np.zeros_like(r)
    for k in range(1, maxiter + 1):
        rho_new = op.dot(rhat, r)
        if rho_new == 0.0:
            return k
        beta = (rho_new / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        phat = dinv * p
        v = op.matvec(phat)
        alpha = rho_new / op.dot(rhat, v)
        s = r - alpha * v
        if math.sqrt(op.dot(s, s)) <= tol:
            x += alpha * phat
            return k
        shat = dinv * s
        t = op.matvec(shat)
        tt = op.dot(t, t)
        omega = op.dot(t, s) / tt if tt else 0.0
        x += alpha * phat + omega * shat
        r = s - omega * t
        rho = rho_new
        if math.sqrt(op.dot(r, r)) <= tol or omega == 0.0:
            return k
    return maxiter
