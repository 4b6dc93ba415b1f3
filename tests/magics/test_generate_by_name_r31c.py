"""Round 31 (coordinator, found by h13): ``%generate notes "x"`` in a notebook said "DIR: no
such folder, got 'notes'" although the message itself offers a train job's id or ``--name``:
only the terminal resolved them. The oracle: the same generation from the terminal by the
job's run folder (greedy: the same text)."""

from __future__ import annotations

import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main
from skiff.jobs import submit


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_a_notebook_generates_from_a_job_by_its_name(shell, runs_dir, capsys):
    train, _ = submit("train", ["gpt-mini", "--steps", "2", "--name", "notes"])
    assert train.wait(300).status == "done"
    job = shell.run_line_magic("generate", 'notes "the " --max-new-tokens 5 --wait')
    assert job.wait(300).status == "done"
    assert job.config["model"] == str(train.run_dir)
    capsys.readouterr()
    assert main(["generate", str(train.run_dir), "the ", "--max-new-tokens", "5",
                 "--json"]) == 0
    terminal = json.loads(capsys.readouterr().out)
    assert job.result["text"] == terminal["result"]["text"]
    assert job.result["tokens"] == terminal["result"]["tokens"] == 5
