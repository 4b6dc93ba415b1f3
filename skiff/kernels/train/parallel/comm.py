"""Communicators: the :class:`Comm` interface distributed training is built from, and its
host engines.

A :class:`Comm` moves arrays between the ranks of one group. Three engines share one API:

* :class:`SelfComm` -- one rank, no engine: every collective is the identity, so every code
  path of data, tensor, pipeline and expert parallelism runs in a single process.
* :class:`MPIComm` -- host (numpy) arrays over MPI through mpi4py's buffer-based calls
  (``Allreduce``, ``Reduce_scatter``, ``Allgather``, ``Alltoallv``, ``Isend``/``Irecv``,
  ``Iallreduce``), which never pickle.
* :class:`~.nccl.NCCLComm` (in :mod:`.nccl`) -- GPU (cupy) arrays through ``cupy.cuda.nccl``.

:func:`~.world.world` (in :mod:`.world`) picks the job's communicator.

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

__all__ = ["Comm", "SelfComm", "MPIComm", "Handle", "REDUCE_OPS"]

REDUCE_OPS = ("sum", "mean", "max", "min")


def _check_op(op: str) -> str:
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduce op {op!r}: choose from {', '.join(REDUCE_OPS)}")
    return op


def _is_half(x) -> bool:
    """float16 or bfloat16: MPI sums them in float32 here (MPI has no bfloat16, and a float16
    sum over many ranks would round at every step)."""
    dtype = getattr(x, "dtype", None)
    return dtype is not None and dtype.itemsize == 2 and dtype.name in ("float16", "bfloat16")


def _is_bf16(x) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and dtype.name == "bfloat16"


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

    def __deepcopy__(self, memo):
        """Itself: a copy of a model whose layers hold their group (a tp layer's; what
        ``AveragedModel(model)`` or ``copy.deepcopy(model)`` makes of a split model) talks to
        the same ranks (a copy failed "cannot pickle 'module' object")."""
        return self

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

    def reduce_scatter_v(self, x, counts, op: str = "sum"):
        """Reduce the flat ``x`` and keep this rank's piece: rank r gets the ``counts[r]``
        elements after those of ranks 0..r-1 (``sum(counts) == x.size``). This generic form
        all-reduces and slices; engines with a native reduce-scatter override it."""
        _check_op(op)
        x = x.reshape(-1)
        counts = [int(c) for c in counts]
        if len(counts) != self.size or sum(counts) != x.size or min(counts) < 0:
            raise ValueError(f"reduce_scatter_v needs {self.size} non-negative counts adding "
                             f"up to {x.size}, got {counts}")
        lo = sum(counts[:self.rank])
        return self.allreduce(x, op)[lo:lo + counts[self.rank]].copy()

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
        if _is_half(x):
            wide = x.astype(np.float32)
            self.allreduce_(wide, op)
            x[...] = wide
            return x
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
        if _is_half(x):
            wide = x.astype(np.float32)
            pending = self.iallreduce_(wide, op)

            def narrow():
                pending.wait()
                x[...] = wide
                return x

            return Handle(narrow, test_fn=pending.test)
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
        if _is_half(x):
            return self.reduce_scatter(x.astype(np.float32), op).astype(x.dtype)
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
    def reduce_scatter_v(self, x, counts, op="sum"):
        _check_op(op)
        if _is_half(x):
            return self.reduce_scatter_v(x.astype(np.float32), counts, op).astype(x.dtype)
        x = self._contig(x.reshape(-1))
        counts = [int(c) for c in counts]
        if len(counts) != self.size or sum(counts) != x.size or min(counts) < 0:
            raise ValueError(f"reduce_scatter_v needs {self.size} non-negative counts adding "
                             f"up to {x.size}, got {counts}")
        out = np.empty(counts[self.rank], dtype=x.dtype)
        self._count(x.nbytes - out.nbytes)
        self.mpi.Reduce_scatter(x, out, recvcounts=counts, op=self._op(op))
        if op == "mean":
            out /= self.size
        return out

    @_host_staged
    def allgather(self, x):
        if _is_bf16(x):  # bfloat16 travels as its bits
            return self.allgather(x.view(np.uint16)).view(x.dtype)
        x = self._contig(x)
        out = np.empty((self.size, *x.shape), dtype=x.dtype)
        self._count(x.nbytes * (self.size - 1))
        self.mpi.Allgather(x, out)
        return out

    @_host_staged
    def allgatherv(self, x):
        if _is_bf16(x):
            out, counts = self.allgatherv(x.view(np.uint16))
            return out.view(x.dtype), counts
        x = self._contig(x.reshape(-1))
        counts = self.mpi.allgather(int(x.size))
        out = np.empty(sum(counts), dtype=x.dtype)
        self._count(x.nbytes * (self.size - 1))
        self.mpi.Allgatherv(x, [out, counts])
        return out, counts

    @_host_staged
    def broadcast(self, x, root=0):
        if _is_bf16(x):
            return self.broadcast(x.view(np.uint16), root).view(x.dtype)
        out = self._contig(x).copy()
        if self.rank == root:
            self._count(out.nbytes * (self.size - 1))
        self.mpi.Bcast(out, root=root)
        return out

    @_host_staged
    def alltoallv(self, x, send_counts):
        if _is_bf16(x):
            out, counts = self.alltoallv(x.view(np.uint16), send_counts)
            return out.view(x.dtype), counts
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
        x = x.view(np.uint16) if _is_bf16(x) else x
        self._count(x.nbytes)
        self.mpi.Send(x, dest=dest, tag=tag)

    @staticmethod
    def _like(like):
        if isinstance(like, tuple) and len(like) == 2 and not hasattr(like, "shape"):
            return np.empty(like[0], dtype=like[1])
        return np.empty(like.shape, dtype=like.dtype)  # a host buffer, also for a cupy `like`

    def recv(self, like, source, tag=0):
        out = self._like(like)
        self.mpi.Recv(out.view(np.uint16) if _is_bf16(out) else out, source=source, tag=tag)
        cp = _cupy_of(like)
        return out if cp is None else cp.asarray(out)

    @_host_staged
    def isend(self, x, dest, tag=0):
        x = self._contig(x)
        x = x.view(np.uint16) if _is_bf16(x) else x
        self._count(x.nbytes)
        req = self.mpi.Isend(x, dest=dest, tag=tag)
        return Handle(lambda: (req.Wait(), x)[1])

    def irecv(self, like, source, tag=0):
        out = self._like(like)
        req = self.mpi.Irecv(out.view(np.uint16) if _is_bf16(out) else out, source=source,
                             tag=tag)
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
