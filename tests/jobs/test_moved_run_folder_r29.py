"""Round 29, as a user: a runs folder copied or moved elsewhere (another disk, a colleague's
home) kept naming the old place in every result path: ``jobs show`` printed the checkpoint
where it no longer was and ``job.result["weights"]`` did not exist. The paths into run
folders that moved with it now name them where they are. The oracle: the files on disk (the
bytes at the path the moved job names are the bytes written before the move) and the step
a resume of the moved job goes on from."""

from __future__ import annotations

import hashlib
import shutil

from skiff.cli import main
from skiff.jobs import Job, jobs_action, submit


def _digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_a_moved_runs_folder_names_its_files_where_they_are(runs_dir, tmp_path, monkeypatch,
                                                            capsys):
    first, _ = submit("train", "mlp --steps 20")
    assert first.wait(120).status == "done"
    second = jobs_action("resume", first.id)  # writes its checkpoint into first's folder
    assert second.wait(120).status == "done"
    old_ckpt, old_weights = second.result["checkpoint"], first.result["weights"]
    assert old_ckpt.startswith(str(first.run_dir))
    before = {"ckpt": _digest(old_ckpt), "weights": _digest(old_weights)}

    moved = tmp_path / "elsewhere ü" / "runs"
    moved.parent.mkdir()
    shutil.move(str(runs_dir), str(moved))
    monkeypatch.setenv("SKIFF_RUNS", str(moved))

    again, other = Job.load(second.id), Job.load(first.id)
    ckpt, weights = again.result["checkpoint"], other.result["weights"]
    assert ckpt.startswith(str(moved / first.id)) and weights.startswith(str(moved / first.id))
    assert _digest(ckpt) == before["ckpt"] and _digest(weights) == before["weights"]

    capsys.readouterr()
    assert main(["jobs", "show", second.id]) == 0
    shown = capsys.readouterr().out
    assert str(moved / first.id / "checkpoints") in shown and str(runs_dir) not in shown

    third = jobs_action("resume", second.id)  # from the moved checkpoint, not from step 0
    assert third.wait(120).status == "done"
    assert third.result["resumed"]["from_step"] == 40


def test_paths_outside_the_runs_folder_are_left_as_written(runs_dir, tmp_path, monkeypatch):
    out = tmp_path / "texts" / "read.jsonl"  # beside the data, not in a run folder
    from PIL import Image, ImageDraw

    image = tmp_path / "one.png"
    canvas = Image.new("RGB", (320, 80), "white")
    ImageDraw.Draw(canvas).text((10, 30), "HELLO 42", fill="black")
    canvas.save(image)
    job, _ = submit("ocr", f"{image} --out {out}")
    assert job.wait(120).status == "done"
    assert job.result["out"] == str(out)
    moved = tmp_path / "runs2"
    shutil.copytree(runs_dir, moved)
    monkeypatch.setenv("SKIFF_RUNS", str(moved))
    assert Job.load(job.id).result["out"] == str(out)  # still the file the user named
    assert out.is_file()
