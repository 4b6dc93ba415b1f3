"""Round 27: the demo job can hold at a step until a file exists, so that a test (the
browser reload test) sees a job running for as long as it needs instead of betting on a
duration. The oracle: the steps it was told to hold before, and its own all-reduce sum."""

from skiff.jobs import launch

from .waiting import wait_for


def _progress(job):
    state = job.refresh()
    return state.done, state.total


def test_a_held_demo_job_waits_running_then_goes_on(tmp_path):
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 8, "sleep": 0.0, "hold_at": 5, "hold_until": str(gate)})
    wait_for(lambda: any("holding until" in (e.get("message") or "") for e in job.events()),
             30, "the hold")
    wait_for(lambda: _progress(job) == (4, 8), 30, "the steps before the hold, all shown")
    assert job.refresh().status == "running"
    gate.touch()
    job.wait(30)
    assert job.status == "done"
    assert job.result == {"steps": 8, "ranks": 1, "allreduce": 8.0}


def test_a_held_demo_job_stops_when_cancelled(tmp_path):
    job = launch("demo", {"steps": 8, "sleep": 0.0, "hold_at": 3,
                          "hold_until": str(tmp_path / "never")})
    wait_for(lambda: any("holding until" in (e.get("message") or "") for e in job.events()),
             30, "the hold")
    job.cancel()
    job.wait(30)
    assert job.status == "cancelled" and job.result == {"steps": 2, "stopped": True}
