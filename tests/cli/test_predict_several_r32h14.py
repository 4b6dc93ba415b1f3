"""Round 32 (h14): ``python -m skiff predict RUN a.png b.png`` was "unrecognized arguments":
one file or folder only. Several images or folders are predicted each and their rows joined
in the order given (each file named from the path given), the score over all where each
names its class folders; several CSV files for a table model are one line. The oracle: the
kernel's ``predict_images`` of each path alone, and the classes of the folders written."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from PIL import Image

from skiff.cli import main
from skiff.kernels.train.image_predict import predict_images


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from skiff.kernels.train import models

    tmp = tmp_path_factory.mktemp("several")
    run = tmp / "run"
    run.mkdir()
    models.get("cnn", in_channels=1, num_classes=2, image_size=16).save(str(run / "model.npz"))
    (run / "images.json").write_text(json.dumps({"classes": ["dark", "light"], "size": 16,
                                                 "channels": 1, "mean": [0.5], "std": [0.2]}))
    rng = np.random.default_rng(0)
    for name in ("a.png", "b.png"):
        Image.fromarray(rng.integers(0, 256, (20, 24), dtype=np.uint8)).save(tmp / name)
    for root in ("new", "more"):
        for cls in ("dark", "light"):
            (tmp / root / cls).mkdir(parents=True)
            for k in range(3):
                level = 40 if cls == "dark" else 210
                pixels = np.clip(rng.normal(level, 30, (18, 18)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(tmp / root / cls / f"{k}.png")
    return tmp, run


def _rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_several_images_are_each_predicted_and_joined_in_order(run, capsys):
    tmp, run_dir = run
    paths = [str(tmp / "b.png"), str(tmp / "a.png"), str(tmp / "new")]
    assert main(["predict", str(run_dir), *paths, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    alone = [predict_images(run_dir, p) for p in paths]  # the oracle: each path alone
    assert doc["files"] == [paths[0], paths[1]] + [f"{paths[2]}/{f}" for f in alone[2].files]
    assert doc["predictions"] == sum((r.predictions for r in alone), [])
    assert np.allclose(doc["probabilities"], sum((r.probabilities for r in alone), []))
    assert doc["truth"] is None and doc["score"] == {}  # two of the paths name no class

    assert main(["predict", str(run_dir), *paths]) == 0  # the CSV: a row each, same order
    rows = _rows(capsys.readouterr().out)
    # then each class's probability (round 45 h11)
    assert rows[0] == ["file", "class predicted", "probability", "P(dark)", "P(light)"]
    assert [r[0] for r in rows[1:]] == doc["files"]


def test_class_folders_are_scored_together(run, capsys):
    tmp, run_dir = run
    paths = [str(tmp / "new"), str(tmp / "more")]
    assert main(["predict", str(run_dir), *paths, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    truth = [f.split("/")[-2] for f in doc["files"]]  # the folders written
    assert doc["truth"] == truth and len(truth) == 12
    hits = [p == t for p, t in zip(doc["predictions"], truth)]
    assert doc["score"]["accuracy"] == pytest.approx(np.mean(hits))
    assert doc["score"]["rows"] == 12
    one = predict_images(run_dir, paths[0])  # one path: as before (no prefix)
    assert main(["predict", str(run_dir), paths[0], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == one.files


def test_several_csv_files_for_a_table_model_are_one_line(tmp_path, capsys):
    run_dir = tmp_path / "table-run"
    run_dir.mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("x,y\n1,2\n")
    assert main(["predict", str(run_dir), str(tmp_path / "a.csv"),
                 str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "one CSV file, got 2" in err and "unrecognized" not in err


def test_a_missing_path_among_several_names_it(run, capsys):
    tmp, run_dir = run
    assert main(["predict", str(run_dir), str(tmp / "a.png"), str(tmp / "gone.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gone.png" in err
