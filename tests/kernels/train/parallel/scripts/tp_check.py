"""Tensor parallel (and dp x tp) GPT against the single-device GPT on the same global batch.

usage: tp_check.py DP TP STEPS
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.core.optim import SGD
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import Layout, world
from skiff.kernels.train.parallel.hybrid import TensorParallel
from skiff.kernels.train.strategy import SingleDevice

CFG = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=4, n_embd=16)
B, T = 4, 8


def batch(step):
    rng = np.random.default_rng(500 + step)
    x = rng.integers(0, 32, (B, T))
    return x, np.roll(x, -1, axis=1)


def run(strategy, steps, shard, parts, dtype="float32"):
    train_random.seed(0)
    model = GPT(CFG)
    if dtype == "float64":  # a user's float64 model: trained in float64 on every rank
        model = model.double()
    strategy.bind(device="cpu")
    model, opt = strategy.setup(model, lambda ps: SGD(ps, lr=0.1, momentum=0.9))
    losses = []
    for step in range(steps):
        x, y = batch(step)
        lo, hi = shard * B // parts, (shard + 1) * B // parts
        mb = strategy.to_device((x[lo:hi], y[lo:hi]))
        loss = strategy.forward_backward(model, mb, lambda m, b: m.loss(b))
        strategy.reduce_gradients(model)
        strategy.clip_grad_norm(model, 1.0)
        strategy.optimizer_step(opt)
        opt.zero_grad()
        losses.append(strategy.reduce_metrics({"loss": loss})["loss"])
    return losses, strategy.full_state_dict(model)


def main():
    dp, tp, steps = (int(v) for v in sys.argv[1:4])
    comm = world()
    strat = TensorParallel(Layout(dp=dp, tp=tp))
    shard, parts = strat.data_shard()
    losses, state = run(strat, steps, shard, parts)
    ref_losses, ref = run(SingleDevice(), steps, 0, 1)
    out = {"rank": comm.rank, "losses": losses, "ref": ref_losses,
           "loss_diff": float(np.max(np.abs(np.array(losses) - ref_losses))),
           "weight_diff": max(float(np.max(np.abs(state[k] - ref[k]))) for k in ref),
           "keys_equal": sorted(state) == sorted(ref),
           "worst": sorted((float(np.max(np.abs(state[k] - ref[k]))), k) for k in ref)[-3:]}
    if dp == 1:  # the same launch: a float64 model keeps float64 over the tp ranks
        strat64 = TensorParallel(Layout(dp=dp, tp=tp))
        losses, state = run(strat64, steps, shard, parts, dtype="float64")
        ref_losses, ref = run(SingleDevice(), steps, 0, 1, dtype="float64")
        out["f64_loss_diff"] = float(np.max(np.abs(np.array(losses) - ref_losses)))
        out["f64_weight_diff"] = max(float(np.max(np.abs(state[k] - ref[k]))) for k in ref)
        out["f64_dtypes"] = sorted({str(v.dtype) for v in state.values()})
        out["f64_ref_dtypes"] = sorted({str(v.dtype) for v in ref.values()})
    print("RESULT " + json.dumps(out), flush=True)


main()
