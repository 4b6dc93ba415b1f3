"""Round 38: the Trainer validates its held-out share every ``eval_every`` steps (h5, as
transformers' ``eval_steps``), but ``python -m skiff train mlp --val-split 0.2 --eval-every
10`` exited 2 ("--eval-every needs --eval FILE"). The check: the job's validation history
holds every N-th step asked (the Trainer's rule, tested against torch in h5's tests)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.jobs.launch import dry_run


def test_eval_every_with_a_val_split_validates_every_n_steps(tmp_path, monkeypatch):
    # the line parsed as the terminal parses it, its config run by the job's own entry in
    # this process (round 41, h5: a subprocess cost an interpreter and a job for this run)
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.entry import run

    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    config = dry_run("train", "mlp --steps 20 --val-split 0.2 --eval-every 5",
                     front="cli")["config"]
    val = run(config, NullReporter()).val_history
    steps = [row["step"] for row in val]
    assert {5, 10, 15, 20} <= set(steps), steps
    assert all(np.isfinite(row["val_loss"]) for row in val)


def test_eval_every_alone_names_both_ways_to_hold_rows_out():
    with pytest.raises(ValueError, match=r"--eval FILE .* or --val-split F"):
        dry_run("train", "mlp --steps 5 --eval-every 2", front="cli")
