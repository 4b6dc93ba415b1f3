"""Round 30: gradient accumulation of a token loss on 2 ranks (dp): each rank prints
``RESULT {...}`` with its start and end weights and losses for three runs (per-token targets
as (x, y) with an even and an uneven batch, and packed chat batches with a model loss).
usage: mpiexec -n 2 python accum_tokens_r30c_check.py
"""

import json
import sys
from pathlib import Path

import numpy as np

import skiff
from skiff.kernels.train.parallel import world

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from token_rows import PackedModel, PackedRows, TokenModel, token_data  # noqa

RUNS = {  # name: (rows, batch_size over the ranks, grad_accum, steps, packed)
    "even": (16, 4, 2, 2, False),
    "uneven": (12, 3, 2, 2, False),
    "packed": (16, 4, 2, 2, True),
    "epoch end": (12, 4, 2, 2, False),  # the epoch's second window: its last batch alone
}


def run(rows, batch, accum, steps, packed):
    x, y = token_data(rows=rows, seed=4)
    skiff.seed(0)
    model = PackedModel() if packed else TokenModel()
    start = {k: np.asarray(v).tolist() for k, v in model.state_dict().items()}
    tr = skiff.Trainer(model, strategy="dp", optimizer="sgd", lr=0.5, schedule="constant",
                       clip=None, weight_decay=0.0, batch_size=batch, grad_accum=accum,
                       shuffle=False)
    result = tr.train(PackedRows(x, y) if packed else (x, y), steps=steps)
    return {"start": start, "losses": result.losses,
            "end": {k: np.asarray(v).tolist() for k, v in model.state_dict().items()}}


def main():
    comm = world()
    out = {"rank": comm.rank, **{name: run(*spec) for name, spec in RUNS.items()}}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
