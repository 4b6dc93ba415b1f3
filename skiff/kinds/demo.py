"""Kind ``demo``: a small job that exercises the machinery: steps with progress and a metric,
and on several MPI ranks an all-reduce whose sum every rank checks. No grammar: it is
launched from Python (``skiff.launch("demo", {"steps": 5}, np=2)``)."""

from __future__ import annotations

import difflib
import os
import time

import numpy as np

from skiff.kernels.backend.report import Reporter

from .base import Kind

__all__ = ["run", "KIND"]


def run(config: dict, reporter: Reporter) -> dict:
    """Config: ``steps`` (10), ``sleep`` seconds a step (0.05), ``fail_at`` (a step that
    raises), ``size`` of the all-reduced array (4); ``hold_at`` (a step) and ``hold_until``
    (a path): before that step the job waits, running, until the file exists (or a cancel),
    so that a test sees it running for as long as it needs, however loaded the machine;
    ``deaf_rank``: a rank that never stops on a cancel (its peers' stop leaves it waiting in
    the all-reduce, as in a kind whose ranks do not agree on the stop); ``late_rank``: a
    rank that sees a cancel one step after its peers (as the load makes it: the ranks agree
    on the stop at each step, so it stops with them); ``split``:
    the ranks share the work (``reporter.split_progress()``: each rank's steps are its part,
    the job's progress their sum, each rank's part in the Jobs sidebar's tab);
    ``never_asks``: no rank ever asks ``should_stop`` (a kind in one long step: a direct
    solve, a model loading; only a SIGTERM's fallback or the launcher stops it);
    ``raise_on_stop``: a stop raises ``JobCancelled`` (as a solve does) instead of returning;
    ``after_until`` (a path): after its last step the job says what it does then (as an
    ocr-rec run exports and reads its held-out crops for minutes) and waits, running, until
    the file exists (or a cancel)."""
    steps = int(config.get("steps", 10))
    sleep = float(config.get("sleep", 0.05))
    fail_at = config.get("fail_at")
    comm = None
    if reporter.world_size > 1:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    rank = comm.Get_rank() if comm else 0
    size = comm.Get_size() if comm else 1
    if config.get("split") and comm is not None:
        reporter.split_progress()
    total = None
    deaf = config.get("deaf_rank")  # a rank that reads no cancel (and does not agree on one)
    late = config.get("late_rank")  # a rank that sees a cancel one step after its peers
    # the ranks agree on the stop (round 43): each read the cancel file on its own (a look
    # every 0.1 s), so under load one rank saw it a step before its peer, returned, and left
    # the peer in that step's all-reduce for ever (a SIGTERM'd rank's stop has no escalation
    # to end it). Not with a deaf rank: it stands for a kind whose ranks do not agree.
    agree = comm is not None and deaf is None
    before = False
    for step in range(1, steps + 1):
        mine = False if config.get("never_asks") else (reporter.should_stop() and rank != deaf)
        if rank == late:
            mine, before = before, mine
        if agree:
            flags = np.array([float(mine)])
            comm.Allreduce(np.array([float(mine)]), flags, op=MPI.MAX)
            if flags[0] > 0 and not mine:
                _seen(reporter)  # a peer's stop: this rank's status says "cancelled" too
            mine = bool(flags[0] > 0)
        if mine:
            reporter.log(f"stopping at step {step}")
            if config.get("raise_on_stop"):  # as a solve stops: JobCancelled raised
                from skiff.kernels.backend.report import JobCancelled

                raise JobCancelled("cancelled by request")
            return {"steps": step - 1, "stopped": True}
        if config.get("hold_at") is not None and step == int(config["hold_at"]):
            if not _held(str(config["hold_until"]), reporter):
                reporter.log(f"stopping at step {step}")
                return {"steps": step - 1, "stopped": True}
        if fail_at is not None and step == int(fail_at):
            raise RuntimeError(f"demo job failed on purpose at step {step}")
        local = np.full(int(config.get("size", 4)), float(rank + 1) * step)
        if comm is not None:
            summed = np.empty_like(local)
            comm.Allreduce(local, summed)
        else:
            summed = local
        expected = step * size * (size + 1) / 2
        if not np.allclose(summed, expected):
            raise RuntimeError(f"allreduce gave {summed[0]}, expected {expected}")
        total = float(summed[0])
        reporter.metric("value", total, step=step)
        reporter.progress(step, steps)
        time.sleep(sleep)
    if config.get("after_until") is not None:
        reporter.log("checking the sums after the last step")
        while not os.path.exists(str(config["after_until"])):
            if reporter.should_stop():
                return {"steps": steps, "stopped": True}
            time.sleep(0.05)
    reporter.log(f"finished {steps} steps on {size} rank(s)")
    return {"steps": steps, "ranks": size, "allreduce": total}


def _seen(reporter: Reporter, limit: float = 2.0) -> None:
    """Wait (bounded) until this rank's own look at the cancel file sees the stop its peer
    saw: it looks every 0.1 s, and the job's status is "cancelled" only where rank 0 was
    told to stop (``returned_status``)."""
    end = time.monotonic() + limit
    while not reporter.should_stop() and time.monotonic() < end:
        time.sleep(0.02)


def _held(path: str, reporter: Reporter) -> bool:
    """Wait until ``path`` exists: True, or False when the job is asked to stop first. The
    progress so far is written first (a throttled last step would show only after)."""
    reporter.flush()
    reporter.log(f"holding until {path} exists")
    while not os.path.exists(path):
        if reporter.should_stop():
            return False
        time.sleep(0.05)
    return True


_SETTINGS = ("steps", "sleep", "fail_at", "size", "hold_at", "hold_until", "deaf_rank",
             "late_rank", "split", "never_asks", "raise_on_stop", "after_until")


class DemoKind(Kind):
    name = "demo"
    entry = "skiff.kinds.demo:run"

    def check_launch(self, config: dict, *, ranks: int) -> None:
        """One line before the job starts for a value the run would misread (the tour's first
        cell: ``{"steps": -1}`` ran "done" with no step, ``{"stpes": 5}`` ran the default 10)."""
        for key in config:
            close = difflib.get_close_matches(str(key), _SETTINGS, n=1, cutoff=0.8)
            if key not in _SETTINGS and close:
                raise ValueError(f"demo: unknown setting {key!r} (did you mean {close[0]!r}?)")
        for key, low, what in (("steps", 1, "a whole number of steps, 1 or more"),
                               ("sleep", 0, "seconds a step, 0 or more")):
            value = config.get(key, low)
            try:
                ok = not isinstance(value, bool) and float(value) >= low
                ok = ok and (key != "steps" or float(value) == int(value))
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ValueError(f"demo: {key} must be {what}, got {value!r}")


KIND = DemoKind()
