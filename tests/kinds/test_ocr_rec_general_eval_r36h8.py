"""Round 36: ``train ocr-rec --general-eval N`` sets how many rendered general lines the
fine-tune reads before and after to measure forgetting (``FineTuneConfig.general_eval``, 100;
0 skips it: about 12 of a quick run's 28 CPU seconds in notebook 05). It had no flag: a
terminal or ``%train`` user could not make the run cheaper. Oracle: the fine-tune's own
config; a negative count refused in one line; other models refuse the flag."""

from __future__ import annotations

import contextlib

import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.ocr_train.entry import config_from
from skiff.kernels.ocr_train.finetune import FineTuneConfig


@pytest.fixture()
def labels(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("a.png\t12\n")
    return path


@pytest.mark.parametrize("extra, want", [("", FineTuneConfig.general_eval),
                                         ("--general-eval 0", 0),
                                         ("--general-eval 20", 20)])
def test_the_flag_reaches_the_fine_tune(labels, tmp_path, extra, want):
    config = dry_run("train", f"ocr-rec --data {labels} {extra}")["config"]
    assert config_from(config, str(tmp_path)).general_eval == want


def test_a_negative_count_is_refused(labels):
    with pytest.raises(Exception, match="--general-eval must be >= 0"):
        dry_run("train", f"ocr-rec --data {labels} --general-eval -1")


def test_other_models_refuse_it():
    with pytest.raises(Exception, match="--general-eval is for train ocr-rec"):
        dry_run("train", "mlp --steps 2 --general-eval 5")


def test_the_help_names_it(capsys):
    from skiff.cli import main

    with contextlib.suppress(SystemExit):
        main(["train", "--help"])
    assert "--general-eval N" in capsys.readouterr().out
