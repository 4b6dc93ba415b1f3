"""The solver's messages between ranks: halo exchange of ghost layers, global sums, and the
gathers of coarse grids and of the final field.

:class:`SolveComm` wraps an mpi4py communicator with the few buffer-based calls the solver
needs (no pickling on the data path) and counts the bytes each rank sends; :class:`SelfComm`
is the one-rank world (every call the identity), so a one-rank distributed solve needs no
MPI. mpi4py is used directly: the training communicator is a sibling kernel the solver may
not import.

:class:`Halo` exchanges the ghost layer of a padded block (one cell on each side of every axis
longer than one cell) with the neighbouring ranks: per axis, non-blocking receives and sends
of the two faces from buffers allocated once, then the ghosts at the grid's edge are filled
(zero for the operator, ``sign * edge`` for the grid transfers, see :mod:`.operator`). Axes
are exchanged one after the other and each face carries the ghost layers of the axes already
done, so edge and corner ghosts are right too (trilinear interpolation needs them).

GPU arrays (cupy) go to MPI as they are when MPI is CUDA-aware (``SKIFF_CUDA_AWARE_MPI=1``, or
MPI says so), else through host buffers; the host path is what runs here.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

__all__ = ["SolveComm", "SelfComm", "Halo", "world_comm", "cuda_aware"]


def cuda_aware(environ=None) -> bool:
    """True when GPU buffers may be handed to MPI (``SKIFF_CUDA_AWARE_MPI``, else MPI's own
    answer where mpi4py can ask; False when unknown)."""
    env = os.environ if environ is None else environ
    flag = env.get("SKIFF_CUDA_AWARE_MPI")
    if flag is not None:
        return flag.strip().lower() in ("1", "yes", "true")
    try:
        from mpi4py import MPI

        query = getattr(MPI, "Query_cuda_support", None)
        return bool(query()) if query is not None else False
    except Exception:
        return False


def _host(a):
    return a if isinstance(a, np.ndarray) else a.get()


class SelfComm:
    """The one-rank world: sums are the value, gathers the local block.

    Counters (this rank): ``halo_bytes`` and ``gather_bytes`` sent, ``reductions``, and the
    time inside MPI calls: ``wait_s`` (wall) and ``wait_cpu`` (CPU: MPICH waits by polling,
    so compute CPU = process CPU - ``wait_cpu`` is the work a rank did, whatever the load)."""

    rank, size = 0, 1

    def __init__(self):
        self.reset()

    def reset(self):
        self.halo_bytes = self.gather_bytes = self.reductions = 0
        self.wait_s = self.wait_cpu = 0.0

    def _start(self):
        return time.perf_counter(), time.process_time()

    def _stop(self, t):
        self.wait_s += time.perf_counter() - t[0]
        self.wait_cpu += time.process_time() - t[1]

    def maximum(self, values) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)

    def allreduce(self, values) -> np.ndarray:
        self.reductions += 1
        return np.asarray(values, dtype=np.float64)

    def allgather_blocks(self, local, dec):
        return _host(local).copy()

    def gather_blocks(self, local, dec, root=0):
        return _host(local).copy()

    def bcast_flag(self, flag: bool) -> bool:
        return bool(flag)


class SolveComm(SelfComm):
    """An mpi4py communicator with the solver's calls; counts the bytes this rank sends."""

    def __init__(self, comm):
        super().__init__()
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        from mpi4py import MPI

        self._mpi = MPI

    def allreduce(self, values) -> np.ndarray:
        """The sum over ranks of a few numbers (one Allreduce)."""
        self.reductions += 1
        send = np.asarray(values, dtype=np.float64).ravel().copy()
        out = np.empty_like(send)
        t = self._start()
        self.comm.Allreduce(send, out, op=self._mpi.SUM)
        self._stop(t)
        return out

    def maximum(self, values) -> np.ndarray:
        """The largest over ranks of a few numbers (for the record, not the solve)."""
        send = np.asarray(values, dtype=np.float64).ravel().copy()
        out = np.empty_like(send)
        self.comm.Allreduce(send, out, op=self._mpi.MAX)
        return out

    def _blocks(self, local, dec):
        counts = [math.prod(hi - lo for lo, hi in dec.block(r)) for r in range(self.size)]
        displs = [0] + list(np.cumsum(counts)[:-1])
        return counts, displs

    def _assemble(self, flat, dec, counts, displs):
        out = np.empty(dec.shape3)
        for r in range(self.size):
            blk = dec.block(r)
            out[tuple(slice(lo, hi) for lo, hi in blk)] = flat[
                displs[r]:displs[r] + counts[r]].reshape([hi - lo for lo, hi in blk])
        return out

    def allgather_blocks(self, local, dec):
        """Every rank's block of a grid, assembled on every rank (one Allgatherv)."""
        counts, displs = self._blocks(local, dec)
        send = np.ascontiguousarray(_host(local)).ravel()
        flat = np.empty(sum(counts))
        t = self._start()
        self.comm.Allgatherv(send, [flat, counts, displs, self._mpi.DOUBLE])
        self._stop(t)
        self.gather_bytes += send.nbytes * (self.size - 1)
        return self._assemble(flat, dec, counts, displs)

    def gather_blocks(self, local, dec, root=0):
        """Every rank's block assembled on ``root`` (None elsewhere; one Gatherv)."""
        counts, displs = self._blocks(local, dec)
        send = np.ascontiguousarray(_host(local)).ravel()
        flat = np.empty(sum(counts)) if self.rank == root else None
        recv = [flat, counts, displs, self._mpi.DOUBLE] if self.rank == root else None
        self.comm.Gatherv(send, recv, root=root)
        if self.rank != root:
            self.gather_bytes += send.nbytes
            return None
        return self._assemble(flat, dec, counts, displs)

    def bcast_flag(self, flag: bool) -> bool:
        """Rank 0's flag on every rank (the stop decision)."""
        t = self._start()
        flag = bool(self.comm.bcast(bool(flag), root=0))
        self._stop(t)
        return flag


def world_comm():
    """The solver's view of ``MPI.COMM_WORLD`` (a :class:`SelfComm` on one rank, without
    initialising MPI outside an MPI launch)."""
    from skiff.kernels.backend.launch_env import launch_env

    if launch_env().size <= 1:
        return SelfComm()
    from mpi4py import MPI

    return SolveComm(MPI.COMM_WORLD)


class Halo:
    """Ghost-layer exchange for the padded blocks of one grid level.

    ``pad[ax]`` is 1 for the axes that carry a ghost layer (every axis longer than one cell),
    ``peers[ax] = (below, above)`` the neighbouring ranks (None at the grid's edge), ``signs``
    the six ghost factors of the sides (-1 Dirichlet, +1 Neumann: the grid transfers' ghost is
    ``sign * edge``)."""

    def __init__(self, comm, padded_shape, pad, peers, signs, xp=np):
        self.comm = comm
        self.shape = tuple(padded_shape)
        self.pad = tuple(pad)
        self.peers = [tuple(p) for p in peers]
        self.signs = [float(s) for s in np.asarray(signs, dtype=np.float64)]
        self.xp = xp
        gpu = xp is not np
        self.direct = (not gpu) or cuda_aware()
        self.buffers = {}
        for ax in range(3):
            if not self.pad[ax] or self.peers[ax] == (None, None):
                continue
            face = self.shape[:ax] + self.shape[ax + 1:]
            mod = xp if self.direct else np
            self.buffers[ax] = [mod.empty(face) for _ in range(4)]  # send lo/hi, recv lo/hi

    def exchange(self, up, edge: str = "zero"):
        """Fill the ghost layer of the padded block ``up`` in place: the neighbours' faces,
        and at the grid's edge zero (``edge="zero"``) or ``sign * edge cell`` (``"signs"``)."""
        for ax in range(3):
            if not self.pad[ax]:
                continue
            v = self.xp.moveaxis(up, ax, 0)
            lo, hi = self.peers[ax]
            if ax in self.buffers:
                t = self.comm._start()
                self._swap(v, ax, lo, hi)
                self.comm._stop(t)
            for end, peer, inner, side in ((0, lo, 1, 2 * ax), (-1, hi, -2, 2 * ax + 1)):
                if peer is None:
                    if edge == "zero":
                        v[end] = 0.0
                    else:
                        v[end] = self.signs[side] * v[inner]
        return up

    def _swap(self, v, ax, lo, hi):
        mpi = self.comm._mpi
        comm = self.comm.comm
        send_lo, send_hi, recv_lo, recv_hi = self.buffers[ax]
        reqs = []
        if self.xp is not np and self.direct:
            self.xp.cuda.get_current_stream().synchronize()
        for peer, recv, tag in ((lo, recv_lo, 2 * ax + 1), (hi, recv_hi, 2 * ax)):
            if peer is not None:
                reqs.append(comm.Irecv(recv, source=peer, tag=tag))
        for peer, send, inner, tag in ((lo, send_lo, 1, 2 * ax), (hi, send_hi, -2, 2 * ax + 1)):
            if peer is not None:
                if self.direct:
                    send[...] = v[inner]
                else:
                    send[...] = v[inner].get()
                if self.direct and self.xp is not np:
                    self.xp.cuda.get_current_stream().synchronize()
                reqs.append(comm.Isend(send, dest=peer, tag=tag))
                self.comm.halo_bytes += send.nbytes
        mpi.Request.Waitall(reqs)
        if lo is not None:
            v[0] = recv_lo if self.direct else self.xp.asarray(recv_lo)
        if hi is not None:
            v[-1] = recv_hi if self.direct else self.xp.asarray(recv_hi)
