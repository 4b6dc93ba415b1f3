"""Round 33 (h8): ``python -m skiff predict RUN a.png b.png ...`` loaded the model once per
path (200 paths: 0.375 s CPU against 0.035 s as one list, 0.029 s as their folder).
``predict_images`` takes the list and loads the model once; the rows are those of each path
predicted alone (the oracle), in the order given, named from the paths as typed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from skiff.cli import main
from skiff.kernels.train import models
from skiff.kernels.train.image_predict import predict_images


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("once")
    run = tmp / "run"
    run.mkdir()
    models.get("cnn", in_channels=1, num_classes=2, image_size=16).save(str(run / "model.npz"))
    (run / "images.json").write_text(json.dumps({"classes": ["dark", "light"], "size": 16,
                                                 "channels": 1, "mean": [0.5], "std": [0.2]}))
    rng = np.random.default_rng(3)
    for k in range(4):
        Image.fromarray(rng.integers(0, 256, (20, 22), dtype=np.uint8)).save(tmp / f"{k}.png")
    for cls, level in (("dark", 40), ("light", 210), ("odd", 120)):
        (tmp / "new" / cls).mkdir(parents=True)
        pixels = np.clip(rng.normal(level, 30, (18, 18)), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(tmp / "new" / cls / "x.png")
    (tmp / "new" / "dark" / "notes.png").write_bytes(b"not an image")
    return tmp, run


def _count_loads(monkeypatch):
    loads = []
    real = models.get

    def counted(*args, **kwargs):
        loads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(models, "get", counted)
    return loads


def test_several_paths_load_the_model_once(run, monkeypatch, capsys):
    tmp, run_dir = run
    paths = [str(tmp / f"{k}.png") for k in (2, 0, 3, 1)] + [str(tmp / "new") + "/"]
    alone = [predict_images(run_dir, p) for p in paths]  # the oracle: each path alone
    loads = _count_loads(monkeypatch)
    assert main(["predict", str(run_dir), *paths, "--json"]) == 0
    assert len(loads) == 1  # was one per path (5)
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"] == paths[:4] + [f"{tmp / 'new'}/{f}" for f in alone[4].files]
    assert doc["predictions"] == sum((r.predictions for r in alone), [])
    assert np.allclose(doc["probabilities"], sum((r.probabilities for r in alone), []))
    assert doc["truth"] is None  # four paths name no class


def test_a_list_keeps_each_paths_notes_and_scores_over_all(run):
    tmp, run_dir = run
    one = predict_images(run_dir, tmp / "new")
    both = predict_images(run_dir, [str(tmp / "new"), str(tmp / "new")])
    assert both.predictions == one.predictions * 2
    assert both.truth == one.truth * 2 == [f.split("/")[-2] for f in both.files]
    hits = [p == t for p, t in zip(both.predictions, both.truth)]
    assert both.score["accuracy"] == pytest.approx(np.mean(hits)) and both.score["rows"] == 6
    own = [n for n in both.notes if n.startswith(f"{tmp / 'new'}: ")]
    assert len(own) == 4  # per path: the file left out, the class not trained on
    assert any("'odd' not among the trained classes" in n for n in own)
    assert any("no image left out (the first: dark/notes.png)" in n for n in own)


def test_a_bad_path_is_named_before_the_model_is_loaded(run, monkeypatch):
    from skiff.kernels.train.image_folder import ImageFolderError

    tmp, run_dir = run
    loads = _count_loads(monkeypatch)
    with pytest.raises(ImageFolderError, match="gone.png"):
        predict_images(run_dir, [str(tmp / "0.png"), str(tmp / "gone.png")])
    assert loads == []
