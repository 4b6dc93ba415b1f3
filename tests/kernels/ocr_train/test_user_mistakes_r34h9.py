"""Round 34 (h9): a user's mistakes said before the run, not after it.

* ``--out`` naming a file: the run trained, then failed at the export with FileExistsError
  (36 s for one step; a 10-minute run lost). Refused now before the base model is loaded.
* ``--out`` holding a stopped run's ``rec.ckpt`` without ``--resume``: the new run
  overwrote it silently at its first checkpoint; a folder's ``rec.onnx``: replaced at the
  end without a word. Both are warnings at the start now.
* A whole page listed as a crop: "11 characters on an image 1240 x 1754 px ... gives 5
  frames" did not say what was wrong; it says the image is a page, not a line crop.
* 20 crops, 2 held out: the run said nothing of it.
"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr_train import finetune as ft


class Log:
    def __init__(self):
        self.lines = []

    def log(self, text, level="info"):
        self.lines.append((level, text))

    def warnings(self):
        return [t for lv, t in self.lines if lv == "warning"]


def test_out_naming_a_file_is_refused_before_the_base_loads(tmp_path, monkeypatch):
    out = tmp_path / "rec"
    out.write_text("not a folder")
    labels = tmp_path / "labels.txt"
    labels.write_text("a.png\tAB\n")

    def no_load(*a, **k):  # the old code got this far, trained, then failed at export
        raise AssertionError("the base model was loaded before --out was checked")

    monkeypatch.setattr(ft, "base_model_path", lambda name: tmp_path / "base.onnx")
    monkeypatch.setattr(ft.OnnxModule, "load", staticmethod(no_load))
    cfg = ft.FineTuneConfig(data=str(labels), out=str(out))
    with pytest.raises(ValueError, match="is a file, not a folder"):
        ft.fine_tune(cfg, Log())


def test_a_stopped_runs_checkpoint_and_an_old_model_are_named(tmp_path):
    out = tmp_path / "rec"
    out.mkdir()
    (out / ft.CHECKPOINT).write_bytes(b"x")
    (out / "rec.onnx").write_bytes(b"x")
    log = Log()
    ft._check_out(ft.FineTuneConfig(data="l.txt", out=str(out)), log)
    said = log.warnings()
    assert len(said) == 2
    assert "stopped run" in said[0] and "--resume" in said[0]
    assert "already holds rec.onnx" in said[1]
    log = Log()  # resuming from it is what the checkpoint is for: no warning of it
    ft._check_out(ft.FineTuneConfig(data="l.txt", out=str(out), resume=True), log)
    assert [w for w in log.warnings() if "stopped run" in w] == []
    log = Log()  # a new folder: nothing to say
    ft._check_out(ft.FineTuneConfig(data="l.txt", out=str(tmp_path / "new")), log)
    assert log.lines == []


def test_a_whole_page_is_named_as_a_page():
    page = np.full((1754, 1240), 255, np.uint8)  # A4 at 150 dpi
    why = ft._too_narrow(page, "TOTAL 12.50")
    assert why is not None and "whole page" in why and "1240 x 1754" in why
    short = np.full((48, 20), 255, np.uint8)  # a crop cut short keeps its frame count
    why = ft._too_narrow(short, "TOTAL 12.50")
    assert why is not None and "frames" in why and "page" not in why
    line = np.full((48, 400), 255, np.uint8)
    assert ft._too_narrow(line, "TOTAL 12.50") is None


def test_few_rows_are_said():
    said = ft._few_rows(18, 2)
    assert len(said) == 2 and "only 18 crops" in said[0] and "50 points" in said[1]
    assert ft._few_rows(1800, 200) == []
    assert ft._few_rows(500, 0) == []  # nothing held out: nothing to say of its size
