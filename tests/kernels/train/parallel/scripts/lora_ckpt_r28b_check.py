"""A LoRA fine-tune on 2 ranks (dp, zero2) checkpoints only its adapters and resumes
exactly (round 28).

usage: lora_ckpt_r28b_check.py BASE DIR
For each strategy: the uninterrupted run, a run stopped by a callback at step 2, and its
resume; prints the losses, the adapters' largest difference and the checkpoint's size.
"""

import json
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
    ids = np.random.default_rng(6).integers(3, 96, (8, 9))
    trainer = Trainer(model, strategy=strategy, lr=5e-3, batch_size=4, seed=1,
                      checkpoint_dir=folder, resume=resume,
                      callbacks=[lambda m: m["step"] == stop])
    result = trainer.train(ArrayDataset(ids[:, :-1], ids[:, 1:]), steps=STEPS)
    weights = trainer.strategy.full_state_dict(trainer.model)
    return result, {k: np.asarray(v) for k, v in weights.items()}


def main():
    comm = world()
    base, root = sys.argv[1], Path(sys.argv[2])
    out = {"rank": comm.rank}
    for strategy in ("dp", "zero2"):
        full, want = run(base, strategy, root / strategy / "full")
        run(base, strategy, root / strategy / "b", stop=STOP)
        again, got = run(base, strategy, root / strategy / "b", resume=True)
        newest = sorted((root / strategy / "b").glob("step-*"))[-1]
        size = sum(f.stat().st_size for f in newest.rglob("*") if f.is_file())
        frozen = sum(int(p.size) * p.numpy().itemsize for p in
                     from_pretrained(base).parameters())  # the base's bytes (tied: once)
        out[strategy] = {"want": [h["loss"] for h in full.history],
                         "got": [h["loss"] for h in again.history],
                         "resumed": again.resumed["from_step"],
                         "weights": max(float(np.abs(want[k] - got[k]).max()) for k in want),
                         "bytes": size, "base_bytes": frozen}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
