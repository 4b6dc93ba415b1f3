"""``jobs prune --dry-run`` / ``jobs rm ID --dry-run`` (round 30): what a removal would
take, after every check it makes, with nothing removed; the oracle is the real removal run
right after (the same ids) and the folders on disk."""

from __future__ import annotations

import json
import threading

import pytest

from skiff.jobs import jobs_action, launch


def _finished(n):
    jobs = [launch("custom", fn=lambda config, reporter: {"ok": True}) for _ in range(n)]
    for job in jobs:
        job.wait(30)
        assert job.status == "done"
    return jobs


def _folders(runs_dir):
    return sorted(p.name for p in runs_dir.iterdir() if p.is_dir())


def test_prune_and_rm_dry_runs_name_what_the_removal_then_removes(runs_dir):
    done = _finished(3)
    gate = threading.Event()
    running = launch("custom", fn=lambda config, reporter: gate.wait(30))
    try:
        before = _folders(runs_dir)
        would = jobs_action("prune", keep=1, dry_run=True)
        assert _folders(runs_dir) == before  # nothing removed
        with pytest.raises(ValueError) as refused_dry:
            jobs_action("rm", running.id, dry_run=True)
        with pytest.raises(ValueError) as refused:
            jobs_action("rm", running.id)
        assert str(refused_dry.value) == str(refused.value)  # the same checks
        assert jobs_action("rm", done[0].id, dry_run=True) == [done[0].id]
        assert _folders(runs_dir) == before
        removed = jobs_action("prune", keep=1)
        assert would == removed and len(removed) == 2 and running.id not in removed
        assert _folders(runs_dir) == sorted(set(before) - set(removed))
    finally:
        gate.set()
        running.wait(30)
    with pytest.raises(ValueError, match="--dry-run goes with rm and prune"):
        jobs_action("list", dry_run=True)


def test_terminal_json_and_text(runs_dir, capsys):
    from skiff.cli import main  # python -m skiff, in this process

    _finished(2)
    before = _folders(runs_dir)
    assert main(["jobs", "prune", "--keep", "0", "--dry-run", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["dry_run"] is True and sorted(got["would_remove"]) == before
    assert main(["jobs", "prune", "--keep", "0", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "nothing removed" in text and all(i in text for i in before)
    assert _folders(runs_dir) == before
    assert main(["jobs", "wait", before[0], "--dry-run"]) == 2
    assert "--dry-run goes with rm and prune" in capsys.readouterr().err
