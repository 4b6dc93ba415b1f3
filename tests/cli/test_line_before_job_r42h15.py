"""Round 42 (h15): ``python -m skiff KIND`` says "skiff: KIND job ID" before the job starts.
The thread started inside ``submit`` and the line was written once it returned: a job's own
first print (a warning, a library's line: on stderr, where ``--json`` sends its stdout too)
could come first. The runner's ``start`` is wrapped to see what stderr held when the job was
started (the job runs for real): no timing involved."""

from __future__ import annotations

import io
import json

import pytest


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_job_line_is_written_before_the_job_starts(runs, monkeypatch):
    import importlib

    from skiff.cli import main

    launch = importlib.import_module("skiff.jobs.launch")  # the module, not the function

    err, out = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("sys.stdout", out)
    seen = []
    start = launch._THREAD.start

    def spy(job, *args, **kwargs):
        seen.append((job.id, err.getvalue()))
        return start(job, *args, **kwargs)

    monkeypatch.setattr(launch._THREAD, "start", spy)
    rc = main(["solve", "poisson", "--grid", "8x8", "--json"])
    assert rc == 0, err.getvalue()
    assert len(seen) == 1
    job_id, said_before = seen[0]
    assert f"skiff: solve job {job_id}" in said_before, said_before
    assert json.loads(out.getvalue())["job"]["id"] == job_id  # the document alone on stdout
    assert err.getvalue().count(f"skiff: solve job {job_id}") == 1  # said once


def test_a_resumes_line_is_written_before_the_new_job_starts(runs, monkeypatch):
    import importlib

    from skiff.cli import main
    from skiff.jobs import submit

    launch = importlib.import_module("skiff.jobs.launch")
    first, _ = submit("solve", ["jump", "--grid", "16x16", "--precond", "none", "--maxiter", "2"],
                      front="cli")  # not converged: a resume goes on
    first.wait(60)
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    seen = []
    start = launch._THREAD.start

    def spy(job, *args, **kwargs):
        seen.append((job.id, err.getvalue()))
        return start(job, *args, **kwargs)

    monkeypatch.setattr(launch._THREAD, "start", spy)
    main(["jobs", "resume", first.id])
    assert len(seen) == 1, err.getvalue()
    job_id, said_before = seen[0]
    line = f"skiff: solve job {job_id} resumes {first.id}"
    assert line in said_before, said_before
    assert err.getvalue().count(line) == 1
