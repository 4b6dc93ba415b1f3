"""Round 34 (h8): ``train ocr-rec --val-split F`` holds out that share of --data's crops
(the fine-tune's ``FineTuneConfig.val_fraction``, 0.1 by default, was reachable from Python
only; the front refused ``--val-split`` as "not an option of train ocr-rec"). With ``--val
FILE`` (the held-out set itself) it is refused: one of them.

The oracle is the fine-tune's own split (``split_rows``) of the same rows and seed."""

from __future__ import annotations

import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.ocr_train.entry import config_from
from skiff.kernels.ocr_train.finetune import FineTuneConfig, split_rows
from skiff.kernels.ocr_train.labels import LabelRow


def _labels(tmp_path, n=40):
    path = tmp_path / "labels.txt"
    path.write_text("".join(f"crop{i}.png\tword {i}\n" for i in range(n)))
    return path


@pytest.mark.parametrize("front", ["cli", "magic"])
def test_val_split_reaches_the_fine_tune(runs_dir, tmp_path, front):
    labels = _labels(tmp_path)
    config = dry_run("train", f"ocr-rec --data {labels} --val-split 0.3 --seed 2",
                     front=front)["config"]
    cfg = config_from(config, tmp_path)
    assert cfg.val_fraction == 0.3
    rows = [LabelRow(image=str(tmp_path / f"crop{i}.png"), text=f"word {i}", line=i + 1)
            for i in range(40)]
    held, train = split_rows(rows, cfg.val_fraction, cfg.seed)
    assert (len(held), len(train)) == (12, 28)
    # left out: the fine-tune's default, as before
    config = dry_run("train", f"ocr-rec --data {labels}", front=front)["config"]
    assert config_from(config, tmp_path).val_fraction == FineTuneConfig.val_fraction == 0.1
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_val_split_with_a_val_file_is_refused(runs_dir, tmp_path):
    labels = _labels(tmp_path)
    with pytest.raises(ValueError, match="give one of them"):
        dry_run("train", f"ocr-rec --data {labels} --val {labels} --val-split 0.2")


def test_val_split_is_a_fraction(runs_dir, tmp_path, capsys):
    from skiff.cli import main

    labels = _labels(tmp_path)
    assert main(["train", "ocr-rec", "--data", str(labels), "--val-split", "3",
                 "--dry-run"]) != 0
    assert "--val-split" in capsys.readouterr().err
