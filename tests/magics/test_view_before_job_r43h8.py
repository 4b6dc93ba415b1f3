"""Round 43 (h8): in a notebook a magic's job was shown as the cell's value, when the cell
ended; a thread job's own first print (a warning, a model's line) came above its view or
under it, as fast as the job was. The view is shown once the run folder exists, before the
job starts, and not again as the cell's value. The thread runner's ``start`` and the view's
display are recorded in the order they happen (the job runs for real): no timing. A
notebook is IPython with widgets (``widgets_enabled``); in a terminal the job's text is
shown at the cell's end, as before (the newest snapshot)."""

from __future__ import annotations

import importlib

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "skiff")
    return sh


@pytest.fixture()
def seen(monkeypatch):
    launch = importlib.import_module("skiff.jobs.launch")  # the module, not the function
    display = importlib.import_module("skiff.widgets.display")
    events: list[tuple[str, str]] = []
    start = launch._THREAD.start

    def started(job, *args, **kwargs):
        events.append(("started", job.id))
        return start(job, *args, **kwargs)

    def shown(job):
        events.append(("shown", job.id))

    monkeypatch.setattr(launch._THREAD, "start", started)
    monkeypatch.setattr(display, "display_job", shown)
    return events


def test_the_view_comes_before_the_job_starts_and_once(shell, runs_dir, seen, monkeypatch):
    monkeypatch.setattr("skiff.widgets.display.widgets_enabled", lambda: True)
    result = shell.run_cell("%solve poisson --grid 8x8")
    assert result.success, result.error_in_exec
    job = result.result
    assert isinstance(job, Job)
    job.wait(120)
    assert seen == [("shown", job.id), ("started", job.id)], seen
    # shown again when asked in a later cell
    shell.user_ns["j"] = job
    assert shell.run_cell("j").success
    assert seen[-1] == ("shown", job.id) and len(seen) == 3, seen


def test_a_waited_job_and_a_terminals_are_shown_at_their_end(shell, runs_dir, seen,
                                                             monkeypatch):
    result = shell.run_cell("%solve poisson --grid 8x8")  # IPython in a terminal
    assert result.success, result.error_in_exec
    job = result.result.wait(120)
    assert seen == [("started", job.id), ("shown", job.id)], seen
    seen.clear()
    monkeypatch.setattr("skiff.widgets.display.widgets_enabled", lambda: True)
    result = shell.run_cell("%solve poisson --grid 8x8 --wait")
    assert result.success, result.error_in_exec
    job = result.result
    assert job.done
    assert seen == [("started", job.id), ("shown", job.id)], seen


def test_a_resumed_jobs_view_comes_before_it_starts(shell, runs_dir, seen, monkeypatch):
    from skiff.jobs import submit

    first, _ = submit("solve", ["jump", "--grid", "16x16", "--precond", "none",
                                "--maxiter", "2"], front="cli")  # not converged: resumable
    first.wait(120)
    seen.clear()
    monkeypatch.setattr("skiff.widgets.display.widgets_enabled", lambda: True)
    result = shell.run_cell(f"%jobs resume {first.id}")
    assert result.success, result.error_in_exec
    job = result.result.wait(120)
    assert job.id != first.id
    assert seen == [("shown", job.id), ("started", job.id)], seen
