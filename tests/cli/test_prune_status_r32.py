"""Round 32, as a user cleaning a runs root: ``jobs prune --keep 0 --status damaged``
meant "remove the damaged folders" and removed every finished job (``--status`` was dropped
by prune); ``jobs --status damaged`` was "invalid choice" though the Jobs sidebar filters on
it; a corrupt event line printed Python's warning with the source line that warned. The
oracle: the folders on disk before and after, and the jobs' own states."""

from __future__ import annotations

import pytest

from skiff.cli import OK, USAGE, main
from skiff.jobs import launch


@pytest.fixture
def root(runs_dir):
    done = launch("demo", {"steps": 1, "sleep": 0.0}).wait(30)
    failed = launch("demo", {"steps": 2, "sleep": 0.0, "fail_at": 1}).wait(30)
    damaged = runs_dir / "20000101-000001-demo-dmgd"
    damaged.mkdir()
    (damaged / "config.json").write_text('{"id": 5')
    assert (done.status, failed.status) == ("done", "failed")
    return {"done": done.run_dir, "failed": failed.run_dir, "damaged": damaged}


def _there(root):
    return {name for name, path in root.items() if path.is_dir()}


def test_prune_status_damaged_removes_the_damaged_only(root, capsys):
    assert main(["jobs", "prune", "--keep", "0", "--status", "damaged", "--dry-run"]) == OK
    assert "would remove 1 job: 20000101-000001-demo-dmgd" in capsys.readouterr().out
    assert main(["jobs", "prune", "--keep", "0", "--status", "damaged"]) == OK
    assert _there(root) == {"done", "failed"}
    assert main(["jobs", "prune", "--keep", "0", "--status", "failed"]) == OK
    assert _there(root) == {"done"}


def test_prune_kind_and_status_of_nothing_removes_nothing(root):
    assert main(["jobs", "prune", "--keep", "0", "--status", "cancelled"]) == OK
    assert _there(root) == {"done", "failed", "damaged"}


def test_prune_status_running_is_one_clear_line(root, capsys):
    assert main(["jobs", "prune", "--keep", "0", "--status", "running"]) == USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "prune removes finished jobs and damaged folders" in err[0], err
    assert _there(root) == {"done", "failed", "damaged"}


def test_list_status_damaged(root, capsys):
    import json

    assert main(["jobs", "--status", "damaged", "--json"]) == OK
    listed = json.loads(capsys.readouterr().out)
    assert [j["id"] for j in listed] == ["20000101-000001-demo-dmgd"]
    assert listed[0]["status"] == "damaged" and "not JSON" in listed[0]["damaged"]


def test_a_corrupt_event_line_is_one_warning_line(root, capsys):
    events = root["done"] / "events.jsonl"
    events.write_bytes(events.read_bytes() + b"\x00\xff garbage\n")
    (root["done"] / "folded.json").unlink(missing_ok=True)
    assert main(["jobs", "show", root["done"].name]) == OK
    err = capsys.readouterr().err.strip().splitlines()
    warned = [line for line in err if "skipped corrupt line" in line]
    assert warned and all(line.startswith("skiff: warning: ") for line in warned), err
    assert not any("self._reader" in line or "Warning:" in line for line in err), err


@pytest.mark.parametrize("argv, says", [
    (["rm", "X", "--older-than", "7d"], "--older-than goes with prune; jobs rm removes the jobs "
                                        "named"),
    (["show", "X", "--kind", "demo"], "--kind goes with list and prune; jobs show does not"),
    (["list", "--timeout", "3"], "--timeout goes with wait; jobs list does not read it"),
    (["prune", "--all", "--keep", "0"], "--all goes with list; jobs prune does not read it"),
    (["rm", "--all"], "jobs prune --keep 0"),
])
def test_an_option_of_another_action_is_refused_not_dropped(root, argv, says, capsys):
    """``jobs rm ID --older-than 7d`` removed ID whatever its age; ``prune --all --keep 0``
    read no --all: each option given to an action that does not read it is one line."""
    assert main(["jobs", *argv]) == USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert _there(root) == {"done", "failed", "damaged"}
