"""Round 35: ``train ocr-rec --upright yes|no|auto`` (h2's ``FineTuneConfig.upright``: the
export's ``skiff_upright`` mark, which makes ``%ocr`` skip the direction model for that
recognizer). ``auto`` (the default) leaves it to the measure on the held-out crops; yes/no
say it. Oracle: the fine-tune's own config and decision (``finetune._upright``), and the
summary naming the mark; other models refuse the flag in one line."""

from __future__ import annotations

import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.ocr_train import finetune
from skiff.kernels.ocr_train.entry import config_from
from skiff.kinds.train import KIND


@pytest.fixture()
def labels(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("a.png\t12\n")
    return path


@pytest.mark.parametrize("said, want", [(None, None), ("auto", None), ("yes", True),
                                        ("no", False)])
def test_the_flag_reaches_the_fine_tune(labels, tmp_path, said, want):
    line = f"ocr-rec --data {labels}" + (f" --upright {said}" if said else "")
    config = dry_run("train", line)["config"]
    assert ("upright" in config) == (want is not None)
    cfg = config_from(config, str(tmp_path))
    assert cfg.upright is want
    if want is not None:   # said: the decision is the user's, nothing measured
        assert finetune._upright(cfg, None, [], []) == (want, f"given (upright={want})")


def test_other_models_refuse_it():
    with pytest.raises(Exception, match="--upright is for train ocr-rec"):
        dry_run("train", "mlp --steps 2 --upright yes")


def test_the_summary_says_the_mark():
    result = {"onnx": "/r/rec.onnx", "steps": 2, "upright": True,
              "upright_measure": "20 held-out crops read 0.9850 with the direction model, "
                                 "1.0000 without"}
    lines = KIND.summary(result)
    (said,) = [s for s in lines if s.startswith("crops come upright")]
    assert "1.0000 without" in said and "skips the direction model" in said
    assert not [s for s in KIND.summary({**result, "upright": False})
                if s.startswith("crops come upright")]
