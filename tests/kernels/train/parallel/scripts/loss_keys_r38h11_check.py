"""Round 38 (h11): a loss function's dict whose keys differ between ranks (a metric only
some ranks' batches give, as a per-class score of a class a rank's rows lack); prints
``RESULT {...}`` per rank (step losses, the history's values, a callback's).
usage: [mpiexec -n 2] python loss_keys_r38h11_check.py STRATEGY [GRAD_ACCUM]
       mpiexec -n 2 python loss_keys_r38h11_check.py STRATEGY:GRAD_ACCUM,..."""

import json
import sys

import abort_on_error  # noqa: F401
from loss_extras_r38h5_check import BATCH, EPOCHS, LR, SEED, data, model

import skiff
from skiff.kernels.train.parallel import world


def main(strategy, grad_accum="1"):
    rank = world().rank if strategy != "single" else 0
    seen = []

    def dict_loss(out, y):
        d = out - y
        values = {"loss": (d * d).mean(), "mae": abs(d).mean()}
        if rank == 0:  # a name rank 1 never gives: its mean is rank 0's own value
            values["only0"] = 2.5
        return values

    tr = skiff.Trainer(model(), strategy=strategy, optimizer="sgd", lr=LR,
                       schedule="constant", clip=None, batch_size=BATCH, seed=SEED,
                       loss=dict_loss, grad_accum=int(grad_accum),
                       callbacks=[lambda m: seen.append([m["mae"], m.get("only0")])])
    result = tr.train(data(), epochs=EPOCHS)
    return {"rank": rank, "losses": result.losses,
            "mae": [row["mae"] for row in result.history],
            "only0": [row.get("only0") for row in result.history], "seen": seen}


if __name__ == "__main__":
    if "," in sys.argv[1]:  # STRATEGY:GRAD_ACCUM,...: several runs in one launch (round 42
        # h17: a launch each paid two interpreters' imports), one result per rank of them all
        runs = {r: main(*r.split(":")) for r in sys.argv[1].split(",")}
        print("RESULT " + json.dumps({"rank": next(iter(runs.values()))["rank"], **runs}),
              flush=True)
    else:
        print("RESULT " + json.dumps(main(*sys.argv[1:])), flush=True)
