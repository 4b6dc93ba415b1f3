"""Round 30, as a user: a cancelled ``--np 2`` OCR of 43 images said "12/22 images" (rank 0's
part) when the job had read 24 of its 43. When the kernel says its ranks share the work
(``RunReporter.split_progress``), every rank's part is counted. The oracle: the images each
rank was given (round-robin, as the OCR kernel shares them) and the ones it went through."""

from __future__ import annotations

import pytest

from skiff.jobs import Job
from skiff.jobs.reporter import RunReporter
from skiff.jobs.terminal import live_line, summary

ITEMS = [f"p{i:02d}.png" for i in range(43)]


def _run(job, world: int, read_each: int, *, split: bool = True) -> list[list[str]]:
    reporters = [RunReporter(job.run_dir, rank=r, world_size=world) for r in range(world)]
    job.emit("status", status="running")
    read = []
    for r, rep in enumerate(reporters):
        if split:
            rep.split_progress()
        mine = ITEMS[r::world]
        read.append(mine[:read_each])
        for n, _item in enumerate(read[-1], 1):
            rep.progress(n, len(mine), unit="image")
        rep.flush()
    return read


def test_a_cancelled_two_rank_job_counts_every_ranks_part(runs_dir):
    job = Job.create("demo", {}, target="skiff.kinds.demo:run", runner="process", np=2)
    read = _run(job, 2, 12)
    assert "/43 images" in live_line(job, width=200)
    job.emit("status", status="cancelled")
    job = Job.load(job.id)  # a view reloaded: the same figures from the run folder
    whole = sum(len(part) for part in read)
    assert job.state.total == len(ITEMS) and job.state.done == whole
    assert f"{whole}/{len(ITEMS)} images" in summary(job)


def test_ranks_that_each_do_the_whole_work_are_not_added(runs_dir):
    job = Job.create("demo", {}, target="skiff.kinds.demo:run", runner="process", np=2)
    _run(job, 2, 5, split=False)  # a data-parallel training: every rank the same steps
    job.emit("status", status="cancelled")
    assert Job.load(job.id).state.total == len(ITEMS[0::2])


def test_a_rank_not_heard_from_leaves_the_total_unknown(runs_dir):
    job = Job.create("demo", {}, target="skiff.kinds.demo:run", runner="process", np=3)
    reporters = [RunReporter(job.run_dir, rank=r, world_size=3) for r in range(2)]
    for r, rep in enumerate(reporters):
        rep.split_progress()
        rep.progress(4, len(ITEMS[r::3]), unit="image")
        rep.flush()
    state = Job.load(job.id).state
    assert state.total is None and state.done == 8  # no bar that jumps back when rank 2 says


def split_work(config: dict, reporter) -> dict:
    """A kernel whose ranks share ``items`` round-robin, as OCR's do: each item it goes
    through leaves a file (the oracle); it stops when cancelled, mid-way."""
    import time
    from pathlib import Path

    reporter.split_progress()
    mine = config["items"][reporter.rank::reporter.world_size]
    for n, item in enumerate(mine, 1):
        reporter.check()  # a cancel: JobCancelled, with a progress held back on each rank
        (Path(config["marks"]) / f"{reporter.rank}-{item}").touch()
        reporter.progress(n, len(mine), unit="image")
        time.sleep(0.01)
    return {}


@pytest.mark.mpi
def test_a_cancel_keeps_every_ranks_last_progress(runs_dir, tmp_path):
    from skiff.jobs.launch import _PROCESS
    from tests.jobs.waiting import wait_for

    marks = tmp_path / "marks"
    marks.mkdir()
    job = Job.create("demo", {"items": ITEMS * 40, "marks": str(marks)}, runner="process",
                     target=f"{__name__}:split_work", np=2)
    _PROCESS.start(job, 2)
    wait_for(lambda: job.refresh().done >= 30, 60, "progress")
    job.cancel()
    assert job.wait(60).status == "cancelled"
    job = Job.load(job.id)
    gone_through = len(list(marks.iterdir()))
    assert job.state.total == len(ITEMS) * 40
    assert gone_through - 2 <= job.state.done <= gone_through  # at most the item in hand


def test_the_eta_and_rate_of_a_split_job_are_the_whole_jobs(runs_dir):
    import json
    import time

    from skiff.jobs.split import write_rank_progress

    job = Job.create("demo", {}, target="skiff.kinds.demo:run", runner="process", np=2)
    start = time.time() - 20
    with open(job.run_dir / "events.jsonl", "a") as fh:  # rank 0: 1 image a second
        fh.write(json.dumps({"t": start, "type": "status", "rank": -1, "status": "running"})
                 + "\n")
        fh.write(json.dumps({"t": start, "type": "info", "rank": 0, "progress_split": True})
                 + "\n")
        for n in range(11):
            fh.write(json.dumps({"t": start + n, "type": "progress", "rank": 0, "done": n,
                                 "total": 20, "unit": "image"}) + "\n")
    write_rank_progress(job.run_dir, 1, {"done": 10, "total": 20, "unit": "image"})
    state = Job.load(job.id).state
    assert (state.done, state.total) == (20, 40)
    # each rank has 10 of its 20 left at 1 a second: 10 s, not 30 (40 - 10 at rank 0's rate)
    assert abs(state.eta() - 10) < 1
    assert abs(state.rate() - 2) < 0.2  # two ranks of 1 image a second each
