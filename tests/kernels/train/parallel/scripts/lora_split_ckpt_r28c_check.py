"""A LoRA fine-tune under tp and pp on 2 ranks: checkpoints of the adapters only, with each
rank's record of its slices of the frozen base, checked on resume (round 28).

usage: lora_split_ckpt_r28c_check.py BASE OTHER DIR STRATEGIES [cross] [STRATEGIES2 BASE2 OTHER2]
For each of STRATEGIES (comma-separated): the uninterrupted run, a run stopped by a
callback at step 2 and its resume (losses and the adapters' largest difference), the
resume on the OTHER base (its error), and with "cross" a tp checkpoint resumed under pp on
each base (resumed step, or its error). STRATEGIES2 on BASE2 and OTHER2 in the same launch
(round 43 h10: ep's MoE bases beside tp's and pp's dense ones, one launch for both tests).
"""

import json
import shutil
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import ArrayDataset
from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora
from skiff.kernels.train.parallel import world
from skiff.kernels.train.trainer import Trainer

STEPS, STOP = 4, 2


def run(base, strategy, folder, stop=None, resume=False):
    train_random.seed(5)
    model = apply_lora(from_pretrained(base), r=4, alpha=8)
    ids = np.random.default_rng(6).integers(3, 78, (8, 9))
    trainer = Trainer(model, strategy=strategy, lr=5e-3, batch_size=4, seed=1,
                      checkpoint_dir=folder, resume=resume,
                      callbacks=[lambda m: m["step"] == stop])
    result = trainer.train(ArrayDataset(ids[:, :-1], ids[:, 1:]), steps=STEPS)
    weights = trainer.strategy.full_state_dict(trainer.model)
    return result, {k: np.asarray(v) for k, v in weights.items()}


def attempt(base, strategy, folder):
    try:
        result, _ = run(base, strategy, folder, resume=True)
        return {"resumed": result.resumed["from_step"]}
    except ValueError as exc:
        return {"error": str(exc)}


def main():
    comm = world()
    base, other, root = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    out = {"rank": comm.rank}
    rest = sys.argv[5:]
    cross = rest[:1] == ["cross"]
    rest = rest[1:] if cross else rest
    jobs = [(base, other, sys.argv[4])] + ([(rest[1], rest[2], rest[0])] if rest else [])
    for base, other, strategy in ((b, o, s) for b, o, kinds in jobs for s in kinds.split(",")):
        full, want = run(base, strategy, root / strategy / "full")
        run(base, strategy, root / strategy / "b", stop=STOP)
        # the stopped run's checkpoints, copied before its resume goes on in them: "c" (the
        # resume on the other base) and, of tp's, "cross" (round 46 h3: copies, where two
        # more runs stopped at step 2 wrote the same checkpoints)
        copies = [root / strategy / "c"] + ([root / "cross"] if cross and strategy == "tp"
                                            else [])
        comm.barrier()  # every rank's part written
        if comm.rank == 0:
            for to in copies:
                shutil.copytree(root / strategy / "b", to)
        comm.barrier()
        again, got = run(base, strategy, root / strategy / "b", resume=True)
        newest = sorted((root / strategy / "b").glob("step-*"))[-1]
        size = sum(f.stat().st_size for f in newest.rglob("*") if f.is_file())
        out[strategy] = {"want": [h["loss"] for h in full.history],
                         "got": [h["loss"] for h in again.history],
                         "resumed": again.resumed["from_step"],
                         "weights": max(float(np.abs(want[k] - got[k]).max()) for k in want),
                         "bytes": size, "base_bytes": sum(
                             int(p.size) * p.numpy().itemsize
                             for p in from_pretrained(base).parameters()),
                         "other": attempt(other, strategy, root / strategy / "c")}
    base, other = sys.argv[1], sys.argv[2]
    if cross:  # tp's checkpoint at step 2 (copied above), resumed under pp
        out["cross_other"] = attempt(other, "pp", root / "cross")
        out["cross_same"] = attempt(base, "pp", root / "cross")
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
