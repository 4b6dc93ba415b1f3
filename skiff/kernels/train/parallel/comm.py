"""Communicators: the collectives distributed training is built from.

A :class:`Comm` moves arrays between the ranks of one group. Three engines share one API:

* :class:`SelfComm` -- one rank, no engine: every collective is the identity, so every code
  path of data, tensor, pipeline and expert parallelism runs in a single process.
* :class:`MPIComm` -- host (numpy) arrays over MPI through mpi4py's buffer-based calls
  (``Allreduce``, ``Reduce_scatter``, ``Allgather``, ``Alltoallv``, ``Isend``/``Irecv``,
  ``Iallreduce``), which never pickle.
* :class:`NCCLComm` -- GPU (cupy) arrays through ``cupy.cuda.nccl``; the unique id is
  broadcast over the MPI communicator it is built on. Written and gated: it needs a GPU.

Every call counts the bytes this rank puts on the wire (``bytes_sent``, the textbook volume of
the algorithm: a ring all-reduce of ``n`` bytes over ``p`` ranks sends ``2 n (p-1)/p``), so the
benchmarks and the planner speak of the same quantity.

Example (one rank)::

    >>> import numpy as np
    >>> comm = SelfComm()
    >>> comm.allreduce(np.arange(3.0)).tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

import functools
import pickle

import numpy as np

from skiff.kernels.backend.launch_env import launched_by_mpi

__all__ = ["Comm", "SelfComm", "MPIComm", "NCCLComm", "Handle", "world", "REDUCE_OPS"]

REDUCE_OPS = ("sum", "mean", "max", "min")


def _check_op(op: str) -> str:
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduce op {op!r}: choose from {', '.join(REDUCE_OPS)}")
    return op


def _cupy_of(x):
    """The cupy module when ``x`` is a cupy array, else None."""
    from skiff.kernels.backend import cupy

    cp = cupy()
    return cp if cp is not None and isinstance(x, cp.ndarray) else None


def _back_to_device(cp, out):
    """Host results of a staged call, moved back to the device (counts stay lists)."""
    if isinstance(out, np.ndarray):
        return cp.asarray(out)
    if isinstance(out, tuple):
        return tuple(_back_to_device(cp, o) for o in out)
    if isinstance(out, Handle):
        return Handle(lambda: _back_to_device(cp, out.wait()), test_fn=out.test)
    return out


def _host_staged(method):
    """Let an :class:`MPIComm` call take a cupy array: MPI is not assumed CUDA-aware, so the
    array goes through host memory and array results come back to the device."""

    @functools.wraps(method)
    def run(self, x, *args, **kwargs):
        cp = _cupy_of(x)
        if cp is None:
            return method(self, x, *args, **kwargs)
        return _back_to_device(cp, method(self, cp.asnumpy(x), *args, **kwargs))

    return run


class Handle:
    """A pending non-blocking operation; :meth:`wait` finishes it and returns its result."""

    def __init__(self, wait_fn=None, value=None, test_fn=None):
        self._wait_fn = wait_fn
        self._test_fn = test_fn
        self._value = value
        self._done = wait_fn is None

    def wait(self):
        if not self._done:
            self._value = self._wait_fn()
            self._done = True
        return self._value

    def test(self) -> bool:
        """True once the operation could finish without waiting; also lets MPI progress it
        (MPI moves a non-blocking collective forward only inside MPI calls)."""
        if not self._done and self._test_fn is not None:
            return bool(self._test_fn())
        return self._done

    @property
    def done(self) -> bool:
        return self._done


class Comm:
    """A group of ``size`` ranks; this process is ``rank``.

    Collectives take and return arrays (numpy for MPI and self, cupy for NCCL). Results are new
    arrays unless the name ends in ``_`` (in place). Non-blocking variants start with ``i`` and
    return a :class:`Handle`.
    """

    rank: int = 0
    size: int = 1
    backend: str = "self"

    def __init__(self):
        self.bytes_sent = 0
        self.calls = 0

    # --- accounting ------------------------------------------------------------------------
    def _count(self, nbytes: float) -> None:
        self.bytes_sent += int(nbytes)
        self.calls += 1

    def reset_stats(self) -> None:
        self.bytes_sent = 0
        self.calls = 0

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def __repr__(self) -> str:
        return f"<{type(self).__name__} rank {self.rank}/{self.size}>"

    # --- collectives (overridden per engine) ------------------------------------------------
    def allreduce_(self, x, op: str = "sum"):
        """All-reduce ``x`` in place and return it."""
        _check_op(op)
        return x

    def allreduce(self, x, op: str = "sum"):
        """The elementwise reduction of ``x`` over the ranks (``op`` in sum, mean, max, min)."""
        return self.allreduce_(x.copy(), op)

    def iallreduce_(self, x, op: str = "sum") -> Handle:
        """Start an in-place all-reduce; ``handle.wait()`` returns ``x`` reduced."""
        return Handle(value=self.allreduce_(x, op))

    def reduce_scatter(self, x, op: str = "sum"):
        """Reduce the flat ``x`` (length divisible by ``size``) and keep this rank's chunk."""
        _check_op(op)
        x = x.reshape(-1)
        if x.size % self.size:
            raise ValueError(f"reduce_scatter needs a length divisible by {self.size}, "
                             f"got {x.size}")
        return x.copy()

    def allgather(self, x):
        """Concatenate every rank's ``x`` (equal shapes) along a new leading axis."""
        return x.reshape(1, *x.shape).copy()

    def allgatherv(self, x):
        """Concatenate every rank's flat ``x`` (lengths may differ); returns (all, counts)."""
        x = x.reshape(-1)
        return x.copy(), [int(x.size)]

    def broadcast(self, x, root: int = 0):
        """``root``'s ``x`` on every rank (``x`` gives shape and dtype elsewhere)."""
        return x.copy()

    def alltoallv(self, x, send_counts):
        """Send ``x[offsets[j]:offsets[j]+send_counts[j]]`` (along axis 0) to rank ``j``.

        Returns ``(received, recv_counts)``: the rows from every rank, in rank order.
        """
        counts = [int(c) for c in send_counts]
        if len(counts) != self.size or sum(counts) != x.shape[0]:
            raise ValueError(f"alltoallv: send_counts {counts} must have {self.size} entries "
                             f"summing to {x.shape[0]}")
        return x.copy(), counts

    def send(self, x, dest: int, tag: int = 0) -> None:
        raise RuntimeError("a one-rank communicator has no peer to send to")

    def recv(self, like, source: int, tag: int = 0):
        """Receive an array shaped and typed like ``like`` (an array or (shape, dtype))."""
        raise RuntimeError("a one-rank communicator has no peer to receive from")

    def isend(self, x, dest: int, tag: int = 0) -> Handle:
        raise RuntimeError("a one-rank communicator has no peer to send to")

    def irecv(self, like, source: int, tag: int = 0) -> Handle:
        raise RuntimeError("a one-rank communicator has no peer to receive from")

    def barrier(self) -> None:
        pass

    def bcast_object(self, obj, root: int = 0):
        """A small picklable object from ``root`` (for flags, layouts, manifests)."""
        return obj

    def allgather_object(self, obj) -> list:
        return [obj]

    def split(self, color: int, key: int | None = None) -> Comm:
        """The sub-group of ranks that passed the same ``color``, ordered by ``key``."""
        return SelfComm()

    def agree_stop(self, local_stop: bool) -> bool:
        """Rank 0 decides whether to stop; every rank gets the same answer (step boundary)."""
        return bool(self.bcast_object(bool(local_stop), root=0))


class SelfComm(Comm):
    """The one-rank group: every collective is the identity; nothing is sent."""

    backend = "self"


# --------------------------------------------------------------------------------------------
class MPIComm(Comm):
    """Host arrays over MPI (mpi4py, buffer-based calls only on the data path)."""

    backend = "mpi"

    def __init__(self, mpi_comm=None):
        super().__init__()
        from mpi4py import MPI

        self._MPI = MPI
        self.mpi = mpi_comm if mpi_comm is not None else MPI.COMM_WORLD
        self.rank = self.mpi.Get_rank()
        self.size = self.mpi.Get_size()

    def _op(self, op: str):
        MPI = self._MPI
        return {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[_check_op(op)]

    @staticmethod
    def _contig(x):
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)

    def allreduce_(self, x, op="sum"):
        cp = _cupy_of(x)
        if cp is not None:  # through host memory (see _host_staged)
            x[...] = cp.asarray(self.allreduce_(cp.asnumpy(x), op))
            return x
        if not x.flags.c_contiguous:
            raise ValueError("allreduce_ needs a C-contiguous array")
        p = self.size
        self._count(2 * x.nbytes * (p - 1) / p)
        self.mpi.Allreduce(self._MPI.IN_PLACE, x, op=self._op(op))
        if op == "mean":
            x /= p
        return x

    def iallreduce_(self, x, op="sum"):
        cp = _cupy_of(x)
        if cp is not None:
            host = cp.asnumpy(x)
            pending = self.iallreduce_(host, op)

            def finish_device():
                pending.wait()
                x[...] = cp.asarray(host)
                return x

            return Handle(finish_device, test_fn=pending.test)
        if not x.flags.c_contiguous:
            raise ValueError("iallreduce_ needs a C-contiguous array")
        p = self.size
        self._count(2 * x.nbytes * (p - 1) / p)
        req = self.mpi.Iallreduce(self._MPI.IN_PLACE, x, op=self._op(op))

        def finish():
            req.Wait()
            if op == "mean":
                x[...] /= p
            return x

        return Handle(finish, test_fn=req.Test)

    @_host_staged
    def reduce_scatter(self, x, op="sum"):
        _check_op(op)
        x = self._contig(x.reshape(-1))
        p = self.size
        if x.size % p:
            raise ValueError(f"reduce_scatter needs a length divisible by {p}, got {x.size}")
        out = np.empty(x.size // p, dtype=x.dtype)
        self._count(x.nbytes * (p - 1) / p)
        self.mpi.Reduce_scatter_block(x, out, op=self._op(op))
        if op == "mean":
            out /= p
        return out

    @_host_staged
    def allgather(self, x):
        x = self._contig(x)
        out = np.empty((self.size, *x.shape), dtype=x.dtype)
        self._count(x.nbytes * (self.size - 1))
        self.mpi.Allgather(x, out)
        return out

    @_host_staged
    def allgatherv(self, x):
        x = self._contig(x.reshape(-1))
        counts = self.mpi.allgather(int(x.size))
        out = np.empty(sum(counts), dtype=x.dtype)
        self._count(x.nbytes * (self.size - 1))
        self.mpi.Allgatherv(x, [out, counts])
        return out, counts

    @_host_staged
    def broadcast(self, x, root=0):
        out = self._contig(x).copy()
        if self.rank == root:
            self._count(out.nbytes * (self.size - 1))
        self.mpi.Bcast(out, root=root)
        return out

    @_host_staged
    def alltoallv(self, x, send_counts):
        x = self._contig(x)
        counts = [int(c) for c in send_counts]
        if len(counts) != self.size or sum(counts) != x.shape[0]:
            raise ValueError(f"alltoallv: send_counts {counts} must have {self.size} entries "
                             f"summing to {x.shape[0]}")
        recv_counts = self.mpi.alltoall(counts)
        row = int(np.prod(x.shape[1:], dtype=np.int64))
        out = np.empty((sum(recv_counts), *x.shape[1:]), dtype=x.dtype)
        sc = np.array(counts, dtype=np.int64) * row
        rc = np.array(recv_counts, dtype=np.int64) * row
        sd = np.concatenate([[0], np.cumsum(sc)[:-1]])
        rd = np.concatenate([[0], np.cumsum(rc)[:-1]])
        self._count((sc.sum() - sc[self.rank]) * x.itemsize)
        self.mpi.Alltoallv([x.reshape(-1), (sc, sd)], [out.reshape(-1), (rc, rd)])
        return out, recv_counts

    @_host_staged
    def send(self, x, dest, tag=0):
        x = self._contig(x)
        self._count(x.nbytes)
        self.mpi.Send(x, dest=dest, tag=tag)

    @staticmethod
    def _like(like):
        if isinstance(like, tuple) and len(like) == 2 and not hasattr(like, "shape"):
            return np.empty(like[0], dtype=like[1])
        return np.empty(like.shape, dtype=like.dtype)  # a host buffer, also for a cupy `like`

    def recv(self, like, source, tag=0):
        out = self._like(like)
        self.mpi.Recv(out, source=source, tag=tag)
        cp = _cupy_of(like)
        return out if cp is None else cp.asarray(out)

    @_host_staged
    def isend(self, x, dest, tag=0):
        x = self._contig(x)
        self._count(x.nbytes)
        req = self.mpi.Isend(x, dest=dest, tag=tag)
        return Handle(lambda: (req.Wait(), x)[1])

    def irecv(self, like, source, tag=0):
        out = self._like(like)
        req = self.mpi.Irecv(out, source=source, tag=tag)
        cp = _cupy_of(like)
        return Handle(lambda: (req.Wait(), out if cp is None else cp.asarray(out))[1])

    def barrier(self):
        self.mpi.Barrier()

    def bcast_object(self, obj, root=0):
        if self.rank == root:
            self._count(len(pickle.dumps(obj)) * (self.size - 1))
        return self.mpi.bcast(obj, root=root)

    def allgather_object(self, obj):
        return self.mpi.allgather(obj)

    def split(self, color, key=None):
        sub = self.mpi.Split(int(color), self.rank if key is None else int(key))
        if sub.Get_size() == 1:
            sub.Free()
            return SelfComm()
        return MPIComm(sub)


# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
_WORLD: Comm | None = None


def world(engine: str = "auto") -> Comm:
    """The communicator of every rank of this job.

    ``engine``: ``auto`` (MPI when launched by mpiexec/srun with more than one rank, else the
    one-rank group), ``self``, ``mpi`` or ``nccl`` (GPU arrays; needs a GPU and MPI).
    """
    global _WORLD
    if engine not in ("auto", "self", "mpi", "nccl"):
        raise ValueError(f"unknown communicator engine {engine!r}: choose from auto, self, "
                         "mpi, nccl")
    if engine == "self":
        return SelfComm()
    if engine == "auto" and _WORLD is not None:
        return _WORLD
    if engine == "auto" and not launched_by_mpi():
        _WORLD = SelfComm()
        return _WORLD
    mpi = MPIComm()
    if engine == "nccl":
        return NCCLComm(mpi)
    comm: Comm = mpi if mpi.size > 1 else SelfComm()
    if engine == "auto":
        _WORLD = comm
    return comm
