"""Round 47 (h11): ``jobs show`` / ``%jobs show`` of a job that failed on the user's data
printed skiff's whole traceback under the error (a bad column: 20 lines of skiff's frames
for one wrong cell). Now a user's error (one skiff raised on purpose naming what is wrong,
or a file the system could not open) is its one line, with where skiff's traceback is
(``jobs logs ID``, a folded ``<details>`` in a notebook); skiff's own bug (an error Python
raised in skiff's code) and a notebook function's own error keep their traceback in view.
The oracles: the cell typed in the table, Python's own message for calling None, the
function's own KeyError."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job, launch
from skiff.jobs.blame import users_error
from skiff.jobs.render import job_html
from skiff.widgets.job_view import JobView
from tests.helpers.cli import run_cli

TB = "Traceback (most recent call last)"


def _failed_training(capsys, table) -> str:
    ran = run_cli(capsys, "train", "mlp", "--data", table, "--steps", "2")
    assert ran.returncode == 1, ran.stderr
    return ran.stderr.split("skiff: train job ", 1)[1].split()[0]


def _view_error(job) -> str:
    view = JobView(job, start=False)
    view.update(force=True)
    return view.error_view.value


def test_a_users_data_error_is_its_line_and_skiffs_bug_keeps_its_traceback(
        tmp_path, capsys, monkeypatch):
    table = tmp_path / "bad.csv"
    table.write_text("a,b,y\n1,2,0\n3,x,1\n5,6,0\n")  # line 3, column b: 'x'
    job_id = _failed_training(capsys, table)
    shown = run_cli(capsys, "jobs", "show", job_id)
    assert shown.returncode == 0
    assert "line 3, column 'b': 'x' is not a number" in shown.stdout
    assert TB not in shown.stdout and "tables.py" not in shown.stdout, shown.stdout
    assert f"(skiff's traceback of it: python -m skiff jobs logs {job_id})" in shown.stdout
    assert TB in run_cli(capsys, "jobs", "logs", job_id).stdout  # where it still is
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic("jobs", f"show {job_id}")
    html = job_html(job)
    assert "<details><summary>skiff's traceback" in html and "is not a number" in html
    view = _view_error(job)
    assert "<details><summary>skiff's traceback" in view and "<details open>" not in view

    # skiff's own bug: Python's TypeError in skiff's code, not raised on purpose
    monkeypatch.setattr("skiff.kernels.train.entry.training_rows", None)
    nothing = None
    try:
        nothing()
    except TypeError as exc:
        said = f"TypeError: {exc}"
    bug = _failed_training(capsys, table)
    out = run_cli(capsys, "jobs", "show", bug).stdout
    assert said in out and TB in out and "entry.py" in out, out
    assert "skiff's traceback of it" not in out
    assert "<details open><summary>traceback" in _view_error(Job.load(bug))
    assert f"<pre style='font-size:85%'>{TB}" in job_html(Job.load(bug))


def test_a_notebook_functions_own_error_keeps_its_traceback(capsys):
    def step(config, reporter):
        return {}["learning_rate"]   # the user's own mistake, in the user's own code

    job = launch("custom", fn=step)
    job.wait(timeout=60)
    assert job.status == "failed"
    state = job.refresh()
    assert state.error == "KeyError: 'learning_rate'"
    assert not users_error(state.error, state.traceback)
    out = run_cli(capsys, "jobs", "show", job.id).stdout
    assert TB in out and '{}["learning_rate"]' in out, out


def test_a_rank_the_launcher_ended_after_another_failed_is_not_called_killed(tmp_path):
    """``--np 2`` on a bad column: rank 1 failed (exit 1), and rank 0, ended by its launcher,
    said "no clean exit and no crash report (killed: SIGKILL or out of memory)" under the
    user's one-line error. The oracle: a process that did end (its pid waited for)."""
    import subprocess

    from skiff.jobs.ranks import rank_states

    ranks = tmp_path / "run" / "ranks"
    ranks.mkdir(parents=True)
    (tmp_path / "run" / "logs").mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    (ranks / "0.pid").write_text(str(gone.pid))
    (ranks / "1.pid").write_text(str(gone.pid))
    (ranks / "1.exit").write_text("1")
    zero, one = rank_states(tmp_path / "run")
    assert (zero.status, one.status) == ("died", "failed")
    assert zero.detail == "ended after rank 1 failed (no exit of its own)", zero.detail
    assert "SIGKILL" not in zero.detail
