"""Round 43 (h8): ``%jobs wait ID --timeout S --json`` in a cell printed "job ID still
running after S s" and then the job's document: a cell's captured stdout was no JSON, where
``python -m skiff jobs wait ID --timeout S --json`` prints its refusal document alone
(``{"error", "command", "exit": 124}``). The magic prints that document alone now (the cell
does not fail, as it does not without --json); a wait that ends prints the job's document
alone (no progress line before it). Oracle: the terminal's documents of the same waits.
The job is held at a step until a file exists: no timing."""

from __future__ import annotations

import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import TIMEOUT, main
from skiff.jobs import launch


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "skiff")
    return sh


def test_wait_json_timeout_and_end_are_the_terminals_documents(shell, runs_dir, capsys):
    gate = runs_dir / "gate"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate)})
    try:
        capsys.readouterr()
        assert main(["jobs", "wait", job.id, "--timeout", "0.2", "--json"]) == TIMEOUT
        terminal = json.loads(capsys.readouterr().out)
        assert shell.run_line_magic("jobs", f"wait {job.id} --timeout 0.2 --json") is None
        said = capsys.readouterr().out
        doc = json.loads(said)  # one document, alone on stdout
        assert set(doc) == set(terminal) == {"error", "command", "exit"}
        assert doc["exit"] == terminal["exit"] == TIMEOUT
        assert doc["command"] == terminal["command"] == "jobs"
        assert terminal["error"].endswith(doc["error"]), (terminal, doc)
        assert job.id in doc["error"] and "running" in doc["error"]
    finally:
        gate.touch()
    # a wait that ends: the job's document alone (the progress line was on stdout first)
    assert shell.run_line_magic("jobs", f"wait {job.id} --json") is None
    mine = json.loads(capsys.readouterr().out)
    assert main(["jobs", "wait", job.id, "--json"]) == 0
    terminal = json.loads(capsys.readouterr().out)
    assert mine["id"] == terminal["id"] == job.id
    assert mine["status"] == terminal["status"] == "done"
    assert set(mine) <= set(terminal)
