"""``jobs resume ID --dry-run`` (both fronts): what the resume would run, nothing started
(round 31). It said "--dry-run goes with rm and prune; jobs resume changes nothing", which
is untrue: a resume starts a job. The document names the checkpoint it goes on from; the
real resume afterwards goes on from that step (the trainer's own ``resumed.from_step``)."""

from __future__ import annotations

import json
import re

from skiff.cli import main


def _folders(runs_dir):
    return sorted(p.name for p in runs_dir.iterdir()) if runs_dir.exists() else []


def test_resume_dry_run_names_the_checkpoint_the_resume_goes_on_from(runs_dir, capsys):
    assert main(["train", "mlp", "--steps", "6", "--checkpoint-every", "2", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["job"]
    assert first["status"] == "done"
    before = _folders(runs_dir)

    assert main(["jobs", "resume", first["id"], "--dry-run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert _folders(runs_dir) == before  # no run folder, no job
    assert doc["dry_run"] is True and doc["resumes"] == first["id"]
    assert doc["command"] == f"python -m skiff jobs resume {first['id']}"
    assert doc["config"]["resume"] is True
    ckpts = runs_dir / first["id"] / "checkpoints"
    newest = max(ckpts.glob("step-*.npz"), key=lambda p: int(re.findall(r"\d+", p.name)[0]))
    assert doc["from"] == str(newest) and newest.name == "step-00000006.npz"

    assert main(["jobs", "resume", first["id"][-4:], "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("dry run: nothing started")
    assert f"resumes job {first['id']} from {newest}" in text
    assert _folders(runs_dir) == before

    # the resume itself goes on from the step the dry run named
    assert main(["jobs", "resume", first["id"], "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["result"]["resumed"]["from_step"] == 6
    assert len(_folders(runs_dir)) == len(before) + 1


def test_resume_dry_run_refuses_as_the_resume_does(runs_dir, capsys):
    assert main(["solve", "poisson", "--grid", "8x8", "--json"]) == 0
    job = json.loads(capsys.readouterr().out)["job"]
    assert main(["jobs", "resume", job["id"], "--dry-run"]) == 2
    err = capsys.readouterr().err
    # a solve that ended done has nothing to go on from (a stopped one resumes from its
    # last iterate since round 34)
    assert f"job {job['id']} ended done: nothing to resume" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["jobs", "wait", job["id"], "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "--dry-run goes with rm and prune" in err and "resume (what it would run)" in err


def test_notebook_resume_dry_run_is_the_same_document(runs_dir, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    capsys.readouterr()  # "already loaded" where another test loaded it
    assert main(["train", "mlp", "--steps", "4", "--checkpoint-every", "2", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["job"]
    before = _folders(runs_dir)
    doc = shell.run_line_magic("jobs", f"resume {first['id']} --dry-run -o plan")
    assert shell.user_ns["plan"] is doc and doc["resumes"] == first["id"]
    assert doc["command"] == f"%jobs resume {first['id']}"
    assert doc["from"].endswith("step-00000004.npz")
    assert "resumes job" in repr(doc) and _folders(runs_dir) == before
    from IPython.core.error import UsageError

    try:
        shell.run_line_magic("jobs", f"resume {first['id']} --dry-run --wait")
    except UsageError as exc:
        assert "--dry-run starts no job for --wait" in str(exc)
    else:
        raise AssertionError("--dry-run --wait was taken")
    assert _folders(runs_dir) == before
