"""LoRA fine-tunes under tp, pp (a dense base) and ep (a MoE base) on 2 ranks, 2 steps each,
checkpointed: the test reads the checkpoints in one process (round 35).

usage: lora_weights_r35h5_check.py DENSE MOE DIR
Rank 0 writes each run's whole weights (the strategy's own ``full_state_dict``, the oracle)
as DIR/<strategy>/whole.npz beside its checkpoint folder DIR/<strategy>/ck."""

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


def main():
    comm = world()
    dense, moe, root = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    for strategy, base in (("tp", dense), ("pp", dense), ("ep", moe)):
        train_random.seed(5)
        model = apply_lora(from_pretrained(base), r=4, alpha=8)
        ids = np.random.default_rng(6).integers(3, 78, (8, 9))
        trainer = Trainer(model, strategy=strategy, lr=5e-3, batch_size=4, seed=1,
                          checkpoint_dir=root / strategy / "ck")
        trainer.train(ArrayDataset(ids[:, :-1], ids[:, 1:]), steps=2)
        whole = trainer.strategy.full_state_dict(trainer.model)
        if comm.rank == 0:
            np.savez(root / strategy / "whole.npz", **{k: np.asarray(v)
                                                       for k, v in whole.items()})
    comm.barrier()
    print("RESULT " + json.dumps({"rank": comm.rank}), flush=True)


if __name__ == "__main__":
    main()
