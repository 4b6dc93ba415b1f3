"""Round 31: a run's speed said with its first step apart.

A fresh process pays numba's kernel loading (1-2 s) in its first optimizer step, ranks pay it
before the clock (the plan check's micro-run): the same 50 steps of an MLP read "1.84 s, 872
samples/s" in one process and "0.229 s, 6,990 samples/s" on 2 ranks, as if two ranks were
8x faster. The result now keeps ``first_step_s`` and the speed after it, and the job summary
says both when the first step took most of the run. The oracle is arithmetic over what the
run counted (a first step made slow on purpose: its loss sleeps once), not a timing.
"""

from __future__ import annotations

import time

import numpy as np

import skiff
from skiff import nn
from skiff.kinds import KINDS


def test_first_step_and_the_speed_after_it():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(70, 3)).astype(np.float32)
    y = rng.normal(size=(70, 1)).astype(np.float32)
    calls = []

    def slow_once(out, target):
        if not calls:
            time.sleep(0.4)
        calls.append(1)
        return ((out - target) ** 2).mean()

    skiff.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 1), strategy="single", batch_size=16, loss=slow_once)
    result = trainer.train((x, y), epochs=2)  # batches 16 16 16 16 6, twice: 10 steps
    assert result.steps == 10
    assert 0.4 <= result.first_step_s < result.time_s
    want = (140 - 16) / (result.time_s - result.first_step_s)
    np.testing.assert_allclose(result.samples_per_s_after_first, want, rtol=1e-3)
    np.testing.assert_allclose(result.samples_per_s, 140 / result.time_s, rtol=1e-3)
    out = result.to_json()
    assert out["first_step_s"] == round(result.first_step_s, 4)
    assert out["samples_per_s_after_first"] == result.samples_per_s_after_first


def test_one_step_has_no_speed_after_it():
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 1), strategy="single", batch_size=8)
    x = np.ones((8, 3), np.float32)
    result = trainer.train((x, x[:, :1]), steps=1)
    assert result.first_step_s is None and result.samples_per_s_after_first is None
    assert "first_step_s" not in result.to_json()


def test_summary_says_a_first_step_that_took_most_of_the_run():
    base = {"steps": 50, "final_loss": 0.6, "time_s": 1.84, "samples_per_s": 872.0}
    lines = KINDS["train"].summary({**base, "first_step_s": 1.69,
                                    "samples_per_s_after_first": 10666.7})
    assert lines[1] == ("1.84 s (the first step 1.69 s: kernels loaded once), 872 samples/s "
                        "(10,667 after the first step)")
    # a first step like the others: the line as before
    lines = KINDS["train"].summary({**base, "first_step_s": 0.04,
                                    "samples_per_s_after_first": 880.0})
    assert lines[1] == "1.84 s, 872 samples/s"
