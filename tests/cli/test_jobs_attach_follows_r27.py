"""Round 27, as a user: ``python -m skiff jobs attach ID`` printed the job once and returned
(as ``show`` does) where a notebook's ``%jobs attach`` gives a live view; now it follows the
job live on stderr to its end and exits as ``jobs wait`` does; Ctrl-C stops following and
leaves the job running. The oracle: the job's own status and result (its all-reduce sum),
and the gate that alone lets it finish, opened from inside the following."""

from __future__ import annotations

from skiff.cli import INTERRUPTED, OK, main
from skiff.jobs import launch
from skiff.jobs.terminal import LiveDisplay
from tests.jobs.waiting import wait_for


def _held(tmp_path):
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 4, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate)})
    wait_for(lambda: job.refresh().done == 1, 30, "the step before the hold")
    return job, gate


def test_attach_follows_the_job_to_its_end(tmp_path, monkeypatch, capsys):
    job, gate = _held(tmp_path)
    real = LiveDisplay.write
    lines = []

    def drawn(self, line):  # the job can end only once attach is following it
        lines.append(line)
        gate.touch()
        return real(self, line)

    monkeypatch.setattr(LiveDisplay, "write", drawn)
    assert main(["jobs", "attach", job.id]) == OK
    out = capsys.readouterr()
    assert f"following job {job.id} (running)" in out.err
    assert "running" in lines[0]  # drawn while it ran (a pipe: the end is the summary)
    assert job.status == "done" and job.result["allreduce"] == 4.0
    assert f"<Job {job.id} demo done 100%>" in out.out


def test_ctrl_c_stops_following_and_the_job_goes_on(tmp_path, monkeypatch, capsys):
    job, gate = _held(tmp_path)

    def interrupted(self, line):
        raise KeyboardInterrupt

    monkeypatch.setattr(LiveDisplay, "write", interrupted)
    try:
        assert main(["jobs", "attach", job.id]) == INTERRUPTED
        assert "stopped following; job" in capsys.readouterr().err
        assert job.refresh().status == "running"  # not cancelled
    finally:
        gate.touch()
    assert job.wait(30).status == "done"


def test_attach_of_a_finished_job_shows_it_and_exits_as_it_ended(capsys):
    job = launch("demo", {"steps": 2, "sleep": 0.0, "fail_at": 2}).wait(30)
    assert main(["jobs", "attach", job.id]) == 1  # failed, as jobs wait says it
    out = capsys.readouterr()
    assert "following" not in out.err and "demo job failed on purpose at step 2" in out.out
