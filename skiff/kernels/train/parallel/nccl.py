"""The NCCL communicator: GPU (cupy) arrays through ``cupy.cuda.nccl``, bootstrapped over an
:class:`~.comm.MPIComm` (the unique id is broadcast over it). Written and gated: it needs a GPU.
"""

from __future__ import annotations

import numpy as np

from .comm import Comm, Handle, MPIComm, _check_op

__all__ = ["NCCLComm"]


class NCCLComm(Comm):
    """GPU arrays through NCCL (``cupy.cuda.nccl``), bootstrapped over an :class:`MPIComm`.

    Collectives run on cupy's current stream; sizes, reductions and results follow the MPI
    engine. Object messages, splitting and host (numpy) arrays, such as metrics, go through the
    MPI communicator underneath. Each rank must own its GPU (``--device auto`` picks GPU
    ``local_rank % count``); NCCL refuses two ranks on one device.
    """

    backend = "nccl"

    def __init__(self, mpi: MPIComm):
        super().__init__()
        from skiff.kernels.backend import cupy

        cp = cupy()
        if cp is None:
            raise RuntimeError("NCCLComm needs a GPU visible to cupy; use MPIComm for host arrays")
        from cupy.cuda import nccl

        if not getattr(nccl, "available", False):
            raise RuntimeError("cupy cannot load the NCCL library (libnccl.so.2); install it "
                               "with `pip install 'nvidia-nccl-cu12>=2.18.1,<3'` or use the "
                               "mpi engine")
        self._cp, self._nccl, self._mpi = cp, nccl, mpi
        self.rank, self.size = mpi.rank, mpi.size
        uid = nccl.get_unique_id() if mpi.rank == 0 else None
        uid = mpi.bcast_object(uid, root=0)
        self.nccl = nccl.NcclCommunicator(self.size, uid, self.rank)

    def _dtype(self, x):
        n = self._nccl
        table = {np.dtype(np.float32): n.NCCL_FLOAT32, np.dtype(np.float64): n.NCCL_FLOAT64,
                 np.dtype(np.float16): n.NCCL_FLOAT16, np.dtype(np.int32): n.NCCL_INT32,
                 np.dtype(np.int64): n.NCCL_INT64, np.dtype(np.uint8): n.NCCL_UINT8}
        try:
            return table[np.dtype(x.dtype)]
        except KeyError:
            raise ValueError(f"NCCL cannot move dtype {x.dtype}; choose from "
                             f"{', '.join(str(d) for d in table)}") from None

    def _op(self, op):
        n = self._nccl
        return {"sum": n.NCCL_SUM, "mean": n.NCCL_SUM, "max": n.NCCL_MAX,
                "min": n.NCCL_MIN}[_check_op(op)]

    def _stream(self):
        return self._cp.cuda.get_current_stream().ptr

    def _on_host(self, x) -> bool:
        return not isinstance(x, self._cp.ndarray)

    def allreduce_(self, x, op="sum"):
        if self._on_host(x):
            return self._mpi.allreduce_(x, op)
        if not x.flags.c_contiguous:
            raise ValueError("allreduce_ needs a C-contiguous array")
        p = self.size
        self._count(2 * x.nbytes * (p - 1) / p)
        self.nccl.allReduce(x.data.ptr, x.data.ptr, x.size, self._dtype(x), self._op(op),
                            self._stream())
        if op == "mean":
            x /= p
        return x

    def iallreduce_(self, x, op="sum"):
        if self._on_host(x):
            return self._mpi.iallreduce_(x, op)
        # NCCL is asynchronous on the stream already; waiting synchronizes the stream
        self.allreduce_(x, op)
        return Handle(lambda: (self._cp.cuda.get_current_stream().synchronize(), x)[1])

    def reduce_scatter(self, x, op="sum"):
        if self._on_host(x):
            return self._mpi.reduce_scatter(x, op)
        x = self._cp.ascontiguousarray(x.reshape(-1))
        p = self.size
        if x.size % p:
            raise ValueError(f"reduce_scatter needs a length divisible by {p}, got {x.size}")
        out = self._cp.empty(x.size // p, dtype=x.dtype)
        self._count(x.nbytes * (p - 1) / p)
        self.nccl.reduceScatter(x.data.ptr, out.data.ptr, out.size, self._dtype(x),
                                self._op(op), self._stream())
        if op == "mean":
            out /= p
        return out

    def allgather(self, x):
        if self._on_host(x):
            return self._mpi.allgather(x)
        x = self._cp.ascontiguousarray(x)
        out = self._cp.empty((self.size, *x.shape), dtype=x.dtype)
        self._count(x.nbytes * (self.size - 1))
        self.nccl.allGather(x.data.ptr, out.data.ptr, x.size, self._dtype(x), self._stream())
        return out

    def allgatherv(self, x):
        if self._on_host(x):
            return self._mpi.allgatherv(x)
        counts = self._mpi.allgather_object(int(x.size))
        biggest = max(counts)
        padded = self._cp.zeros(biggest, dtype=x.dtype)
        padded[: x.size] = x.reshape(-1)
        every = self.allgather(padded)
        return self._cp.concatenate([every[r, :c] for r, c in enumerate(counts)]), counts

    def broadcast(self, x, root=0):
        if self._on_host(x):
            return self._mpi.broadcast(x, root)
        out = self._cp.ascontiguousarray(x).copy()
        if self.rank == root:
            self._count(out.nbytes * (self.size - 1))
        self.nccl.bcast(out.data.ptr, out.size, self._dtype(out), root, self._stream())
        return out

    def alltoallv(self, x, send_counts):
        if self._on_host(x):
            return self._mpi.alltoallv(x, send_counts)
        counts = [int(c) for c in send_counts]
        recv_counts = self._mpi.mpi.alltoall(counts)
        out = self._cp.empty((sum(recv_counts), *x.shape[1:]), dtype=x.dtype)
        offs = np.concatenate([[0], np.cumsum(counts)])
        roffs = np.concatenate([[0], np.cumsum(recv_counts)])
        out[roffs[self.rank]:roffs[self.rank + 1]] = x[offs[self.rank]:offs[self.rank + 1]]
        n = self._nccl
        chunks = []  # alive until groupEnd: NCCL reads them only when the group is launched
        n.groupStart()
        for peer in range(self.size):
            if peer == self.rank:
                continue
            chunk = self._cp.ascontiguousarray(x[offs[peer]:offs[peer + 1]])
            chunks.append(chunk)
            if chunk.size:
                self.nccl.send(chunk.data.ptr, chunk.size, self._dtype(x), peer, self._stream())
            dst = out[roffs[peer]:roffs[peer + 1]]
            if dst.size:
                self.nccl.recv(dst.data.ptr, dst.size, self._dtype(x), peer, self._stream())
        n.groupEnd()
        del chunks
        self._count(sum(c for j, c in enumerate(counts) if j != self.rank)
                    * int(np.prod(x.shape[1:])) * x.itemsize)
        return out, recv_counts

    def send(self, x, dest, tag=0):
        if self._on_host(x):
            return self._mpi.send(x, dest, tag)
        x = self._cp.ascontiguousarray(x)
        self._count(x.nbytes)
        self.nccl.send(x.data.ptr, x.size, self._dtype(x), dest, self._stream())

    def recv(self, like, source, tag=0):
        if isinstance(like, np.ndarray):
            return self._mpi.recv(like, source, tag)
        if isinstance(like, tuple) and len(like) == 2:
            out = self._cp.empty(like[0], dtype=like[1])
        else:
            out = self._cp.empty_like(like)
        self.nccl.recv(out.data.ptr, out.size, self._dtype(out), source, self._stream())
        return out

    def isend(self, x, dest, tag=0):
        self.send(x, dest, tag)
        return Handle(value=x)

    def irecv(self, like, source, tag=0):
        return Handle(value=self.recv(like, source, tag))

    def barrier(self):
        self._cp.cuda.get_current_stream().synchronize()
        self._mpi.barrier()

    def bcast_object(self, obj, root=0):
        return self._mpi.bcast_object(obj, root)

    def allgather_object(self, obj):
        return self._mpi.allgather_object(obj)

    def split(self, color, key=None):
        sub = self._mpi.split(color, key)
        return sub if sub.size == 1 else NCCLComm(sub)
