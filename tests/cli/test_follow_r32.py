"""Round 32, as a user: ``python -m skiff jobs show ID --follow`` and ``jobs logs ID -f``
(the ``tail -f``, ``docker logs -f`` habit) were "unrecognized arguments: --follow". Now
``show -f`` follows the job live as ``attach`` does, and ``logs -f`` prints each log line as
the job writes it, until it ends, then exits as the job ended (``jobs wait``'s table).
The oracle: the job's own log once it ended (``jobs logs ID``), line for line, and the
gate that alone lets the job finish, opened from inside the following."""

from __future__ import annotations

import pytest

import skiff.jobs.render as render
from skiff.cli import FAILED, OK, USAGE, main
from skiff.jobs import launch
from skiff.jobs.render import follow_logs, logs_text
from tests.jobs.waiting import wait_for


def _held(tmp_path, **more):
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 4, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate),
                          **more})
    wait_for(lambda: job.refresh().done == 1, 30, "the step before the hold")
    return job, gate


def _gate_opened_while_following(monkeypatch, gate):
    """The records the follower reads: the gate opens once it has read the hold."""
    real = render._records

    def reading(events):
        records = real(events)
        if any("holding until" in r["message"] for r in records):
            gate.touch()
        return records

    monkeypatch.setattr(render, "_records", reading)


def test_logs_follow_prints_each_line_while_the_job_runs(tmp_path):
    job, gate = _held(tmp_path)
    printed = []  # (line, the job's status when it was printed)

    def write(line):
        printed.append((line, job.refresh().status))
        if "holding until" in line:   # the gate opens once the hold is printed (opened as
            gate.touch()              # it was read, the job could end before the print)

    follow_logs(job, write, poll_s=0.05)
    assert job.status == "done" and job.result["allreduce"] == 4.0
    lines = [line for line, _ in printed]
    assert lines == logs_text(job).splitlines()  # the job's whole log, each line once
    hold = next(s for line, s in printed if "holding until" in line)
    assert hold == "running"  # printed as it came, not at the end
    assert "finished 4 steps" in lines[-1]


def test_cli_logs_follow_exits_as_the_job_ended(tmp_path, monkeypatch, capsys):
    job, gate = _held(tmp_path, fail_at=3)
    _gate_opened_while_following(monkeypatch, gate)
    assert main(["jobs", "logs", job.id, "--follow"]) == FAILED  # as `jobs wait` says it
    out = capsys.readouterr().out
    assert job.status == "failed"
    assert out.splitlines() == logs_text(job).splitlines()
    assert "demo job failed on purpose at step 3" in out


def test_cli_show_follow_is_attach(tmp_path, monkeypatch, capsys):
    job, gate = _held(tmp_path)
    _gate_opened_while_following(monkeypatch, gate)
    monkeypatch.setattr("skiff.jobs.terminal.LiveDisplay.write",
                        lambda self, line: gate.touch())
    assert main(["jobs", "show", job.id, "-f"]) == OK
    out = capsys.readouterr()
    assert f"following job {job.id} (running)" in out.err
    assert job.status == "done" and f"<Job {job.id} demo done 100%>" in out.out


@pytest.mark.parametrize("argv, says", [
    (["jobs", "list", "-f"], "--follow goes with show and logs"),
    (["jobs", "cancel", "X", "--follow"], "jobs cancel does not follow"),
    (["jobs", "logs", "-f"], "follows one job: give its ID"),
])
def test_follow_where_it_means_nothing_is_one_clear_line(argv, says, capsys):
    assert main(argv) == USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_cli_logs_follow_json_is_one_json_line_each_record(tmp_path, monkeypatch, capsys):
    """``jobs logs ID -f --json`` was refused ("give one of them"): JSON lines now, each
    record as ``jobs logs ID --json`` lists it, printed as it comes (``-n 0``: none of the
    records written so far, then each new one)."""
    import json

    from skiff.jobs.render import logs_document

    job, gate = _held(tmp_path, fail_at=3)
    wait_for(lambda: any("holding until" in r["message"] for r in logs_document(job)["lines"]),
             30, "the hold's record")
    before = len(logs_document(job)["lines"])
    _gate_opened_while_following(monkeypatch, gate)
    assert main(["jobs", "logs", job.id, "-f", "--json", "-n", "0"]) == FAILED
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    lines = logs_document(job)["lines"]
    assert before >= 1 and printed and printed == lines[before:]  # the hold's left out
    assert printed[-1]["level"] == "error" and "failed on purpose at step 3" in \
        printed[-1]["message"]


def test_magic_logs_follow(tmp_path, monkeypatch, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    capsys.readouterr()  # "already loaded" where another test loaded it
    job, gate = _held(tmp_path)
    _gate_opened_while_following(monkeypatch, gate)
    assert shell.run_line_magic("jobs", f"logs {job.id} -f") is None
    assert job.status == "done"
    assert capsys.readouterr().out.splitlines() == logs_text(job).splitlines()


def test_wait_for_two_jobs_is_refused_before_it_says_it_waits(tmp_path, capsys):
    """``jobs wait A B`` printed "waiting for job A ... Ctrl-C stops waiting" and then the
    refusal: the refusal alone now. (Round 44: it waits for both; one unknown refuses.)"""
    job, gate = _held(tmp_path)
    try:
        assert main(["jobs", "wait", job.id, "nosuch"]) == USAGE
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no job 'nosuch'" in err[0], err
    finally:
        gate.touch()
    assert job.wait(30).status == "done"


def test_show_follow_json_is_shows_document(tmp_path, monkeypatch, capsys):
    """``jobs show ID -f --json``: followed, then the document ``jobs show ID --json``
    prints (with its options), not attach's."""
    import json

    job, gate = _held(tmp_path)
    monkeypatch.setattr("skiff.jobs.terminal.LiveDisplay.write",
                        lambda self, line: gate.touch())
    assert main(["jobs", "show", job.id, "-f", "--json"]) == OK
    followed = json.loads(capsys.readouterr().out)
    assert main(["jobs", "show", job.id, "--json"]) == OK
    shown = json.loads(capsys.readouterr().out)
    assert followed == shown and "options" in shown and shown["status"] == "done"
