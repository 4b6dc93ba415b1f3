"""The Krylov methods' view of a rank's block: the serial loops of :mod:`..krylov` (CG,
pipelined CG, BiCGStab, GMRES) run unchanged on padded block vectors through this operator.

:class:`DistributedOperator` exchanges p's ghosts in every matvec and zeroes the ghosts of its
output, so the residual and every vector made from matvec outputs have zero ghosts: a sum
over a whole padded array is a sum over the block, the serial fused updates (``axpy_norm``,
``pipecg_update``) run on whole arrays, and ``allsum`` (one ``Allreduce``) makes each local
sum global. CG then makes three reductions per iteration (``p.Ap``, ``r.r``, ``r.Mr``),
pipelined CG one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DistributedOperator", "Jacobi"]


class DistributedOperator:
    """A :class:`.operator.BlockLevel` as the Krylov methods' operator."""

    def __init__(self, level, comm):
        self.level, self.comm = level, comm
        self.xp = level.xp
        self.shape = level.P
        self.n = int(np.prod(level.dec.shape3))

    def matvec(self, p, out):
        """out = A p on the block, out's ghosts zero."""
        return self.level.apply(p, out, clean=True)

    def matvec_dot(self, p, out) -> float:
        """out = A p and the global p.Ap."""
        self.matvec(p, out)
        return float(self.allsum(float(p.ravel() @ out.ravel())))

    def allsum(self, value):
        """The sum over ranks of a number, or of each number of a tuple (one Allreduce)."""
        if isinstance(value, (tuple, list)):
            return tuple(float(v) for v in self.comm.allreduce(list(value)))
        return float(self.comm.allreduce([value])[0])


class Jacobi:
    """z = r / diag on the block (ghosts: z = r there, and r's are zero)."""

    def __init__(self, level):
        self.invdiag = level.invdiag_p

    def __call__(self, r, out):
        out[...] = r * self.invdiag
        return out
