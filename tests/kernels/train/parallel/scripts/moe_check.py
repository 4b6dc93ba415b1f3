"""Expert parallel gpt-moe (tiny) on this world against one process holding every expert.

Each rank takes its share of the global batch (rows ``r::p``, as the Trainer's loader
shards); the one-process reference runs the whole batch at once: the expert capacity and the
load-balancing loss are the whole batch's on the ranks too (they were each rank's share's,
0.5% off one process in a gpt-moe job's first loss). usage: moe_check.py STEPS
CAPACITY_FACTOR [late | built | built,late]
("late": the model is built with every expert and the strategy shares them out; "built,late":
both in one launch, a result each)
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.core.optim import SGD
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.moe import ExpertParallel, gpt_moe

B, T = 4, 8


def batch(step):
    rng = np.random.default_rng(900 + step)
    x = rng.integers(0, 64, (B, T))
    return x, np.roll(x, -1, axis=1)


def main():
    steps, cap = int(sys.argv[1]), float(sys.argv[2])
    modes = (sys.argv[3] if len(sys.argv) > 3 else "built").split(",")
    comm = world()
    if len(modes) == 1:
        out = check(comm, steps, cap, modes[0] == "late")
    else:  # "built,late": both in one launch (round 43 h10), a result each
        out = {"rank": comm.rank, **{m: check(comm, steps, cap, m == "late") for m in modes}}
    print("RESULT " + json.dumps(out), flush=True)


def check(comm, steps, cap, late):
    """This rank's losses, the reference's, tokens dropped and the differences."""
    p, r = comm.size, comm.rank
    train_random.seed(0)
    model = gpt_moe(block_size=T, capacity_factor=cap, ep_comm=None if late else comm)
    strat = ExpertParallel(comm, bucket_mb=0.01).bind(device="cpu")
    model, opt = strat.setup(model, lambda ps: SGD(ps, lr=0.1, momentum=0.9))
    train_random.seed(0)
    ref = gpt_moe(block_size=T, capacity_factor=cap)
    ref_opt = SGD(list(ref.parameters()), lr=0.1, momentum=0.9)
    losses, ref_losses, dropped = [], [], 0
    for step in range(steps):
        x, y = batch(step)
        loss = strat.forward_backward(model, (x[r::p], y[r::p]), lambda m, b: m.loss(b))
        dropped += sum(m.last_dropped for m in model.moe_layers)
        strat.reduce_gradients(model)
        strat.optimizer_step(opt)
        opt.zero_grad()
        losses.append(strat.reduce_metrics({"loss": loss})["loss"])
        total = 0.0
        whole = ref.loss((x, y))
        whole.backward()
        total += float(whole.item())
        ref_opt.step()
        ref_opt.zero_grad()
        ref_losses.append(total)
    state = strat.full_state_dict(model)
    want = ref.state_dict()
    out = {"rank": r, "losses": losses, "ref": ref_losses, "dropped": dropped,
           "keys_equal": sorted(state) == sorted(want),
           "loss_diff": float(np.max(np.abs(np.array(losses) - ref_losses))),
           "weight_diff": max(float(np.max(np.abs(state[k] - want[k]))) for k in want)}
    return out


main()
