"""Round 33 (h6): the first dead rank when the watcher looks only after mpiexec's clean-up.

``test_sigkill_of_one_rank...`` (``test_process_jobs.py``) failed under load ~25: rank 1 was
SIGKILLed, Hydra's clean-up killed rank 0 milliseconds later, and the job's watcher thread
(starved) looked only after both: ``RankWatch`` took the first ready pidfd (rank 0's, the
first registered) as the cause, or mpiexec's exit was seen first and, MPICH 5 printing no
pid line, the job said only "mpiexec exited with code ...". Now every death one look finds
is weighed: a rank whose process is gone (its proxy reaped it, then killed the others)
before one still a zombie; several still alike are named together as such; and mpiexec's
exit first takes the deaths already signalled (``wait(0)``). The oracle: stand-in ranks
whose order of death and reaping the test itself decides.
"""

from __future__ import annotations

import subprocess
import time

from skiff.jobs.process import RankWatch, _death_message


def _ranks(tmp_path, n=2):
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (tmp_path / "logs").mkdir()
    procs = [subprocess.Popen(["sleep", "30"]) for _ in range(n)]
    for r, p in enumerate(procs):
        (ranks / f"{r}.pid").write_text(str(p.pid))
    return ranks, procs


def _dead(proc, reap: bool):
    proc.kill()
    if reap:
        proc.wait()
    else:  # dead, not yet reaped: a zombie until its parent waits
        end = time.monotonic() + 10
        while time.monotonic() < end:
            with open(f"/proc/{proc.pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
            time.sleep(0.01)
        raise AssertionError("no zombie")


def test_the_reaped_rank_is_the_cause_when_both_are_seen_at_once(tmp_path):
    ranks, procs = _ranks(tmp_path)
    watch = RankWatch(ranks, 2)
    try:
        assert watch.wait(0.05) is None  # both registered, alive
        _dead(procs[1], reap=True)   # killed and reaped by its proxy ...
        _dead(procs[0], reap=False)  # ... which then kills the other (not reaped yet)
        assert watch.wait(0) == (1, procs[1].pid)  # one look, both dead: no sleep needed
        assert watch.together == [(0, procs[0].pid)]
    finally:
        for p in procs:
            p.kill()
            p.wait()
        watch.close()


def test_ranks_seen_dead_alike_are_named_together(tmp_path):
    ranks, procs = _ranks(tmp_path)
    watch = RankWatch(ranks, 2)
    try:
        assert watch.wait(0.05) is None
        _dead(procs[1], reap=True)
        _dead(procs[0], reap=True)  # both gone before the watcher looked
        first = watch.wait(0)
        assert first is not None and len(watch.together) == 1
        msg = _death_message(tmp_path, *first, watch.together)
        for r, p in enumerate(procs):
            assert f"rank {r} (pid {p.pid})" in msg, msg
        assert "signal 9" in msg and "which died first was not seen" in msg, msg
    finally:
        for p in procs:
            p.kill()
        watch.close()


def test_a_rank_that_left_after_its_peer_is_not_named(tmp_path):
    ranks, procs = _ranks(tmp_path)
    watch = RankWatch(ranks, 2)
    try:
        assert watch.wait(0.05) is None
        (ranks / "0.left").write_text("1")  # the peer watchdog's mark: a follower
        _dead(procs[0], reap=True)
        _dead(procs[1], reap=True)
        assert watch.wait(0) == (1, procs[1].pid) and watch.together == []
    finally:
        for p in procs:
            p.kill()
        watch.close()
