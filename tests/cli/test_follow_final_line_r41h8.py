"""Round 41: round 40's CI failed on a race. Off a terminal (a log, a pipe, CI) the command
that started a job followed it with plain lines on stderr: one at the first look, then at
most one every 10 s, and never the final one: a job that failed before the first look's
0.1 s had no status line, one that failed within it had "failed", a longer one ended on
"running" (the summary on stdout alone said how it ended). The log now ends with the job's
final line, once, however fast it ended. The oracle: the job's own final status, read from
its run folder (and the demo kind's gate, which alone lets a held job end)."""

from __future__ import annotations

from skiff.cli import _follow
from skiff.jobs import launch
from tests.jobs.waiting import wait_for


def _status_lines(err, job):
    short = f"demo {job.id.rsplit('-', 1)[-1]} "
    return [line for line in err.splitlines() if line.startswith(short)]


def test_a_job_that_ended_before_the_first_look_still_gets_its_final_line(capsys):
    job = launch("demo", {"steps": 3, "sleep": 0.0, "fail_at": 2})
    job.wait(30)
    assert job.refresh().status == "failed"
    capsys.readouterr()
    assert _follow(job) is False
    lines = _status_lines(capsys.readouterr().err, job)
    assert len(lines) == 1 and lines[0].split()[2].rstrip(",") == "failed", lines


def test_a_followed_job_ends_its_log_with_how_it_ended_once(tmp_path, monkeypatch, capsys):
    from skiff.jobs.terminal import LiveDisplay

    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate)})
    wait_for(lambda: job.refresh().done == 1, 30, "the step before the hold")
    real = LiveDisplay.write

    def write(self, line):  # the job is let go once its running line is written
        real(self, line)
        gate.touch()

    monkeypatch.setattr(LiveDisplay, "write", write)
    capsys.readouterr()
    _follow(job)
    lines = _status_lines(capsys.readouterr().err, job)
    assert job.status == "done"
    assert lines[0].split()[2] == "running" and lines[-1].split()[2] == "done", lines
    assert sum(line.split()[2] == "done" for line in lines) == 1, lines
