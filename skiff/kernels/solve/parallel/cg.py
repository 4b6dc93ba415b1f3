"""Distributed preconditioned CG: the serial :func:`..krylov.cg` (Fletcher-Reeves, scipy's
stopping test) with every dot product a local sum and one Allreduce.

Vectors are padded blocks (:class:`.operator.BlockLevel` layout); dot products and updates
read the interiors, the matvec exchanges the ghosts. Three reductions per iteration, as the
serial method has three dot products: ``p.Ap``, ``r.r`` and ``r.Mr``.
"""

from __future__ import annotations

import math

from ..krylov import SolveError

__all__ = ["DistributedOperator", "cg"]


class DistributedOperator:
    """A :class:`.operator.BlockLevel` as the Krylov method's operator."""

    def __init__(self, level, comm):
        self.level, self.comm = level, comm
        self.inner = level.inner

    def matvec(self, p, out):
        return self.level.apply(p, out)

    def dot(self, a, b) -> float:
        return float(self.comm.allreduce([self.level.local_dot(a, b)])[0])


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
    inner = op.inner
    r = b.copy()
    q = b * 0.0
    if op.dot(x, x) > 0:
        op.matvec(x, q)
        r[inner] -= q[inner]
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
    xi, ri, pi, qi = x[inner], r[inner], p[inner], q[inner]
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
        xi += alpha * pi
        ri -= alpha * qi
        rr = op.dot(r, r)
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
        pi *= beta
        pi += z[inner]
    return x, history, False
