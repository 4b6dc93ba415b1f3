"""A resumed job records the command that resumes it, as the front that resumed it types it
(``%jobs resume ID`` in a notebook, ``python -m skiff jobs resume ID`` in a terminal): it
recorded ``resume ID``, which neither front takes. The oracle is the jobs grammar, which
must read the recorded command back as ``resume`` of that job."""

from __future__ import annotations

import shlex

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.grammar.jobs import JOBS
from skiff.jobs import jobs_action
from skiff.jobs.render import JobTable


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def _parsed_back(command: str, prefix: str):
    assert command.startswith(prefix), command
    return JOBS.parse(shlex.split(command[len(prefix):]), prog="jobs")


def test_notebook_resume_records_the_magic_line(shell, runs_dir):
    first = shell.run_line_magic("train", "mlp --steps 2 --wait")
    assert first.status == "done", first.error
    again = shell.run_line_magic("jobs", f"resume {first.id}")
    again.wait(timeout=120)
    assert again.status == "done", again.error
    command = again.meta["command"]
    ns = _parsed_back(command, "%jobs ")
    assert ns.action == "resume" and ns.job_id == first.id
    assert again.summary()["command"] == command
    assert command in repr(JobTable([again]))  # the listing shows what to type


def test_terminal_resume_records_the_cli_command(runs_dir):
    first = jobs_action("list")  # none yet
    assert first == []
    from skiff.jobs import submit

    job, _ = submit("train", "mlp --steps 2")
    job.wait(timeout=120)
    again = jobs_action("resume", job.id)  # what python -m skiff jobs resume calls
    again.wait(timeout=120)
    ns = _parsed_back(again.meta["command"], "python -m skiff jobs ")
    assert ns.action == "resume" and ns.job_id == job.id
