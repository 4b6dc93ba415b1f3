"""Checkpoints of a split model (tp=2 or pp=2 on 2 ranks) without a gather: bytes each rank
writes and reads, bit-exact resume on the same layout, a load on the other layout (pp=2 from
tp=2 and the reverse), and a one-process load of the pieces equal to the gathered weights.

usage: split_ckpt_check.py MODE[,MODE] DIR: each mode (tp, pp) in DIR/MODE, one launch for
both (round 43 h5: two launches before); one ``RESULT`` line a rank, its results by mode.
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.core.optim import AdamW
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import Layout, SelfComm, world
from skiff.kernels.train.parallel.checkpoint import READ_STATS, WRITE_STATS, load_sharded
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO
from skiff.kernels.train.parallel.hybrid import TensorParallel
from skiff.kernels.train.parallel.pipeline import PipelineParallel

CFG = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=4, n_embd=16)
B, T = 4, 8


def batch(step):
    rng = np.random.default_rng(900 + step)
    x = rng.integers(0, 32, (B, T))
    return x, np.roll(x, -1, axis=1)


def build(mode, seed):
    strategy = TensorParallel(Layout(tp=2)) if mode == "tp" else \
        PipelineParallel(Layout(pp=2), micro_batches=2)
    train_random.seed(seed)
    strategy.bind(device="cpu")
    model, opt = strategy.setup(GPT(CFG), lambda ps: AdamW(ps, lr=1e-2))
    return strategy, model, opt


def train(strategy, model, opt, steps):
    losses = []
    for i in steps:
        mb = strategy.to_device(batch(i))
        loss = strategy.forward_backward(model, mb, lambda m, b: m.loss(b))
        strategy.reduce_gradients(model)
        strategy.clip_grad_norm(model, 1.0)
        strategy.optimizer_step(opt)
        opt.zero_grad()
        losses.append(strategy.reduce_metrics({"loss": loss})["loss"])
    return losses


def comm_bytes(strategy):
    g = strategy.groups
    return sum(c.bytes_sent for c in {id(c): c for c in (g.world, g.tp, g.dp, g.pp)}.values())


def check(mode, folder):
    comm = world()
    strat, model, opt = build(mode, 0)
    train(strat, model, opt, range(2))
    sent, wrote = comm_bytes(strat), WRITE_STATS["bytes"]
    strat.save_checkpoint(folder, {"model": model.state_dict(), "optimizer": opt.state_dict(),
                                   "step": 2}, step=2, keep=2)
    sent, wrote = comm_bytes(strat) - sent, WRITE_STATS["bytes"] - wrote
    full = strat.full_state_dict(model)  # the gathered weights at step 2 (a collective)
    ref = train(strat, model, opt, range(2, 4))
    ref_full = strat.full_state_dict(model)

    again, model2, opt2 = build(mode, 1)  # other initial weights: the load must replace them
    READ_STATS["bytes"] = 0
    state = again.load_checkpoint(folder)
    read = READ_STATS["bytes"]
    model2.load_state_dict(state["model"])
    again.load_optimizer_state_dict(opt2, state["optimizer"])
    resumed = train(again, model2, opt2, range(2, 4))
    res_full = again.full_state_dict(model2)

    # the other layout (tp=2 <-> pp=2) on the same ranks: each reads only its stage's or its
    # slices' rows, and holds the weights the split run had at step 2
    other, model3, opt3 = build("pp" if mode == "tp" else "tp", 3)
    READ_STATS["bytes"] = 0
    state = other.load_checkpoint(folder)
    cross_read = READ_STATS["bytes"]
    model3.load_state_dict(state["model"])
    other.load_optimizer_state_dict(opt3, state["optimizer"])
    cross_full = other.full_state_dict(model3)
    cross_losses = train(other, model3, opt3, range(2, 4))

    out = {"rank": comm.rank, "sent": sent, "wrote": wrote, "read": read,
           "cross_read": cross_read, "cross_losses": cross_losses,
           "cross_equal": all(np.array_equal(cross_full[k], full[k]) for k in full),
           "model_bytes": int(sum(v.nbytes for v in full.values())),
           "ref": ref, "resumed": resumed,
           "exact": all(np.array_equal(ref_full[k], res_full[k]) for k in ref_full)}
    if comm.rank == 0:  # one process, tp=1: the pieces read whole equal the gathered weights
        found = load_sharded(folder, SelfComm())
        out["pieces_equal_gathered"] = all(
            np.array_equal(found["pieces"][f"model/{k}"], v) for k, v in full.items())
        one = DataParallel(SelfComm())
        one.bind(device="cpu")
        train_random.seed(2)
        m1, o1 = one.setup(GPT(CFG), lambda ps: AdamW(ps, lr=1e-2))
        st = one.load_checkpoint(folder)
        m1.load_state_dict(st["model"])
        one.load_optimizer_state_dict(o1, st["optimizer"])
        out["tp1_equal_gathered"] = all(np.array_equal(v, full[k])
                                        for k, v in m1.state_dict().items())
        # and it trains on from there like the split run (its optimizer state came back)
        out["tp1_losses"] = train(one, m1, o1, range(2, 4))
        zero = ZeRO(1, SelfComm())  # the moments as one flat slice
        zero.bind(device="cpu")
        train_random.seed(2)
        mz, oz = zero.setup(GPT(CFG), lambda ps: AdamW(ps, lr=1e-2))
        st = zero.load_checkpoint(folder)
        mz.load_state_dict(st["model"])
        zero.load_optimizer_state_dict(oz, st["optimizer"])
        out["zero_losses"] = train(zero, mz, oz, range(2, 4))
    return out


def main():
    out = {"rank": world().rank}
    for mode in sys.argv[1].split(","):
        out[mode] = check(mode, f"{sys.argv[2]}/{mode}")
    print("RESULT " + json.dumps(out), flush=True)


main()
