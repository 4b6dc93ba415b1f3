"""Round 41 (h5): the train kind's ``--checkpoint-every epoch`` and ``--keep-best``
(transformers' ``save_strategy="epoch"`` and ``save_total_limit`` with the best checkpoint
kept), and the warning of an ``--early-stop`` whose ``--eval-every`` is past the run's end.
Run in-process (the job's own ``entry.run``), no subprocess. Oracle: the files left in the
folder against the validation rows the job reports (the smallest val_loss), and the epoch
ends counted from the table's rows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.backend.report import NullReporter

ROWS = 50


def _table(path):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(ROWS, 3))
    y = x @ [1.0, -2.0, 0.5] + 0.5 * rng.normal(size=ROWS)
    with open(path, "w") as f:
        f.write("a,b,c,y\n")
        for row, t in zip(x, y):
            f.write(",".join(f"{v:.4f}" for v in row) + f",{t:.4f}\n")


def test_the_options_reach_the_config():
    config = dry_run("train", "mlp --steps 3 --checkpoint-every epoch --keep-best "
                              "--val-split 0.2")["config"]
    assert config["checkpoint_every"] == "epoch" and config["keep_best"] == 1
    assert "keep_best" not in dry_run("train", "mlp --steps 3")["config"]
    with pytest.raises(Exception, match="'epoch'"):
        dry_run("train", "mlp --steps 3 --checkpoint-every often")


def test_keep_best_without_a_validation_set_is_refused(tmp_path):
    _table(tmp_path / "t.csv")
    with pytest.raises(Exception, match="--val-split"):
        dry_run("train", f"mlp {tmp_path / 't.csv'} --target y --keep-best")
    labels = tmp_path / "labels.txt"
    labels.write_text("a.png\tx\n")
    with pytest.raises(Exception, match="keep-best"):
        dry_run("train", f"ocr-rec --data {labels} --keep-best")


def test_a_job_keeps_the_newest_and_the_best(tmp_path):
    from skiff.kernels.train.entry import run

    _table(tmp_path / "t.csv")
    ck = tmp_path / "ck"
    line = (f"mlp {tmp_path / 't.csv'} --target y --val-split 0.2 --epochs 6 --lr 0.05 "
            f"--batch-size 8 --checkpoint-every epoch --keep-best --keep-checkpoints 1 "
            f"--checkpoint-dir {ck}")
    result = run(dry_run("train", line)["config"], NullReporter())
    per_epoch = -(-(ROWS - round(ROWS * 0.2)) // 8)
    losses = {v["step"]: v["val_loss"] for v in result.val_history}
    assert sorted(losses) == [per_epoch * e for e in range(1, 7)]  # each epoch's end
    best = min(losses, key=losses.get)
    kept = sorted(int(p.name[5:13]) for p in ck.glob("step-*.npz"))
    assert kept == sorted({best, result.steps})
    assert result.best_checkpoint == str(ck / f"step-{best:08d}.npz")
    assert json.loads((ck / "best.json").read_text())["value"] == pytest.approx(losses[best])


def test_early_stop_past_the_run_is_said_in_the_summary(tmp_path):
    from skiff.kernels.train.entry import run
    from skiff.kinds.train import KIND

    _table(tmp_path / "t.csv")
    line = (f"mlp {tmp_path / 't.csv'} --target y --val-split 0.2 --steps 5 --eval-every 50 "
            "--early-stop 2")
    with pytest.warns(UserWarning, match="cannot stop"):  # a script's warning: NullReporter
        result = run(dry_run("train", line)["config"], NullReporter())
    said = [n for n in result.notes if "cannot stop" in n]
    assert len(said) == 1 and "--eval-every" in said[0]
    lines = KIND.summary(result.to_json())
    assert any(x.startswith("warning: early_stopping=2") for x in lines), lines
