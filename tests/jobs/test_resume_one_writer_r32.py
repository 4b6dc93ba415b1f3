"""Round 32: a training resumed while another run writes to the same checkpoint folder (its
first resume still running, a second click on Resume, a second terminal) started a second
writer: two trainings wrote ``step-N.npz`` of the same steps in one folder, each over the
other's. The resume (and its dry run) is now refused naming the running job. The oracle:
the folders the jobs write to, read from their own config.json."""

from __future__ import annotations

import json

from skiff.cli import OK, USAGE, main
from skiff.jobs import launch, submit
from tests.jobs.waiting import wait_for


def test_resume_is_refused_while_another_job_writes_there(tmp_path, capsys):
    trained, _ = submit("train", ["mlp", "--steps", "3"])
    assert trained.wait(120).status == "done", trained.error
    folder = trained.run_dir / "checkpoints"
    assert any(folder.glob("step-*.npz"))
    gate = tmp_path / "gate"
    writer = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate),
                             "checkpoint_dir": str(folder)})
    wait_for(lambda: writer.refresh().done == 1, 30, "the writer running")
    assert json.loads((writer.run_dir / "config.json").read_text())["config"][
        "checkpoint_dir"] == str(folder)
    try:
        for argv in (["jobs", "resume", trained.id, "--dry-run"], ["jobs", "resume", trained.id]):
            assert main(argv) == USAGE
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and f"job {writer.id} is running and writes its checkpoints" \
                in err[0], err
    finally:
        gate.touch()
    assert writer.wait(30).status == "done"
    before = {p.name for p in folder.iterdir()}
    assert main(["jobs", "resume", trained.id, "--dry-run"]) == OK  # nobody writes there now
    assert {p.name for p in folder.iterdir()} == before


def test_a_new_job_into_a_folder_a_running_job_writes_to_is_refused(tmp_path, monkeypatch):
    """``--checkpoint-dir ck`` given to two runs at once (the first started from this folder
    with a relative path): the second is refused before it makes a run folder."""
    import pytest

    from skiff.jobs import list_jobs

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ck").mkdir()
    gate = tmp_path / "gate"
    first = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate),
                            "checkpoint_dir": "ck"})
    wait_for(lambda: first.refresh().done == 1, 30, "the first running")
    try:
        n = len(list_jobs())
        with pytest.raises(ValueError, match=f"job {first.id} is running and writes its "
                                             f"checkpoints to {tmp_path / 'ck'}"):
            launch("demo", {"steps": 1, "sleep": 0.0,
                            "checkpoint_dir": str(tmp_path / "ck")})
        assert len(list_jobs()) == n  # no run folder made
        other = launch("demo", {"steps": 1, "sleep": 0.0, "checkpoint_dir": "elsewhere"})
        assert other.wait(30).status == "done"  # another folder: as before
    finally:
        gate.touch()
    assert first.wait(30).status == "done"
    again = launch("demo", {"steps": 1, "sleep": 0.0, "checkpoint_dir": "ck"})
    assert again.wait(30).status == "done"  # nobody writes there now
