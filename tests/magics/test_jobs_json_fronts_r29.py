"""Round 29, as a user of both fronts: ``%jobs show ID --json`` printed another document
than ``python -m skiff jobs show ID --json`` (no ``options``) and escaped every non-ASCII
character of a job's name (``"\\u00e9moji \\ud83d\\ude80"``) where the terminal prints it as
it is. The oracle: the terminal's document for the same job, and the name the job was
given."""

from __future__ import annotations

import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main
from skiff.jobs import submit

NAME = "émoji 🚀 run"


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


@pytest.mark.parametrize("action", ["show", "logs"])
def test_the_magic_prints_the_terminals_document(shell, runs_dir, capsys, action):
    job, _ = submit("train", ["mlp", "--steps", "5", "--name", NAME])
    assert job.wait(120).status == "done"
    capsys.readouterr()
    assert main(["jobs", action, job.id, "--json"]) == 0
    terminal = capsys.readouterr().out
    shell.run_line_magic("jobs", f"{action} {job.id} --json")
    notebook = capsys.readouterr().out
    assert json.loads(notebook) == json.loads(terminal)
    if action == "show":
        assert json.loads(notebook)["name"] == NAME and NAME in notebook  # as it is
        assert json.loads(notebook)["options"]["steps"] == 5


def test_the_magic_lists_names_as_they_are(shell, runs_dir, capsys):
    job, _ = submit("train", ["mlp", "--steps", "5", "--name", NAME])
    assert job.wait(120).status == "done"
    capsys.readouterr()
    shell.run_line_magic("jobs", "--json")
    out = capsys.readouterr().out
    assert [j["name"] for j in json.loads(out)] == [NAME] and NAME in out
