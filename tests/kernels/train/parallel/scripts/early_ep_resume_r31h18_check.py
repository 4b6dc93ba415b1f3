"""Round 31 (h18): early stopping resumed under expert parallelism (2 ranks).

usage: early_ep_resume_r31h18_check.py DIR [STRATEGY...] (default ep)
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
from skiff.kernels.train.models.lora import apply_lora
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


def run(strategy, ck=None, stop_at=None, resume=False, ranks=2, lora=False):
    skiff.seed(0)
    cfg = ErnieConfig(**SHAPE)
    cfg.extra["initializer_range"] = 0.2
    model = ErnieForCausalLM(cfg)
    if lora:  # a frozen base: its best weights are the base's and the adapters'
        apply_lora(model, r=4, alpha=8, target_modules=("q_proj", "v_proj"))
    trainer = skiff.Trainer(model, strategy=strategy, optimizer="sgd", lr=0.1, batch_size=8,
                            seed=0, early_stopping=2, schedule="constant", checkpoint_dir=ck,
                            resume=resume, reporter=Ranks() if ranks > 1 else None,
                            callbacks=[lambda m: m["step"] == stop_at] if stop_at else None)
    train, val = data()
    result = trainer.train(train, epochs=30, val_dataset=val)
    full = trainer.strategy.full_state_dict(trainer.model)
    # this rank's trained parameters (LoRA: the adapters), by its local names
    trained = sorted(n for n, p in trainer.model.named_parameters() if p.requires_grad)
    frozen = sorted(n for n, p in trainer.model.named_parameters() if not p.requires_grad)
    return {"steps": result.steps, "best_step": result.best_step, "stopped": result.stopped,
            "trained": trained, "frozen": frozen,
            "weights": {k: np.asarray(v, np.float64) for k, v in full.items()}}


def early_names(path: Path) -> list[str]:
    """The parameters whose best weights this rank's shard of a checkpoint holds."""
    with np.load(path / f"shard-{world().rank:05d}.npz") as z:
        return sorted(k.split("/sharded/early/weights/")[1] for k in z.files
                      if "/sharded/early/weights/" in k)


def main():
    comm = world()
    folder = Path(sys.argv[1])
    out = {"rank": comm.rank}
    for strategy in sys.argv[2:] or ["ep"]:
        for lora in (False, True):  # LoRA: the frozen base is left out of the best weights
            key = f"{strategy}-lora" if lora else f"{strategy}-full"
            one = run("single", ranks=1, lora=lora)
            ref = one.pop("weights")
            whole = run(strategy, folder / f"{key}-whole", lora=lora)
            run(strategy, folder / f"{key}-cut", stop_at=12, lora=lora)
            comm.barrier()
            kept = early_names(folder / f"{key}-cut" / "step-00000012")
            resumed = run(strategy, folder / f"{key}-cut", resume=True, lora=lora)
            trained, frozen = resumed["trained"], resumed["frozen"]
            for got in (one, whole, resumed):
                got.pop("trained")
                got.pop("frozen")
            for got in (whole, resumed):
                w = got.pop("weights")
                got["keys"] = sorted(w) == sorted(ref)
                got["weights"] = max(float(np.abs(w[k] - ref[k]).max()) for k in ref)
            out[key] = {"one": one, "whole": whole, "resumed": resumed,
                        "kept": kept, "trained": trained, "frozen": frozen}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
