"""The autograd-aware all-to-all that moves tokens to their experts' ranks and back
(:mod:`.moe` for skiff's MoE layers, :mod:`.ernie_experts` for ERNIE-4.5's)."""

from __future__ import annotations

from skiff.kernels.train.core.autograd import Function, xp_of

__all__ = ["AllToAll"]


class AllToAll(Function):
    """Rows to ranks by ``send_counts`` forward; the gradient rows back the same way."""

    def forward(self, x, comm=None, send_counts=None):
        self.comm = comm
        out, self.recv_counts = comm.alltoallv(xp_of(x).ascontiguousarray(x), send_counts)
        self.send_counts = list(send_counts)
        return out

    def backward(self, g):
        back, _ = self.comm.alltoallv(xp_of(g).ascontiguousarray(g), self.recv_counts)
        return back
