"""Round 33 (h8): ``python -m skiff jobs ls`` (docker's, kubectl's word) was "invalid choice:
'ls' (did you mean 'logs'?)", the wrong action suggested. ``ls`` is ``list`` and ``log`` is
``logs``, in the terminal and the magic (one grammar); the oracle is the same command with
the action's own name."""

from __future__ import annotations

import json

import pytest

from skiff.cli import main
from skiff.grammar.common import GrammarError
from skiff.grammar.jobs import JOBS


def test_ls_and_log_are_list_and_logs():
    assert JOBS.parse("ls --status cancelled").action == "list"
    assert JOBS.parse(["log", "abc", "-f"]).action == "logs"
    assert JOBS.parse("").action == "list"
    with pytest.raises(GrammarError, match="invalid choice: 'lst' \\(did you mean 'list'"):
        JOBS.parse("lst")


def test_jobs_ls_prints_what_jobs_list_prints(runs_dir, capsys):
    from skiff.jobs import launch

    launch("demo", {"steps": 1, "sleep": 0.0}, runner="thread").wait(timeout=60)
    capsys.readouterr()
    assert main(["jobs", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert main(["jobs", "ls", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == listed and len(listed) == 1


def test_a_job_id_in_place_of_the_action_says_how_to_show_it():
    """``jobs 7a00`` was "invalid choice: '7a00'" with the list of actions only."""
    with pytest.raises(GrammarError, match="'7a00' is no action .*; a job\\? jobs show 7a00"):
        JOBS.parse("7a00")
    with pytest.raises(GrammarError, match="did you mean 'show'"):  # a typo: as before
        JOBS.parse("shwo 7a00")
