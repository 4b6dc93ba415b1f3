"""Round 32 (h14): a notebook-only option typed in a terminal (``jobs -o x``) is one line
naming what a terminal has instead; ``jobs -o x`` was "argument action: invalid choice:
'x'" (argparse read the variable's name as the action). The oracle: the notebook's own
grammar (the same words parse there) and the terminal line the message names (it runs)."""

from __future__ import annotations

import json
import shlex

import pytest

from skiff import cli
from skiff.grammar.jobs import JOBS


@pytest.fixture
def home(runs_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("words", [["-o", "x"], ["-ox"], ["--output=x"], ["list", "-o", "x"],
                                   ["--all", "-o", "x"]])
def test_jobs_dash_o_in_a_terminal_is_one_line_naming_json(words, home, capsys):
    assert JOBS.parse(words).output == "x"  # the notebook reads it
    assert cli.main(["jobs", *words]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "-o/--output" in err and "notebooks only" in err and "invalid choice" not in err
    fix = err.split("JSON document: ", 1)[1].removesuffix(" > FILE")
    argv = shlex.split(fix)[3:]  # python -m skiff jobs ...
    assert argv[0] == "jobs" and "-o" not in argv and "--json" in argv
    assert cli.main(argv) == 0  # the line it names runs: one JSON document
    json.loads(capsys.readouterr().out)


def test_wait_and_a_job_kinds_dash_o(home, capsys):
    assert cli.main(["jobs", "resume", "ab12", "--wait"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--wait" in err and "jobs wait ID" in err
    assert cli.main(["ocr", "a.png", "-o", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--out FILE" in err and "notebooks only" in err


def test_words_after_a_double_dash_are_not_read_as_the_option(home, capsys):
    cli.main(["jobs", "--", "-o"])
    assert "notebooks only" not in capsys.readouterr().err
