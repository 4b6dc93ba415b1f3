"""Distributed preconditioned CG: the serial :func:`..krylov.cg` (Fletcher-Reeves, scipy's
stopping test) with every dot product a local sum and one Allreduce.

Vectors are padded blocks (:class:`.operator.BlockLevel` layout); the matvec exchanges p's
ghosts and zeroes the ghosts of its output, so r (and q) have zero ghosts and the updates and
dot products run over whole padded arrays with the serial fused kernels (``axpy_norm``) and
BLAS dots. Three reductions per iteration, as the serial method has three dot products:
``p.Ap``, ``r.r`` and ``r.Mr``.
"""

from __future__ import annotations

import math

from .. import fused
from ..krylov import SolveError
from ..multigrid import resolve_op

__all__ = ["DistributedOperator", "cg"]


class DistributedOperator:
    """A :class:`.operator.BlockLevel` as the Krylov method's operator."""

    def __init__(self, level, comm):
        self.level, self.comm = level, comm
        self.inner = level.inner
        self.axpy_norm = resolve_op(fused.axpy_norm, level.xp)

    def matvec(self, p, out):
        """out = A p on the block, ghosts of out zero."""
        return self.level.apply(p, out, clean=True)

    def dot(self, a, b) -> float:
        """The global dot product of two padded vectors whose ghosts (of one) are zero."""
        return float(self.comm.allreduce([float(a.ravel() @ b.ravel())])[0])


class Jacobi:
    """z = r / diag on the block."""

    def __init__(self, level):
        self.invdiag = level.invdiag_p

    def __call__(self, r, out):
        out[...] = r * self.invdiag
        return out


def cg(op: DistributedOperator, b, x, M=None, *, tol, maxiter, callback=None):
    """Preconditioned CG on padded blocks; returns ``(x, history, converged)`` like the serial
    method, ``history`` the recurrence residual norms (global)."""
    r = b.copy()            # b's ghosts are zero, and so stay r's
    q = b * 0.0
    if op.dot(x, x) > 0:
        op.matvec(x, q)
        r -= q
    z = r * 0.0 if M is not None else r
    rr = op.dot(r, r)
    history = [math.sqrt(rr)]
    if callback is not None:
        callback(0, history[-1], x)
    if history[-1] <= tol:
        return x, history, True
    if M is not None:
        M(r, z)
    rz = op.dot(r, z)
    if M is not None and rz <= 0:
        raise SolveError(f"cg: the preconditioner is not positive definite (r.Mr = {rz:.3e})")
    p = z.copy()
    for it in range(1, int(maxiter) + 1):
        op.matvec(p, q)
        pq = op.dot(p, q)
        if not math.isfinite(pq):
            raise SolveError(f"p.Ap became {pq} at iteration {it}: the system or the "
                             "preconditioner produces NaN/inf")
        if pq <= 0:
            raise SolveError(f"cg: the matrix is not positive definite (p.Ap = {pq:.3e} at "
                             f"iteration {it})")
        alpha = rz / pq
        x, r, rr_local = op.axpy_norm(x, r, p, q, alpha)
        rr = float(op.comm.allreduce([rr_local])[0])
        history.append(math.sqrt(rr))
        if callback is not None:
            callback(it, history[-1], x)
        if not math.isfinite(rr):
            raise SolveError(f"the residual became {rr} at iteration {it}")
        if history[-1] <= tol:
            return x, history, True
        if M is not None:
            M(r, z)
            rz_new = op.dot(r, z)
            if rz_new <= 0:
                raise SolveError(f"cg: the preconditioner is not positive definite "
                                 f"(r.Mr = {rz_new:.3e} at iteration {it})")
        else:
            rz_new = rr
        beta = rz_new / rz
        rz = rz_new
        p *= beta
        p += z
    return x, history, False
