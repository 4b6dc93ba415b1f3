"""Splitting the world into data, tensor, pipeline and expert groups; rank thread limits.

The layout follows the usual nesting, tensor-parallel ranks innermost (they talk most), then
data-parallel, then pipeline stages outermost::

    rank = pp_index * (dp * tp) + dp_index * tp + tp_index

Expert parallelism lives inside the data-parallel group: its ``dp`` ranks form ``dp / ep``
blocks of ``ep`` consecutive ranks that share out the experts (``ep`` group); ranks holding
the same experts (``expert_dp`` group) all-reduce the experts' gradients.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from .comm import Comm, SelfComm

__all__ = ["Layout", "ProcessGroups", "limit_threads"]


@dataclass(frozen=True)
class Layout:
    """The degrees of parallelism: ``dp * tp * pp`` ranks; ``ep`` divides ``dp``."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1

    def __post_init__(self):
        for name in ("dp", "tp", "pp", "ep"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.dp % self.ep:
            raise ValueError(f"ep={self.ep} must divide dp={self.dp}")

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp

    def coords(self, rank: int) -> dict:
        """``{"pp": i, "dp": j, "tp": k, "ep": e}`` for a world rank."""
        tp_i = rank % self.tp
        dp_i = (rank // self.tp) % self.dp
        pp_i = rank // (self.tp * self.dp)
        return {"pp": pp_i, "dp": dp_i, "tp": tp_i, "ep": dp_i % self.ep}

    def rank_of(self, pp: int = 0, dp: int = 0, tp: int = 0) -> int:
        return pp * self.dp * self.tp + dp * self.tp + tp

    def to_json(self) -> dict:
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp, "ep": self.ep}


class ProcessGroups:
    """Sub-communicators of ``world`` for a :class:`Layout`.

    Attributes ``dp``, ``tp``, ``pp``, ``ep`` and ``expert_dp`` are :class:`Comm` objects;
    ``coords`` is this rank's position. Every rank must build the groups (collective call).
    """

    def __init__(self, world: Comm, layout: Layout | None = None):
        layout = layout if layout is not None else Layout(dp=world.size)
        if layout.world_size != world.size:
            raise ValueError(f"layout dp={layout.dp} x tp={layout.tp} x pp={layout.pp} = "
                             f"{layout.world_size} ranks does not match the world of "
                             f"{world.size}")
        self.world = world
        self.layout = layout
        c = layout.coords(world.rank)
        self.coords = c
        if world.size == 1:
            self.dp = self.tp = self.pp = self.ep = self.expert_dp = SelfComm()
            return
        # colors: every rank sharing the other coordinates lands in one group; key = own index
        self.tp = world.split(c["pp"] * layout.dp + c["dp"], c["tp"])
        self.dp = world.split(c["pp"] * layout.tp + c["tp"], c["dp"])
        self.pp = world.split(c["dp"] * layout.tp + c["tp"], c["pp"])
        block = c["dp"] // layout.ep
        self.ep = world.split((c["pp"] * layout.tp + c["tp"]) * layout.dp + block, c["ep"])
        self.expert_dp = world.split((c["pp"] * layout.tp + c["tp"]) * layout.ep + c["ep"],
                                     block)

    def __repr__(self) -> str:
        return (f"<ProcessGroups rank {self.world.rank} {self.coords} of "
                f"{self.layout.to_json()}>")


def limit_threads(n: int | None = None, *, ranks_per_node: int | None = None) -> int:
    """Give this rank its share of the cores for BLAS and numba, so ranks never oversubscribe.

    ``n`` threads, or ``cores // ranks_per_node`` (ranks on this node read from the MPI
    launcher's environment when not given). Uses threadpoolctl (else numpy's OpenBLAS itself,
    :mod:`..blas_threads`) and numba when imported (else ``NUMBA_NUM_THREADS``, which numba
    reads when it is imported, capped at n); the
    process runner has set the ``*_NUM_THREADS`` variables before start already. Returns n.
    """
    if n is None:
        from skiff.kernels.backend import cpu_count
        from skiff.kernels.backend.launch_env import launch_env

        local = ranks_per_node or launch_env().local_size
        n = max(1, cpu_count() // max(1, local))
    n = max(1, int(n))
    from skiff.kernels.backend.split import set_work_threads

    set_work_threads(n)  # the elementwise passes' pieces too
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:  # numpy's OpenBLAS directly: a bare `mpiexec -n 2` gave each
        from ..blas_threads import set as set_blas  # rank's BLAS every core of the node

        set_blas(n)
    numba = sys.modules.get("numba")
    if numba is None:
        # not imported: left to the kernels that use it (round 48 h4: importing it here, and
        # scipy with it, cost each rank of a 2-rank MLP job ~0.3 CPU s), which then start
        # at most n threads: numba reads this variable when it is imported
        now = os.environ.get("NUMBA_NUM_THREADS", "")
        # unset, numba starts one thread a CPU: set only where that is more than n
        if n < (int(now) if now.isdigit() else os.cpu_count() or n):
            os.environ["NUMBA_NUM_THREADS"] = str(n)
        return n
    try:
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    except Exception:
        pass
    return n
