"""``jobs resume ID`` of a training whose ``--checkpoint-dir DIR`` is outside its run folder
(round 31). A relative DIR was read from the folder ``jobs resume`` ran in: from another
folder, or with its checkpoints removed, the resume found none and trained again from step
0 (said only in its summary: "resume: no checkpoint in DIR"). It is now refused, naming why
and the folder the job started in; from that folder it goes on from the newest checkpoint
(the trainer's own ``resumed.from_step``)."""

from __future__ import annotations

import json
import shutil

from skiff.cli import main


def _folders(runs_dir):
    return sorted(p.name for p in runs_dir.iterdir()) if runs_dir.exists() else []


def test_relative_checkpoint_dir_is_resumed_from_any_folder(runs_dir, tmp_path,
                                                            monkeypatch, capsys):
    start = tmp_path / "project é"
    start.mkdir()
    monkeypatch.chdir(start)
    assert main(["train", "mlp", "--steps", "6", "--checkpoint-every", "2",
                 "--checkpoint-dir", "ck dir", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["job"]
    assert (start / "ck dir" / "step-00000006.npz").is_file()

    # since round 31 (h14) the checkpoint folder is stored absolute when the job starts, so
    # a resume from any folder goes on from it and writes nothing where it was asked
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["jobs", "resume", first["id"], "--dry-run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["from"].endswith("step-00000006.npz") and str(start) in doc["from"]
    assert main(["jobs", "resume", first["id"], "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["result"]["resumed"]["from_step"] == 6
    assert not (elsewhere / "ck dir").exists()


def test_removed_checkpoints_are_refused_naming_the_command_to_train_again(runs_dir, tmp_path,
                                                                          monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ck = tmp_path / "abs ck"
    assert main(["train", "mlp", "--steps", "4", "--checkpoint-every", "2",
                 "--checkpoint-dir", str(ck), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["job"]
    shutil.rmtree(ck)
    before = _folders(runs_dir)
    assert main(["jobs", "resume", first["id"]]) == 2
    err = capsys.readouterr().err.strip()
    assert f"left no checkpoint in {ck} (removed?)" in err
    assert "to train again from the start: python -m skiff train mlp --steps 4" in err
    assert _folders(runs_dir) == before
