"""%jobs and %devices through a real IPython shell."""

import json

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_extension_registers_jobs_and_devices(shell):
    magics = shell.magics_manager.magics["line"]
    assert "jobs" in magics and "devices" in magics


def test_devices_lists_the_cpu(shell, capsys):
    table = shell.run_line_magic("devices", "")
    assert table[0].name == "cpu"
    assert "cpu" in repr(table) and "<table" in table._repr_html_()
    shell.run_line_magic("devices", "--json")
    doc = json.loads(capsys.readouterr().out)
    assert doc[0]["name"] == "cpu" and doc[0]["total_memory"] > 0


def test_jobs_list_show_wait_cancel(shell):
    from skiff.jobs import launch

    job = launch("demo", {"steps": 3, "sleep": 0.0})
    shell.run_line_magic("jobs", f"wait {job.id}")
    assert job.status == "done"
    listed = shell.run_line_magic("jobs", "list")
    assert job.id in [j.id for j in listed]
    assert job.id in repr(listed) and "done" in listed._repr_html_()
    shown = shell.run_line_magic("jobs", f"show {job.id} -o handle")
    assert shown is job and shell.user_ns["handle"] is job
    attached = shell.run_line_magic("jobs", f"attach {job.id}")
    assert isinstance(attached, Job) and attached.status == "done"
    shell.run_line_magic("jobs", f"cancel {job.id}")  # cancelling a finished job is harmless
    assert job.status == "done"


@pytest.mark.parametrize(
    "line, needle",
    [("show", "needs a job ID"), ("explode", "invalid choice"), ("show nosuchjob", "no job"),
     ("--bogus", "unrecognized arguments")],
)
def test_jobs_misuse_is_a_usage_error(shell, line, needle):
    with pytest.raises(UsageError, match=needle):
        shell.run_line_magic("jobs", line)


def test_job_repr_outside_widgets():
    from skiff.jobs import launch

    job = launch("demo", {"steps": 2, "sleep": 0}).wait(10)
    assert repr(job).startswith(f"<Job {job.id} demo done")
    html = job._repr_html_()
    assert "skiff-badge" in html and "done" in html


def test_jobs_logs_shows_the_log_as_text(shell, capsys):
    from skiff.jobs import launch

    def talk(config, reporter):
        reporter.log("hello from the job")
        reporter.log("look out", level="warning")

    job = launch("custom", fn=talk).wait(10)
    logs = shell.run_line_magic("jobs", f"logs {job.id} -o text")
    assert repr(logs) == str(logs) and shell.user_ns["text"] == logs
    lines = str(logs).splitlines()
    assert lines[-2].endswith(" hello from the job") and lines[-1].endswith("warning: look out")
    assert shell.run_line_magic("jobs", f"logs {job.id} --json") is None
    doc = json.loads(capsys.readouterr().out)
    assert [d["message"] for d in doc["lines"]][-2:] == ["hello from the job", "look out"]


def test_jobs_resume_of_a_kind_that_cannot_is_a_usage_error(shell):
    from skiff.jobs import launch

    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    with pytest.raises(UsageError, match="only train, solve and ocr jobs can be resumed"):
        shell.run_line_magic("jobs", f"resume {job.id}")


def test_jobs_json_cut_by_its_limit_says_so_as_the_terminal_does(shell, capsys):
    """``%jobs --json --limit 2`` of three jobs: the array holds two, stderr says one was left
    out (the terminal said it; the magic cut the list without a word)."""
    from skiff.jobs import launch

    jobs = [launch("demo", {"steps": 1, "sleep": 0}).wait(30) for _ in range(3)]
    shell.run_line_magic("jobs", "--json --limit 2")
    out = capsys.readouterr()
    assert [d["id"] for d in json.loads(out.out)] == [j.id for j in jobs[::-1][:2]]
    assert "1 older job not in this list (--limit N or --all)" in out.err
    shell.run_line_magic("jobs", "--json --all")
    out = capsys.readouterr()
    assert len(json.loads(out.out)) == 3 and out.err == ""
