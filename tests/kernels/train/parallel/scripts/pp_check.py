"""Pipeline parallel (and dp x pp) GPT against the single-device GPT on the same batch.

usage: pp_check.py DP PP STEPS MICRO
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.core.optim import SGD
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import Layout, world
from skiff.kernels.train.parallel.pipeline import PipelineParallel
from skiff.kernels.train.strategy import SingleDevice

CFG = GPTConfig(block_size=8, vocab_size=32, n_layer=3, n_head=2, n_embd=16)
B, T = 8, 8


def batch(step):
    rng = np.random.default_rng(700 + step)
    x = rng.integers(0, 32, (B, T))
    return x, np.roll(x, -1, axis=1)


def run(strategy, steps, shard, parts, pipeline=False, dtype="float32"):
    train_random.seed(0)
    model = GPT(CFG)
    if dtype == "float64":  # a user's float64 model: trained in float64 on every stage
        model = model.double()
    strategy.bind(device="cpu")
    make = lambda ps: SGD(ps, lr=0.1, momentum=0.9)  # noqa: E731
    if pipeline:
        model, opt = strategy.setup(model, make, sample=batch(0))
    else:
        model, opt = strategy.setup(model, make)
    losses = []
    for step in range(steps):
        x, y = batch(step)
        lo, hi = shard * B // parts, (shard + 1) * B // parts
        mb = (x[lo:hi], y[lo:hi])
        if not pipeline:
            mb = strategy.to_device(mb)
        loss = strategy.forward_backward(model, mb, lambda m, b: m.loss(b))
        strategy.reduce_gradients(model)
        strategy.clip_grad_norm(model, 1.0)
        strategy.optimizer_step(opt)
        opt.zero_grad()
        losses.append(strategy.reduce_metrics({"loss": loss})["loss"])
    return losses, strategy.full_state_dict(model)


def main():
    dp, pp, steps, micro = (int(v) for v in sys.argv[1:5])
    comm = world()
    strat = PipelineParallel(Layout(dp=dp, pp=pp), micro_batches=micro)
    shard, parts = strat.data_shard()
    losses, state = run(strat, steps, shard, parts, pipeline=True)
    ref_losses, ref = run(SingleDevice(), steps, 0, 1)
    out = {"rank": comm.rank, "losses": losses, "ref": ref_losses, "stages": strat.ranges,
           "stage": strat.stage, "peak_in_flight": strat.peak_in_flight,
           "loss_diff": float(np.max(np.abs(np.array(losses) - ref_losses))),
           "weight_diff": max(float(np.max(np.abs(state[k] - ref[k]))) for k in ref)}
    if dp == 1:  # the same launch: a float64 model keeps float64 through the stages
        strat64 = PipelineParallel(Layout(dp=dp, pp=pp), micro_batches=micro)
        losses, state = run(strat64, steps, shard, parts, pipeline=True, dtype="float64")
        ref_losses, ref = run(SingleDevice(), steps, 0, 1, dtype="float64")
        out["f64_loss_diff"] = float(np.max(np.abs(np.array(losses) - ref_losses)))
        out["f64_weight_diff"] = max(float(np.max(np.abs(state[k] - ref[k]))) for k in ref)
        out["f64_dtypes"] = sorted({str(v.dtype) for v in state.values()})
        out["f64_ref_dtypes"] = sorted({str(v.dtype) for v in ref.values()})
    print("RESULT " + json.dumps(out), flush=True)


main()
