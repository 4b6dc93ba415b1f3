"""The NCCL communicator: GPU (cupy) arrays through ``cupy.cuda.nccl``, bootstrapped over an
:class:`~.comm.MPIComm` (the unique ids are broadcast over it). Written and gated: it needs a
GPU; ``tests/gpu_readiness`` checks it against a recording fake of cupy and NCCL.

Streams and events, so that nothing blocks the host:

* every collective runs on the communicator's own stream, after an event recorded on the
  caller's current stream (the inputs are ready), and the current stream then waits on an event
  recorded after it: results are ordered for the caller's next kernels, the host never waits.
  ``i``-variants return a :class:`~.comm.Handle` whose ``wait`` does that join (``test`` asks
  the event), so a gradient bucket's all-reduce overlaps the backward pass that follows;
* point-to-point messages go over two more NCCL communicators, one per direction (to a higher
  rank, to a lower rank), each on its own stream. A send to a neighbour therefore never waits
  behind a receive from that neighbour in one queue: two stages that send to each other and then
  receive (the 1F1B pipeline's steady state) both complete, as with MPI's ``Isend``.

Tags: NCCL has none. Messages between two ranks in one direction are delivered in the order they
are posted, which is the order the pipeline posts them on both sides. The tag travels with the
message (one int64 in the same NCCL group) and the receiver compares it when it waits, so a
schedule that relied on tag matching to reorder messages fails with both tags named instead of
silently swapping tensors (``check_tags=False`` skips the check and its 8-byte host read).
"""

from __future__ import annotations

import numpy as np

from .comm import Comm, Handle, MPIComm, _check_op

__all__ = ["NCCLComm", "nccl_available"]


def nccl_available() -> bool:
    """True when cupy sees a GPU and can load libnccl."""
    from skiff.kernels.backend import cupy

    if cupy() is None:
        return False
    try:
        from cupy.cuda import nccl
    except ImportError:
        return False
    return bool(getattr(nccl, "available", False))


class NCCLComm(Comm):
    """GPU arrays through NCCL (``cupy.cuda.nccl``), bootstrapped over an :class:`MPIComm`.

    Sizes, reductions and results follow the MPI engine. Object messages, splitting and host
    (numpy) arrays, such as metrics, go through the MPI communicator underneath. Each rank must
    own its GPU (``--device auto`` picks GPU ``local_rank % count``); NCCL refuses two ranks on
    one device. Every ``i``-operation's handle must be waited on: it keeps the buffers alive
    until the stream that uses them is joined.
    """

    backend = "nccl"
    LANES = ("coll", "up", "down")  # collectives; messages to a higher rank; to a lower rank

    def __init__(self, mpi: MPIComm, *, check_tags: bool = True):
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
        self.check_tags = bool(check_tags)
        # three communicators, made by every rank in the same order (NCCL init is collective)
        uids = [nccl.get_unique_id() for _ in self.LANES] if mpi.rank == 0 else None
        uids = mpi.bcast_object(uids, root=0)
        comms = [nccl.NcclCommunicator(self.size, uid, self.rank) for uid in uids]
        self.nccl = comms[0]
        self._comms = dict(zip(self.LANES, comms))
        self._streams = {lane: cp.cuda.Stream(non_blocking=True) for lane in self.LANES}

    # --- streams ---------------------------------------------------------------------------
    def _event(self):
        return self._cp.cuda.Event(disable_timing=True)

    def _enqueue(self, lane: str, launch):
        """Run ``launch(stream_ptr)`` on ``lane``'s stream after the work queued so far on the
        current stream; returns the event recorded after it (the host does not wait)."""
        stream = self._streams[lane]
        ready = self._event()
        ready.record(self._cp.cuda.get_current_stream())
        stream.wait_event(ready)
        launch(stream.ptr)
        done = self._event()
        done.record(stream)
        return done

    def _join(self, done) -> None:
        """Order the current stream after ``done`` (kernels queued next see the results)."""
        self._cp.cuda.get_current_stream().wait_event(done)

    def _handle(self, done, finish, *keep_alive) -> Handle:
        def wait():
            self._join(done)
            return finish()

        handle = Handle(wait, test_fn=lambda: bool(done.done))
        handle._buffers = keep_alive  # freed only after the join (the pool reuses memory)
        return handle

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

    def _on_host(self, x) -> bool:
        return not isinstance(x, self._cp.ndarray)

    def allreduce_(self, x, op="sum"):
        if self._on_host(x):
            return self._mpi.allreduce_(x, op)
        if not x.flags.c_contiguous:
            raise ValueError("allreduce_ needs a C-contiguous array")
        return self.iallreduce_(x, op).wait()

    def iallreduce_(self, x, op="sum"):
        if self._on_host(x):
            return self._mpi.iallreduce_(x, op)
        if not x.flags.c_contiguous:
            raise ValueError("iallreduce_ needs a C-contiguous array")
        p = self.size
        self._count(2 * x.nbytes * (p - 1) / p)
        dtype, nop = self._dtype(x), self._op(op)
        done = self._enqueue("coll", lambda s: self.nccl.allReduce(
            x.data.ptr, x.data.ptr, x.size, dtype, nop, s))

        def finish():
            if op == "mean":
                x[...] /= p
            return x

        return self._handle(done, finish, x)

    def reduce_scatter(self, x, op="sum"):
        if self._on_host(x):
            return self._mpi.reduce_scatter(x, op)
        x = self._cp.ascontiguousarray(x.reshape(-1))
        p = self.size
        if x.size % p:
            raise ValueError(f"reduce_scatter needs a length divisible by {p}, got {x.size}")
        out = self._cp.empty(x.size // p, dtype=x.dtype)
        self._count(x.nbytes * (p - 1) / p)
        dtype, nop = self._dtype(x), self._op(op)
        self._join(self._enqueue("coll", lambda s: self.nccl.reduceScatter(
            x.data.ptr, out.data.ptr, out.size, dtype, nop, s)))
        if op == "mean":
            out /= p
        return out

    def allgather(self, x):
        if self._on_host(x):
            return self._mpi.allgather(x)
        x = self._cp.ascontiguousarray(x)
        out = self._cp.empty((self.size, *x.shape), dtype=x.dtype)
        self._count(x.nbytes * (self.size - 1))
        dtype = self._dtype(x)
        self._join(self._enqueue("coll", lambda s: self.nccl.allGather(
            x.data.ptr, out.data.ptr, x.size, dtype, s)))
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
        dtype = self._dtype(out)
        self._join(self._enqueue("coll", lambda s: self.nccl.bcast(
            out.data.ptr, out.size, dtype, root, s)))
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
        dtype = self._dtype(x)
        # copies made on the current stream before the lane waits on it; alive until the join
        chunks = {peer: self._cp.ascontiguousarray(x[offs[peer]:offs[peer + 1]])
                  for peer in range(self.size) if peer != self.rank}

        def launch(stream):
            self._nccl.groupStart()
            for peer, chunk in chunks.items():
                if chunk.size:
                    self.nccl.send(chunk.data.ptr, chunk.size, dtype, peer, stream)
                dst = out[roffs[peer]:roffs[peer + 1]]
                if dst.size:
                    self.nccl.recv(dst.data.ptr, dst.size, dtype, peer, stream)
            self._nccl.groupEnd()

        self._join(self._enqueue("coll", launch))  # the chunks may be freed after the join
        self._count(sum(c for j, c in enumerate(counts) if j != self.rank)
                    * int(np.prod(x.shape[1:])) * x.itemsize)
        return out, recv_counts

    # --- point to point: one communicator and stream per direction -------------------------
    @staticmethod
    def _lane(src: int, dst: int) -> str:
        return "up" if dst > src else "down"

    def _tag_buffer(self, tag: int):
        return self._cp.asarray(np.array([tag], dtype=np.int64))

    def isend(self, x, dest, tag=0):
        if self._on_host(x):
            return self._mpi.isend(x, dest, tag)
        x = self._cp.ascontiguousarray(x)
        dtype, lane = self._dtype(x), self._lane(self.rank, dest)
        comm, n = self._comms[lane], self._nccl
        header = self._tag_buffer(tag) if self.check_tags else None
        self._count(x.nbytes)

        def launch(stream):
            n.groupStart()
            if header is not None:
                comm.send(header.data.ptr, 1, n.NCCL_INT64, dest, stream)
            comm.send(x.data.ptr, x.size, dtype, dest, stream)
            n.groupEnd()

        return self._handle(self._enqueue(lane, launch), lambda: x, x, header)

    def send(self, x, dest, tag=0):
        if self._on_host(x):
            return self._mpi.send(x, dest, tag)
        self.isend(x, dest, tag).wait()

    def _host_like(self, like) -> bool:
        return not (isinstance(like, tuple) and len(like) == 2) and self._on_host(like)

    def irecv(self, like, source, tag=0):
        if self._host_like(like):
            return self._mpi.irecv(like, source, tag)
        if isinstance(like, tuple) and len(like) == 2:
            out = self._cp.empty(like[0], dtype=like[1])
        else:
            out = self._cp.empty_like(like)
        dtype, lane = self._dtype(out), self._lane(source, self.rank)
        comm, n = self._comms[lane], self._nccl
        header = self._cp.empty(1, dtype=np.int64) if self.check_tags else None

        def launch(stream):
            n.groupStart()
            if header is not None:
                comm.recv(header.data.ptr, 1, n.NCCL_INT64, source, stream)
            comm.recv(out.data.ptr, out.size, dtype, source, stream)
            n.groupEnd()

        done = self._enqueue(lane, launch)

        def finish():
            if header is not None:
                done.synchronize()  # the one host wait: 8 bytes, to compare the tags
                got = int(self._cp.asnumpy(header)[0])
                if got != int(tag):
                    raise RuntimeError(
                        f"rank {self.rank} waited for tag {tag} from rank {source}, but the next "
                        f"message on that link carries tag {got}: NCCL delivers messages between "
                        "two ranks in the order they are sent, so post receives in that order")
            return out

        return self._handle(done, finish, out, header)

    def recv(self, like, source, tag=0):
        if self._host_like(like):
            return self._mpi.recv(like, source, tag)
        return self.irecv(like, source, tag).wait()

    def barrier(self):
        for stream in self._streams.values():
            stream.synchronize()
        self._cp.cuda.get_current_stream().synchronize()
        self._mpi.barrier()

    def bcast_object(self, obj, root=0):
        return self._mpi.bcast_object(obj, root)

    def allgather_object(self, obj):
        return self._mpi.allgather_object(obj)

    def split(self, color, key=None):
        sub = self._mpi.split(color, key)
        return sub if sub.size == 1 else NCCLComm(sub, check_tags=self.check_tags)
