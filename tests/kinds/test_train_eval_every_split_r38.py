"""Round 38: the Trainer validates its held-out share every ``eval_every`` steps (h5, as
transformers' ``eval_steps``), but ``python -m skiff train mlp --val-split 0.2 --eval-every
10`` exited 2 ("--eval-every needs --eval FILE"). The check: the job's validation history
holds every N-th step asked (the Trainer's rule, tested against torch in h5's tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from skiff.jobs.launch import dry_run


def test_eval_every_with_a_val_split_validates_every_n_steps(tmp_path):
    env = {**os.environ, "SKIFF_RUNS": str(tmp_path), "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "skiff", "train", "mlp", "--steps", "20",
                          "--val-split", "0.2", "--eval-every", "5", "--json"],
                         capture_output=True, text=True, env=env, timeout=240, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    val = doc.get("result", doc)["val_history"]
    steps = [row["step"] for row in val]
    assert {5, 10, 15, 20} <= set(steps), steps
    assert all(np.isfinite(row["val_loss"]) for row in val)


def test_eval_every_alone_names_both_ways_to_hold_rows_out():
    with pytest.raises(ValueError, match=r"--eval FILE .* or --val-split F"):
        dry_run("train", "mlp --steps 5 --eval-every 2", front="cli")
