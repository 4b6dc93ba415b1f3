"""Round 35: ``train ocr-rec --freeze-head --train-from WEIGHT --general-fonts F1,F2`` (h10's
``FineTuneConfig.freeze_head`` / ``train_from`` / ``general_fonts``: what a domain adaptation
such as h1's small-print run needed) reach the fine-tune from the terminal and ``%train``.
Oracle: the fine-tune's own config; conflicting or bad values refused in one line, and other
models refuse the flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.ocr_train.entry import config_from

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


@pytest.fixture()
def labels(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("a.png\t12\n")
    return path


def test_the_flags_reach_the_fine_tune(labels, tmp_path):
    if not FONT.exists():
        pytest.skip("DejaVu Sans not installed")
    plain = config_from(dry_run("train", f"ocr-rec --data {labels}")["config"], str(tmp_path))
    assert (plain.freeze_head, plain.train_from, plain.general_fonts) == (False, None, None)
    config = dry_run("train", f"ocr-rec --data {labels} --freeze-head --train-from "
                              f"conv2d_117.w_0 --general-fonts {FONT}")["config"]
    cfg = config_from(config, str(tmp_path))
    assert cfg.freeze_head is True and cfg.train_from == "conv2d_117.w_0"
    assert cfg.general_fonts == [str(FONT)]


@pytest.mark.parametrize("extra, said", [
    ("--train-from conv2d_117.w_0 --freeze 0.3", "give one of them"),
    ("--general-fonts /no/such.ttf", "no such file")])
def test_bad_values_are_refused(labels, extra, said):
    with pytest.raises(Exception, match=said):
        dry_run("train", f"ocr-rec --data {labels} {extra}")


def test_other_models_refuse_them():
    with pytest.raises(Exception, match="--freeze-head is for train ocr-rec"):
        dry_run("train", "mlp --steps 2 --freeze-head")
