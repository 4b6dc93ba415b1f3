"""Round 35: ``train ... --early-stop N --resume`` of a run that early stopping had ended
trains nothing (the trainer warns so), and its summary said only "resumed from step 20",
read as a run that went on. Now the summary says nothing was trained and why. Oracle: the
trainer's own result (its steps equal the step it resumed from, its ``stopped`` reason)."""

from __future__ import annotations

import warnings

import numpy as np

from skiff.jobs.launch import dry_run
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.entry import run
from skiff.kinds.train import KIND


def test_resuming_an_early_stopped_run_says_nothing_was_trained(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    table = tmp_path / "t.csv"
    with open(table, "w") as f:   # a target of noise: the validation loss stops improving
        f.write("a,b,c,y\n")
        for r in x:
            f.write(",".join(f"{v:.4f}" for v in r) + f",{rng.normal():.4f}\n")
    line = (f"mlp {table} --target y --epochs 40 --early-stop 1 --val-split 0.2 "
            f"--checkpoint-every 5 --checkpoint-dir {tmp_path / 'ck'}")
    first = run(dry_run("train", line)["config"], NullReporter())
    assert str(first.stopped).startswith("early stopping")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = run(dry_run("train", line + " --resume")["config"], NullReporter()).to_json()
    assert again["resumed"]["from_step"] == again["steps"] == first.steps
    lines = KIND.summary(again)
    said = [s for s in lines if s.startswith("resumed from step")]
    assert said == [f"resumed from step {first.steps}: nothing trained, the run had stopped "
                    f"early there ({again['stopped']}; a larger --early-stop trains on)"]
