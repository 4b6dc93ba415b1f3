"""Round 35 (h8): one rule for a path a job writes: its missing folders are made, as
``mkdir -p`` would. ``ocr --out DIR/x.txt`` and ``train --checkpoint-dir DIR`` made theirs;
``solve --save DIR/x.npz`` refused it (round 34) and ``predict JOB new/ --out DIR/p.csv``
read every image, then failed on FileNotFoundError. Now the launch makes ``--save``'s folder
(not a dry run) and predict makes its ``--out``'s; what cannot be written (a file in the
way) is still refused before any job. The oracle: the kernel's own Solution of the same
problem saved into a folder that is there holds the same arrays; predict's rows are the
ones it prints on stdout."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from skiff.cli import main
from skiff.jobs.launch import dry_run


def test_solve_save_makes_its_folder_at_launch_not_on_a_dry_run(runs_dir, tmp_path, capsys):
    from skiff.kernels.solve.entry import build_problem, solve_system

    target = tmp_path / "sub" / "dir" / "x.npz"
    config = dry_run("solve", f"poisson --grid 16x16 --rtol 1e-10 --save {target}")["config"]
    assert not (tmp_path / "sub").exists()            # a dry run makes nothing
    assert main(["solve", "poisson", "--grid", "16x16", "--rtol", "1e-10", "--save",
                 str(target), "--json"]) == 0
    capsys.readouterr()
    assert target.is_file()
    oracle = solve_system(build_problem({**config, "save": None}), None,
                          {**config, "save": None})
    (tmp_path / "here").mkdir()
    oracle.save(str(tmp_path / "here" / "x.npz"))
    got, want = np.load(target), np.load(tmp_path / "here" / "x.npz")
    assert sorted(got.files) == sorted(want.files)
    assert "field" in want.files
    for key in want.files:
        if want[key].dtype.kind in "fc":
            np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=1e-14)
        else:   # the summary: a JSON text with the solve's times in it
            assert json.loads(str(got[key]))["iterations"] == \
                json.loads(str(want[key]))["iterations"]


def test_a_file_in_the_way_is_refused_before_any_job(runs_dir, tmp_path):
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(ValueError, match=r"a\.txt is a file, not a folder"):
        dry_run("solve", f"poisson --grid 16x16 --save {tmp_path / 'a.txt' / 'x.npz'}")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_predict_out_makes_its_folder(tmp_path, capsys):
    """And what cannot be written is said before any prediction, not as a traceback after
    them (a folder: IsADirectoryError; a file in the way: FileExistsError)."""
    from skiff.kernels.train import models

    run = tmp_path / "run"
    run.mkdir()
    models.get("cnn", in_channels=1, num_classes=2, image_size=16).save(str(run / "model.npz"))
    (run / "images.json").write_text(json.dumps({"classes": ["dark", "light"], "size": 16,
                                                 "channels": 1, "mean": [0.5], "std": [0.2]}))
    rng = np.random.default_rng(5)
    (tmp_path / "new").mkdir()
    for k in range(3):
        Image.fromarray(rng.integers(0, 256, (18, 18), dtype=np.uint8)).save(
            tmp_path / "new" / f"{k}.png")
    assert main(["predict", str(run), str(tmp_path / "new")]) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "made" / "here" / "p.csv"
    assert main(["predict", str(run), str(tmp_path / "new"), "--out", str(out)]) == 0
    assert "written to" in capsys.readouterr().out
    assert out.read_text().strip().splitlines() == \
        [line for line in printed.strip().splitlines() if not line.startswith("#")]
    for bad, said in ((tmp_path / "new", "is a folder: name a file in it"),
                      (tmp_path / "run" / "model.npz" / "p.csv", "is a file, not a folder")):
        assert main(["predict", str(run), str(tmp_path / "new"), "--out", str(bad)]) != 0
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--checkpoint-dir", "--out"])
def test_a_folder_a_training_writes(runs_dir, tmp_path, flag):
    """``train --checkpoint-dir`` (and ocr-rec's ``--out`` folder): missing, made by the
    job; a file there (or above it) failed the job on FileExistsError /
    NotADirectoryError after its data was read: refused before any job."""
    (tmp_path / "t.csv").write_text("a,y\n1,2\n2,4\n3,6\n4,8\n")
    (tmp_path / "labels.txt").write_text("crop0.png\tword\n")
    (tmp_path / "f.txt").write_text("a file")
    head = (f"mlp {tmp_path / 't.csv'}" if flag == "--checkpoint-dir"
            else f"ocr-rec --data {tmp_path / 'labels.txt'}")
    for bad, said in ((tmp_path / "f.txt", "f.txt is a file: name a folder"),
                      (tmp_path / "f.txt" / "ck", "goes through the file")):
        with pytest.raises(ValueError, match=said):
            dry_run("train", f"{head} {flag} {bad}")
    config = dry_run("train", f"{head} {flag} {tmp_path / 'new' / 'ck'}")["config"]
    assert config[flag.lstrip("-").replace("-", "_")].endswith("ck")
    assert not (tmp_path / "new").exists()
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
