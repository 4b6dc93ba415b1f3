"""Round 31: early stopping resumed under a split model (tp, pp) on this world (2 ranks).

usage: early_split_resume_r31_check.py DIR STRATEGY...
A tiny GPT learns ``y = x + 1`` while its validation set wants ``y = 3 x + 5``: the
validation loss is best at the first validation (step 6) and early stopping (patience 2)
ends the run at step 18, putting step 6's weights back. For each strategy: the run whole, and
the run cut by a callback at step 12 then resumed from its checkpoint. Each rank prints
``RESULT {...}``: steps, best step and why it stopped, of both and of the whole run on one
process (run first, on each rank), and the largest difference of their full weights from
the one process's; and a tp run cut at step 12 resumed by dp (the slices of early stopping's
best weights are not dp's: it goes on without them, as before).
"""

import json
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import world

V, T = 16, 8


class Ranks(NullReporter):
    world_size = 2


def data():
    rng = np.random.default_rng(0)
    x = rng.integers(0, V, (48, T))
    xv = rng.integers(0, V, (16, T))
    return (x, (x + 1) % V), (xv, (xv * 3 + 5) % V)


def run(strategy, ck=None, stop_at=None, resume=False, ranks=2):
    skiff.seed(0)
    model = GPT(GPTConfig(block_size=T, vocab_size=V, n_layer=2, n_head=2, n_embd=16))
    trainer = skiff.Trainer(model, strategy=strategy, optimizer="sgd", lr=0.1, batch_size=8, seed=0,
                            early_stopping=2, schedule="constant", checkpoint_dir=ck,
                            resume=resume, reporter=Ranks() if ranks > 1 else None,
                            callbacks=[lambda m: m["step"] == stop_at] if stop_at else None)
    train, val = data()
    result = trainer.train(train, epochs=30, val_dataset=val)
    full = trainer.strategy.full_state_dict(trainer.model)
    return {"steps": result.steps, "best_step": result.best_step, "stopped": result.stopped,
            "weights": {k: np.asarray(v, np.float64) for k, v in full.items()}}


def main():
    comm = world()
    folder = Path(sys.argv[1])
    one = run("single", ranks=1)
    ref = one.pop("weights")
    out = {"rank": comm.rank, "one": one}
    for strategy in sys.argv[2:]:
        whole = run(strategy, folder / f"{strategy}-whole")
        run(strategy, folder / f"{strategy}-cut", stop_at=12)
        resumed = run(strategy, folder / f"{strategy}-cut", resume=True)
        for got in (whole, resumed):
            w = got.pop("weights")
            got["weights"] = max(float(np.abs(w[k] - ref[k]).max()) for k in ref)
        out[strategy] = {"whole": whole, "resumed": resumed}
    # a tp rank's slices in a checkpoint that dp resumes on the same world: not its weights
    run("tp", folder / "tp-then-dp", stop_at=12)
    other = run("dp", folder / "tp-then-dp", resume=True)
    other.pop("weights")
    out["tp-then-dp"] = other
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
