"""Round 31: each rank of a job planned with the matmul rate it measured itself, so ranks of
one host under load predicted different step times (0.0644 and 0.0618 s for one gpt-mini job)
and could choose different layouts. Rank 1 here measures a machine 10^4 times slower; each
rank prints ``RESULT {...}`` with the plan's choice, its predicted step time and the rate it
planned with, and its first loss.

usage: mpiexec -n 2 python plan_flops_r31b_check.py
"""

import json

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.parallel import world
from skiff.kernels.train.plan import planner
from skiff.nn import Linear, ReLU, Sequential


class Ranks(NullReporter):
    world_size = 2


def main():
    comm = world()
    if comm.rank == 1:
        measured = planner.measure_flops()
        planner.measure_flops = lambda *a, **k: measured * 1e-4
    skiff.seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 8)).astype(np.float32)
    y = (x.sum(axis=1, keepdims=True) > 0).astype(np.float32)
    trainer = skiff.Trainer(Sequential(Linear(8, 16), ReLU(), Linear(16, 1)), strategy="auto",
                            batch_size=8, seed=0, shuffle=False, reporter=Ranks())
    result = trainer.train((x, y), steps=2)
    plan = trainer.plan
    print("RESULT " + json.dumps({
        "rank": comm.rank, "label": plan.get("label") or plan.get("strategy"),
        "step_time": plan["estimate"]["step_time"], "flops": plan["cluster"]["flops"],
        "loss": result.losses[0]}), flush=True)


if __name__ == "__main__":
    main()
