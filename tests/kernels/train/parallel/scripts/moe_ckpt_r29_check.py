"""A GPT MoE under ep, stopped and resumed (round 29). usage: moe_ckpt_r29_check.py DIR

Trains gpt_moe on 2 ranks with strategy "ep": 4 steps uninterrupted (DIR/whole), and 2
steps with a checkpoint (DIR/stopped, copied to DIR/copy for a one-process resume by the
test) then resumed to 4. Prints ``RESULT {"rank", "whole", "resumed", "from_step"}``.
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.moe import gpt_moe


def tokens():
    return np.random.default_rng(0).integers(0, 64, size=(32, 17))


def run(strategy, ckpt, steps, resume=False):
    skiff.seed(0)
    toks = tokens()
    tr = skiff.Trainer(gpt_moe(), strategy=strategy, lr=1e-3, schedule="constant",
                       batch_size=8, seed=0, checkpoint_dir=str(ckpt), checkpoint_every=2,
                       resume=resume)
    result = tr.train((toks[:, :-1], toks[:, 1:]), steps=steps)
    return [h["loss"] for h in result.history], (result.resumed or {}).get("from_step")


def main(root):
    comm = world()
    whole, _ = run("ep", root / "whole", 4)
    run("ep", root / "stopped", 2)
    comm.barrier()
    if comm.rank == 0:
        shutil.copytree(root / "stopped", root / "copy")
    comm.barrier()
    resumed, from_step = run("ep", root / "stopped", 4, resume=True)
    print("RESULT " + json.dumps({"rank": comm.rank, "whole": whole, "resumed": resumed,
                                  "from_step": from_step}), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
