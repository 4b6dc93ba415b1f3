"""Round 31 (h18): early stopping resumed under expert parallelism (2 ranks).

usage: early_ep_resume_r31h18_check.py DIR
A tiny ERNIE-4.5 MoE (4 experts, 2 a rank under ep) learns ``y = x + 1`` while its
validation set wants ``y = 3 x + 5``, so the validation loss is best early and early stopping
(patience 2) ends the run later, putting the best step's weights back. Run whole under ep,
and cut by a callback at step 12 then resumed from its checkpoint; the oracle is the whole
run in one process (run first, on each rank). Each rank prints ``RESULT {...}``: steps, best
step and why it stopped, and the largest difference of the full weights from one process's.
"""

import json
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.models.ernie import ErnieConfig, ErnieForCausalLM
from skiff.kernels.train.parallel import world

V, T = 16, 8
SHAPE = dict(vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=8, block_size=T,
             moe_num_experts=4, moe_k=2, moe_intermediate_size=16, moe_layer_start_index=1)


class Ranks(NullReporter):
    world_size = 2


def data():
    rng = np.random.default_rng(0)
    x = rng.integers(0, V, (48, T))
    xv = rng.integers(0, V, (16, T))
    return (x, (x + 1) % V), (xv, (xv * 3 + 5) % V)


def run(strategy, ck=None, stop_at=None, resume=False, ranks=2):
    skiff.seed(0)
    cfg = ErnieConfig(**SHAPE)
    cfg.extra["initializer_range"] = 0.2
    model = ErnieForCausalLM(cfg)
    trainer = skiff.Trainer(model, strategy=strategy, optimizer="sgd", lr=0.1, batch_size=8,
                            seed=0, early_stopping=2, schedule="constant", checkpoint_dir=ck,
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
    whole = run("ep", folder / "ep-whole")
    run("ep", folder / "ep-cut", stop_at=12)
    resumed = run("ep", folder / "ep-cut", resume=True)
    for got in (whole, resumed):
        w = got.pop("weights")
        got["keys"] = sorted(w) == sorted(ref)
        got["weights"] = max(float(np.abs(w[k] - ref[k]).max()) for k in ref)
    out["ep"] = {"whole": whole, "resumed": resumed}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
