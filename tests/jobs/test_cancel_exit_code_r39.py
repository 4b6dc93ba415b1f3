"""Round 39: a cancelled process job whose launcher ended by a signal (the escalation's SIGTERM
reached mpiexec before the job wrote its own "cancelled") is "stopped on request (signalled)",
as the escalation says it; one that exited 0 after the cancel is "stopped on request". Under
load the runner's watcher saw mpiexec's end first and wrote the plain line
(tests/jobs/test_cancel_slow_step_r29.py failed so once). Oracle: the job's last status event."""

from __future__ import annotations

import pytest

from skiff.jobs import Job, read_events
from skiff.jobs.process import ProcessRunner


@pytest.mark.parametrize("code, message", [(-15, "stopped on request (signalled)"),
                                           (143, "stopped on request (signalled)"),
                                           (0, "stopped on request")])
def test_a_cancelled_jobs_end_says_whether_it_was_signalled(runs_dir, code, message):
    job = Job.create("demo", {"steps": 1}, target="skiff.kinds.demo:run", runner="process",
                     np=1)
    (job.run_dir / "cancel").write_text("")
    ProcessRunner()._after_exit(job, code)
    final = [e for e in read_events(job.run_dir / "events.jsonl") if e["type"] == "status"][-1]
    assert (final["status"], final["message"]) == ("cancelled", message)
