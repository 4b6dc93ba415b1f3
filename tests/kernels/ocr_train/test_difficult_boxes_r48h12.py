"""PPOCRLabel's boxes marked difficult are left out of a fine-tune, as PPOCRLabel's own
export of recognition crops leaves them out (round 48, h12).

PPOCRLabel's ``saveRecResult`` ("File > Export Recognition Result") writes a crop and its
text for each box of ``Label.txt`` except those with ``"difficult": true`` (``if
label['difficult']: continue``): the labeller ticks it where a line is too unclear to be
sure of its text. Read as a detection label by ``--data Label.txt``, such a box was cut and
learnt with its guessed text. The oracle is PPOCRLabel's rule applied to the file's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from skiff.kernels.ocr_train.labels import Dictionary, read_labels


def _box(text, x, difficult):
    return {"transcription": text, "difficult": difficult,
            "points": [[x, 5], [x + 40, 5], [x + 40, 20], [x, 20]]}


def test_difficult_boxes_are_left_out_as_ppocrlabel_exports(tmp_path):
    (tmp_path / "pages").mkdir()
    for name in ("a.png", "b.png"):
        Image.fromarray(np.full((30, 200, 3), 255, np.uint8)).save(tmp_path / "pages" / name)
    pages = {
        "pages/a.png": [_box("12", 5, False), _box("7?", 50, True), _box("3.4", 100, False),
                        _box("###", 150, False)],
        "pages/b.png": [_box("0.5", 5, True)],  # every box difficult: nothing to learn
    }
    (tmp_path / "Label.txt").write_text(
        "".join(f"{k}\t{json.dumps(v)}\n" for k, v in pages.items()), encoding="utf-8")
    got = read_labels(tmp_path / "Label.txt", Dictionary(list("0123456789.?#"), space=True))
    # what PPOCRLabel's Export Recognition Result writes for these pages
    exported = [(k, b["transcription"]) for k, boxes in pages.items() for b in boxes
                if not b["difficult"] and b["transcription"] != "###"]
    assert [("/".join(Path(r.image).parts[-2:]), r.text) for r in got.rows] == exported
    assert all(r.box is not None for r in got.rows)
    assert len(got.errors) == 1 and "line 2" in got.errors[0] and "difficult" in got.errors[0]
    said = [w for w in got.warnings if "difficult" in w]
    assert len(said) == 1 and "2 box(es)" in said[0] and "line 1, 2" in said[0]
