"""Round 38 (h11): an EMA callback (``state_dict``/``load_state_dict``) under a model split
over 2 ranks (tp, pp, ep): a whole run and a run cut at step 5 and resumed from its sharded
checkpoint; and a tp checkpoint resumed by dp (the slices are not dp's: the EMA starts
afresh); the one-process run's EMA. Writes ``DIR/result-RANK.json`` per rank (the EMAs'
weights and counts) and prints ``RESULT {"rank", "file"}``.
usage: mpiexec -n 2 python ema_split_r38h11_check.py DIR STRATEGY..."""

import json
import shutil
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.moe import gpt_moe
from skiff.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

V, T = 16, 8
rng = np.random.default_rng(0)
X = rng.integers(0, V, (48, T))
DATA = (X, (X + 1) % V)


class EMA:
    """An EMA of the weights the Trainer steps, made at the first step (on a split model:
    this rank's slices), from a checkpoint's state when one was given."""

    def __init__(self):
        self.ema, self.saved = None, None

    def on_step_end(self, trainer, metrics):
        if self.ema is None:
            self.ema = AveragedModel(trainer.model, multi_avg_fn=get_ema_multi_avg_fn(0.8))
            if self.saved is not None:
                self.ema.load_state_dict(self.saved)
        self.ema.update_parameters(trainer.model)

    def state_dict(self):
        return self.ema.state_dict()

    def load_state_dict(self, state):
        self.saved = state


def run(strategy, folder, steps, resume=False):
    skiff.seed(0)
    if strategy == "ep":  # a GPT of experts: each rank holds 2 of the 4
        model = gpt_moe(n_layer=2, n_embd=16, n_head=2, vocab_size=V, block_size=T,
                        n_experts=4, top_k=2, expert_hidden=16)
    else:
        model = GPT(GPTConfig(block_size=T, vocab_size=V, n_layer=2, n_head=2, n_embd=16))
    ema = EMA()
    skiff.Trainer(model, strategy=strategy, optimizer="sgd", lr=0.1, batch_size=8, seed=0,
                  clip=None, schedule="constant", callbacks=[ema], checkpoint_dir=folder,
                  resume=resume).train(DATA, steps=steps)
    return {k: np.asarray(v, np.float64).tolist() for k, v in ema.ema.state_dict().items()}


def main(folder, *strategies):
    out = {"rank": world().rank, "single": run("single", None, 12)}
    for strategy in strategies:
        whole = run(strategy, Path(folder) / strategy / "whole", 12)
        run(strategy, Path(folder) / strategy / "cut", 5)
        if strategy == "tp":  # tp's checkpoints at step 5, before its resume goes on in
            world().barrier()  # them: what a tp run of 5 steps for "tp-then-dp" wrote
            if world().rank == 0:  # (round 46 h3: a copy in place of that run)
                shutil.copytree(Path(folder) / "tp" / "cut", Path(folder) / "tp-then-dp")
            world().barrier()
        resumed = run(strategy, Path(folder) / strategy / "cut", 12, resume=True)
        out[strategy] = {"whole": whole, "resumed": resumed}
    if "tp" not in strategies:
        run("tp", Path(folder) / "tp-then-dp", 5)
    other = run("dp", Path(folder) / "tp-then-dp", 12, resume=True)
    out["tp-then-dp"] = other["n_averaged"]
    return out


if __name__ == "__main__":
    # the EMAs' weights run to ~450 KB a rank: written to a file each, the RESULT line names
    # it (two ranks' long lines interleave in mpiexec's forwarded stdout: CI saw one cut)
    result = main(*sys.argv[1:])
    path = Path(sys.argv[1]) / f"result-{result['rank']}.json"
    path.write_text(json.dumps(result))
    print("RESULT " + json.dumps({"rank": result["rank"], "file": str(path)}), flush=True)
