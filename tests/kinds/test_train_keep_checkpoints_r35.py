"""Round 35: ``--keep-checkpoints N`` (transformers' ``save_total_limit``) reaches the
Trainer a ``train`` job builds: the checkpoint folder keeps the N newest step files (the
Trainer's default, 3, otherwise). Oracle: the files left in the folder, and the Trainer run
in Python with ``keep_checkpoints=N`` leaving the same ones. ocr-rec (one ``rec.ckpt``)
refuses the flag in one line."""

from __future__ import annotations

import os

import numpy as np
import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.backend.report import NullReporter


def _steps(folder):
    return sorted(f for f in os.listdir(folder) if f.startswith("step-") and f.endswith(".npz"))


def _table(path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    with open(path, "w") as f:
        f.write("a,b,c,y\n")
        for row in x:
            f.write(",".join(f"{v:.4f}" for v in row) + f",{row.sum():.4f}\n")


def test_the_flag_reaches_the_config_only_when_given():
    assert "keep_checkpoints" not in dry_run("train", "mlp --steps 3")["config"]
    assert dry_run("train", "mlp --steps 3 --keep-checkpoints 1")["config"][
        "keep_checkpoints"] == 1


@pytest.mark.parametrize("keep", [None, 1])
def test_a_jobs_folder_keeps_that_many(tmp_path, keep):
    from skiff.kernels.train.entry import run

    _table(tmp_path / "t.csv")
    ckpt = tmp_path / "ck"
    line = (f"mlp {tmp_path / 't.csv'} --target y --steps 6 --checkpoint-every 1 "
            f"--checkpoint-dir {ckpt}" + (f" --keep-checkpoints {keep}" if keep else ""))
    run(dry_run("train", line)["config"], NullReporter())
    names = _steps(ckpt)
    expected = 3 if keep is None else keep
    assert len(names) == expected, names
    assert names[-1] == "step-00000006.npz"


def test_ocr_rec_refuses_it(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("a.png\tx\n")
    with pytest.raises(Exception, match="keep-checkpoints"):
        dry_run("train", f"ocr-rec --data {labels} --keep-checkpoints 2")
