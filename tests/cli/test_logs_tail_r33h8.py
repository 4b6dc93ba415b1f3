"""Round 33 (h8): ``jobs logs ID --tail 3`` (docker's and kubectl's flag) was "unrecognized
arguments": a long training's log had to be read whole. ``-n N`` / ``--tail N`` prints the
last N lines, in the terminal, ``%jobs`` and ``--json``; with ``-f`` the last N first, then
each new one. The oracle is coreutils ``tail -n N`` of the whole log."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from skiff.cli import main
from skiff.grammar.common import GrammarError
from skiff.grammar.jobs import JOBS, action_options


@pytest.fixture
def job(runs_dir):
    from skiff.jobs import launch

    job = launch("demo", {"steps": 3, "sleep": 0.0}, runner="thread")
    job.wait(timeout=60)
    for k in range(12):
        job.emit("log", level="info", message=f"line {k}")
    return job


@pytest.mark.skipif(shutil.which("tail") is None, reason="no tail program")
@pytest.mark.parametrize("n", [0, 3, 500])
def test_tail_is_the_last_lines(job, capsys, n, tmp_path):
    assert main(["jobs", "logs", job.id]) == 0
    whole = capsys.readouterr().out
    # tail reads a file, not a pipe: `tail -n 0` exits without reading its input, and a
    # write into its closed pipe ended the test's process where SIGPIPE was not ignored
    (tmp_path / "whole.log").write_text(whole)
    oracle = subprocess.run(["tail", "-n", str(n), str(tmp_path / "whole.log")],
                            capture_output=True, text=True, check=True).stdout
    assert main(["jobs", "logs", job.id, "-n", str(n)]) == 0
    assert capsys.readouterr().out.rstrip("\n") == oracle.rstrip("\n")
    assert main(["jobs", "logs", job.id, "--tail", str(n), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["message"] for r in doc["lines"]] == \
        [line.split(" ", 1)[1] for line in oracle.splitlines()]


def test_follow_prints_the_last_lines_of_an_ended_job(job, capsys):
    assert main(["jobs", "logs", job.id, "-f", "-n", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 1)[1] for line in out] == ["line 10", "line 11"]


def test_tail_goes_with_logs_only():
    with pytest.raises(ValueError, match="--tail goes with logs"):
        action_options(JOBS.parse("show abc -n 3"))
    with pytest.raises(GrammarError, match="expected an integer >= 0, got '-3'"):
        JOBS.parse("logs abc -n -3")


def test_the_magic_tails_too(job, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    logs = shell.run_line_magic("jobs", f"logs {job.id} -n 2")
    assert [line.split(" ", 1)[1] for line in str(logs).splitlines()] == ["line 10",
                                                                           "line 11"]


def test_n_on_a_list_is_the_newest_n(runs_dir, capsys):
    """``jobs ls -n 3`` (git log -n) said "--tail goes with logs": it is --limit 3."""
    from skiff.jobs import launch

    for _ in range(3):
        launch("demo", {"steps": 1, "sleep": 0.0}, runner="thread").wait(timeout=60)
    capsys.readouterr()
    assert main(["jobs", "list", "--limit", "2", "--json"]) == 0
    oracle = json.loads(capsys.readouterr().out)
    assert main(["jobs", "ls", "-n", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == oracle and len(oracle) == 2
    with pytest.raises(ValueError, match="newest N jobs \\(1 or more\\), got 0"):
        action_options(JOBS.parse("list -n 0"))
