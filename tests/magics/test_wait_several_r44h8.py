"""Round 44 (h8): ``%jobs wait A B C`` (and ``python -m skiff jobs wait A B C``).

A notebook that starts three jobs waits for the three in one line: ``jobs wait`` refused
several ids ("takes one job ID, got 3; only rm takes several"). It waits for every one now
(each once, in the order named, ``--timeout`` the whole wait's); ``--json`` prints the list
of their documents (``jobs ls --json``'s form); an unknown id refuses the whole wait before
any is waited for; a wait that runs out says the first job not ended; the terminal's exit
status is the first not 0 of the jobs' (a failed one: 1). Oracle: the terminal's documents
of the same waits, and each job's own ``jobs show --json``. Jobs held at a step until a file
exists: no timing."""

from __future__ import annotations

import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import TIMEOUT, USAGE, main
from skiff.jobs import launch


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "skiff")
    return sh


def _doc(capsys):
    return json.loads(capsys.readouterr().out)


def test_wait_for_several_jobs_in_one_line(shell, runs_dir, capsys, monkeypatch):
    gate = runs_dir / "gate"
    held = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate)})
    ok = launch("demo", {"steps": 2, "sleep": 0.0})
    bad = launch("demo", {"steps": 3, "sleep": 0.0, "fail_at": 1})
    for name, job in (("held", held), ("ok", ok), ("bad", bad)):
        # the shell is the process's one instance: these names go when the test ends
        monkeypatch.setitem(shell.user_ns, name, job)
    try:
        # an unknown id among them: refused at once, the held job not waited for
        capsys.readouterr()
        assert main(["jobs", "wait", held.id, "nosuch", "--json"]) == USAGE
        terminal = _doc(capsys)
        with pytest.raises(Exception, match="nosuch"):
            shell.run_line_magic("jobs", "wait held nosuch --json")
        cell = _doc(capsys)
        assert cell["exit"] == terminal["exit"] == USAGE and "nosuch" in cell["error"]
        assert terminal["error"].endswith(cell["error"]), (terminal, cell)
        assert not held.refresh().final
        # the whole wait's timeout: the first job not ended is named, in both fronts
        assert main(["jobs", "wait", ok.id, held.id, "--timeout", "0.2", "--json"]) == TIMEOUT
        terminal = _doc(capsys)
        assert shell.run_line_magic("jobs", "wait ok held --timeout 0.2 --json") is None
        cell = _doc(capsys)
        assert cell["exit"] == terminal["exit"] == TIMEOUT
        assert held.id in cell["error"] and terminal["error"].endswith(cell["error"])
        assert not held.refresh().final
    finally:
        gate.touch()
    # every one waited for: the list of their documents, in the order named, each once
    assert shell.run_line_magic("jobs", "wait held ok bad held --json") is None
    cell = _doc(capsys)
    assert main(["jobs", "wait", held.id, ok.id, bad.id, "--json"]) == 1  # bad failed
    terminal = _doc(capsys)
    assert [d["id"] for d in cell] == [d["id"] for d in terminal] == [held.id, ok.id, bad.id]
    assert [d["status"] for d in cell] == ["done", "done", "failed"]
    for doc in cell:
        assert main(["jobs", "show", doc["id"], "--json"]) == 0
        assert _doc(capsys)["status"] == doc["status"]
    assert main(["jobs", "wait", held.id, ok.id]) == 0  # both done: 0, the table printed
    out = capsys.readouterr().out
    assert held.id in out and ok.id in out and bad.id not in out
