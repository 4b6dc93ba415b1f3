"""Ranks as threads of one process for the row split's tests (``parallel/rows.py``,
``parallel/rows_job.py``): an in-process stand-in for the mpi4py calls they make
(``alltoall``, ``Alltoallv``, ``Allreduce``, ``allreduce``, ``allgather``, ``bcast``,
``Allgatherv``, ``Gatherv``), and the shuffled Laplacian both test files solve. The MPI run
of the same code: ``scripts/rows_mpi.py`` and the CLI test of ``test_rows_job_r39h11.py``."""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp


def shuffled_laplacian(n=16, convect=0.0, seed=0):
    """A 2-D Laplacian (plus upwind convection) with its unknowns shuffled: each row block
    reads columns of every other block."""
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    A = sp.kronsum(T, T) + convect * sp.kron(sp.eye(n), sp.diags([-1.0, 1.0], [-1, 0],
                                                                  shape=(n, n)))
    perm = np.random.default_rng(seed).permutation(n * n)
    return sp.csr_matrix(A)[perm][:, perm].tocsr()


class ThreadWorld:
    def __init__(self, size):
        self.size = size
        self.box: list = [None] * size
        self.barrier = threading.Barrier(size)

    def rank(self, r):
        return ThreadRank(self, r)


class ThreadRank:
    """One rank's communicator: every call is a collective over the world's threads."""

    def __init__(self, world, r):
        self.w, self.r = world, r

    def Get_rank(self):
        return self.r

    def Get_size(self):
        return self.w.size

    def _share(self, item):
        self.w.barrier.wait()
        self.w.box[self.r] = item
        self.w.barrier.wait()
        got = list(self.w.box)
        self.w.barrier.wait()
        return got

    def alltoall(self, items):
        return [theirs[self.r] for theirs in self._share(list(items))]

    def Alltoallv(self, send, recv):
        buf, counts, displs, _ = send
        got = self._share([buf[d:d + c].copy() for c, d in zip(counts, displs)])
        out, rcounts, rdispls, _ = recv
        for q in range(self.w.size):
            out[rdispls[q]:rdispls[q] + rcounts[q]] = got[q][self.r]

    def Allreduce(self, send, recv, op=None):
        recv[...] = np.sum(self._share(send.copy()), axis=0)

    def allreduce(self, value):
        return sum(self._share(value))

    def allgather(self, value):
        return self._share(value)

    def bcast(self, value, root=0):
        return self._share(value)[root]

    def Allgatherv(self, send, recv):
        out, counts, displs, _ = recv
        for q, part in enumerate(self._share(send.copy())):
            out[displs[q]:displs[q] + counts[q]] = part

    def Gatherv(self, send, recv, root=0):
        got = self._share(send.copy())
        if self.r == root:
            out, counts, displs, _ = recv
            for q, part in enumerate(got):
                out[displs[q]:displs[q] + counts[q]] = part


def on_threads(size, fn, *, outcomes=False):
    """``fn(comm)`` on ``size`` thread ranks; their results in rank order. A rank's error is
    raised (the world's barrier broken so the others stop), or with ``outcomes`` returned
    in its place (a test of what each rank met)."""
    world, out, errors = ThreadWorld(size), [None] * size, []

    def run(r):
        try:
            out[r] = fn(world.rank(r))
        except BaseException as exc:   # noqa: BLE001 (surfaced below)
            if outcomes:
                out[r] = exc
            else:
                errors.append(exc)
                world.barrier.abort()

    threads = [threading.Thread(target=run, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread rank is stuck"
    if errors:
        raise errors[0]
    return out
