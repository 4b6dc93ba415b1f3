"""Round 29, as a terminal user: Ctrl-C on ``python -m skiff train gpt-mini --runner
process`` on a loaded machine (7.7 s a step) cancels with a 2 s grace; the escalation sent
SIGTERM mid-step and the training ended "stopped on request (signalled)" with no result
(its summary had no "to continue" line, though it had written its checkpoint a moment
before). The escalation now waits for twice the job's usual step and for its events to
go quiet. The oracle: what the job itself wrote (its result, its own final event) against
what a signal leaves (the reaper's event, no result)."""

from __future__ import annotations

import pytest

from skiff.jobs import launch, read_events
from tests.jobs.waiting import wait_for

pytestmark = pytest.mark.mpi


def test_a_cancel_waits_for_a_step_longer_than_its_grace():
    # 1 s steps (1.5 s before round 46): still over three times the grace, and the wait for
    # the two steps and the one the cancel lands in is 1.5 s shorter
    job = launch("demo", {"steps": 6, "sleep": 1.0}, runner="process")
    wait_for(lambda: job.refresh().done >= 2, 60, "two steps")
    assert job.cancel(grace=0.3)  # far shorter than a step
    job.wait(60)
    assert job.status == "cancelled"
    events = read_events(job.run_dir / "events.jsonl")
    final = [e for e in events if e["type"] == "status"][-1]
    assert final["rank"] == 0, final  # the job's own end, not the reaper's signal
    assert "signalled" not in str(final.get("message"))
    # no signal at all: since round 33 a SIGTERM'd rank also stops at its next step with its
    # own status and result, so those alone no longer told an early signal apart (round 46:
    # with the escalation's wait for twice the step removed, this test still passed); the
    # rank's own "SIGTERM: stopping" line does
    signalled = [e for e in events if "SIGTERM" in str(e.get("message"))]
    assert not signalled, signalled
    result = job.result
    assert result is not None and result["stopped"] is True
    assert 2 <= result["steps"] < 6


def test_a_job_that_ignores_the_cancel_is_still_signalled():
    job = launch("demo", {"steps": 10_000, "sleep": 0.02, "deaf_rank": 0}, runner="process")
    wait_for(lambda: job.refresh().done >= 3, 60, "progress")
    assert job.cancel(grace=0.5)
    job.wait(60)  # it writes progress all along: stopped by the cap, not the quiet events
    assert job.status == "cancelled" and job.result is None
    final = [e for e in read_events(job.run_dir / "events.jsonl") if e["type"] == "status"][-1]
    assert "signalled" in str(final.get("message"))
