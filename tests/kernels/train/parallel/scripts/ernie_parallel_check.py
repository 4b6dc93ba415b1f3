"""ERNIE-4.5 fine-tuning on this world's ranks against one process, through the train entry.

Every case trains a tiny checkpoint (written by skiff in the Hugging Face layout) for a few
AdamW steps with ``train_parts`` (the ``%train ernie --from DIR`` path): once on all ranks
with the case's strategy, once in one process (strategy "single", on one rank). Rank 0
reports both loss trajectories, the largest weight difference, and the saved folders' files
for the test to compare. usage: ernie_parallel_check.py WORKDIR CASE... with CASE =
strategy:shape:mode (mode "full" or "lora") and optional flags: ":chat", packed
conversations of different lengths (a PackedBatch through the varlen attention, loss on the
last 3 tokens of each only), or ":ragged" (1 to 5 learned tokens each, so that the ranks'
shares hold different numbers of them); ":resume", the job then goes on for one more step
from its last checkpoint (on the same ranks), and so does the one-process job from its own.
"""

import json
import shutil
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import ArrayDataset
from skiff.kernels.train.entry import train_parts
from skiff.kernels.train.models.chat import ChatDataset
from skiff.kernels.train.models.ernie import ErnieConfig, ErnieForCausalLM
from skiff.kernels.train.models.hf_checkpoint import from_pretrained, save_pretrained
from skiff.kernels.train.models.lora import apply_lora
from skiff.kernels.train.parallel import world

_DENSE = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, head_dim=8, block_size=8)
SHAPES = {
    "dense": _DENSE,
    # one k/v head: tensor parallel keeps it whole on both ranks; untied head with biases
    "dense-kv1": dict(_DENSE, num_key_value_heads=1, tie_word_embeddings=False, use_bias=True),
    "moe": dict(_DENSE, num_hidden_layers=3, moe_num_experts=4, moe_k=2,
                moe_intermediate_size=16, moe_num_shared_experts=1, moe_layer_start_index=1),
    # the reference's load-balancing loss on (output_router_logits), weighted up
    "moe-aux": dict(_DENSE, num_hidden_layers=3, moe_num_experts=4, moe_k=2,
                    moe_intermediate_size=16, moe_num_shared_experts=1, moe_layer_start_index=1,
                    output_router_logits=True, router_aux_loss_coef=0.5),
}
LORA_TARGETS = {"dense": ("q_proj", "v_proj", "o_proj", "down_proj"),
                "dense-kv1": ("k_proj", "gate_proj", "up_proj"),
                "moe": ("q_proj", "v_proj", "experts.gate_up_proj", "experts.down_proj"),
                "moe-aux": ("q_proj", "v_proj", "o_proj")}
STEPS, BATCH = 3, 4


class Ranks(NullReporter):
    def __init__(self, rank, size, run_dir):
        super().__init__()
        self.rank, self.world_size, self.run_dir = rank, size, run_dir


def checkpoint(workdir, shape):
    folder = Path(workdir) / f"ckpt-{shape}"
    if world().rank == 0 and not folder.exists():
        train_random.seed(7)
        cfg = ErnieConfig(**SHAPES[shape])
        cfg.extra["initializer_range"] = 0.2
        save_pretrained(ErnieForCausalLM(cfg), folder)
    world().barrier()
    return folder


class Conversations(ChatDataset):
    """Token sequences of 5 to 9 tokens, packed into batches as chat data is."""

    def __init__(self, items):
        self.items, self.block_size, self.source = items, 9, "random conversations"


def data(shape, chat=False):
    """Token blocks; ``chat``: packed sequences ("ragged": with 1 to 5 learned tokens each)."""
    rng = np.random.default_rng(3)
    x = rng.integers(3, SHAPES[shape]["vocab_size"], (BATCH * STEPS, 10))
    if not chat:
        return ArrayDataset(x[:, :-2], x[:, 1:-1])
    items = []
    for row in x:
        n = int(rng.integers(5, 10))
        y = row[1:n + 1].copy()
        y[:-(int(rng.integers(1, 6)) if chat == "ragged" else 3)] = -100  # learned: the last
        items.append((row[:n], y))
    return Conversations(items)


def train(folder, shape, mode, strategy, reporter, chat=False, steps=STEPS, resume=None):
    model = from_pretrained(folder)
    if mode == "lora":
        train_random.seed(1)  # the same adapters in every run
        apply_lora(model, r=4, alpha=8, target_modules=LORA_TARGETS[shape])
    config = {"strategy": strategy, "lr": 1e-2, "batch_size": BATCH, "steps": steps}
    if resume is not None:
        config.update(checkpoint_dir=str(resume), resume=True)
    result = train_parts({"model": model, "dataset": data(shape, chat)}, config, reporter)
    return [h["loss"] for h in result.history], result.strategy.get("strategy")


def reshard_diff(folder, shape, mode, run):
    """The largest difference between the job's gathered weights and its last checkpoint
    (written in pieces by the ranks) loaded on one process, resharded."""
    from skiff.kernels.train.core.optim import AdamW
    from skiff.kernels.train.parallel import Layout, SelfComm
    from skiff.kernels.train.parallel.hybrid import TensorParallel

    model = from_pretrained(folder)
    if mode == "lora":
        train_random.seed(1)
        apply_lora(model, r=4, alpha=8, target_modules=LORA_TARGETS[shape])
    one = TensorParallel(Layout(tp=1), SelfComm()).bind(device="cpu")
    model, _ = one.setup(model, lambda ps: AdamW(ps, lr=1e-2))
    state = one.load_checkpoint(run / "checkpoints")
    model.load_state_dict(state["model"])
    with np.load(run / "model.npz") as z:
        return max(float(np.abs(model.state_dict()[k] - z[k]).max()) for k in z.files)


def reference(run, folder, shape, mode, chat, *args, **kw):
    """On one rank, while the other runs another reference or checks a checkpoint: the
    one-process job; its losses go to ``run/losses.json``."""
    run.mkdir(exist_ok=True)
    losses, _ = train(folder, shape, mode, "single", Ranks(0, 1, run), chat, *args, **kw)
    (run / "losses.json").write_text(json.dumps(losses))


def compare(mine, one) -> tuple[float, bool]:
    with np.load(mine / "model.npz") as a, np.load(one / "model.npz") as b:
        diff = max(float(np.abs(a[k] - b[k]).max()) for k in b.files)
        return diff, sorted(a.files) == sorted(b.files)


def main():
    """The ranks train every case together first; then the one-process references (one per
    checkpoint, mode and data: the same job for every strategy that shares them) and the
    reshard checks are dealt out over the ranks, which run them side by side (round 46 h3:
    before, the last rank ran each case's reference while rank 0 waited)."""
    workdir, cases = sys.argv[1], sys.argv[2:]
    comm = world()
    out = {"rank": comm.rank, "cases": {}}
    plan = []
    for case in cases:
        strategy, shape, mode, *flags = case.split(":")
        chat = "ragged" if "ragged" in flags else "chat" in flags
        folder = checkpoint(workdir, shape)
        run = Path(workdir) / case.replace(":", "-")
        mine = run / "ranks"
        mine.mkdir(parents=True, exist_ok=True)
        losses, ran = train(folder, shape, mode, strategy, Ranks(comm.rank, comm.size, mine),
                            chat)
        plan.append((case, strategy, shape, mode, flags, chat, folder, run, losses, ran))
        comm.barrier()
    # the references: one per (shape, mode, data); a resumed case gets its own (it goes on
    # from its reference's checkpoint, which the resume writes into)
    refs = {}
    for case, _, shape, mode, flags, chat, folder, *_ in plan:
        key = (shape, mode, chat, "resume" in flags and case)
        refs.setdefault(key, (Path(workdir) / ("one-" + case.replace(":", "-")), folder))
    tasks = [("ref", key) for key in refs] + [("reshard", i) for i in range(len(plan))]
    reshards = {}
    for n, (kind, what) in enumerate(tasks):
        if n % comm.size != comm.rank:
            continue
        if kind == "ref":
            where, folder = refs[what]
            reference(where, folder, what[0], what[1], what[2])
        else:
            case, _, shape, mode, _, _, folder, run, *_ = plan[what]
            reshards[case] = reshard_diff(folder, shape, mode, run / "ranks")
    reshards = {k: v for part in comm.allgather_object(reshards) for k, v in part.items()}
    for case, strategy, shape, mode, flags, chat, folder, run, losses, ran in plan:
        mine, one = run / "ranks", run / "one"
        if comm.rank == 0:  # each case's own copy of its reference's folder
            shutil.copytree(refs[(shape, mode, chat, "resume" in flags and case)][0], one)
        comm.barrier()
        if comm.rank == 0:
            diff, same_keys = compare(mine, one)
            out["cases"][case] = {"strategy": ran, "losses": losses, "weight_diff": diff,
                                  "ref": json.loads((one / "losses.json").read_text()),
                                  "same_keys": same_keys, "run": str(run),
                                  "reshard_diff": reshards[case]}
        if "resume" in flags:  # one more step from the checkpoint the job wrote at its end
            more, whole = run / "resumed", run / "one-more"
            more.mkdir(exist_ok=True)
            longer, _ = train(folder, shape, mode, strategy,
                              Ranks(comm.rank, comm.size, more), chat, STEPS + 1,
                              resume=mine / "checkpoints")
            comm.barrier()
            if comm.rank == comm.size - 1:
                reference(whole, folder, shape, mode, chat, STEPS + 1,
                          resume=one / "checkpoints")
            comm.barrier()
            if comm.rank == 0:
                out["cases"][case].update(
                    resumed=longer, resumed_ref=json.loads((whole / "losses.json").read_text()),
                    resumed_diff=compare(more, whole)[0])
        comm.barrier()
    print("RESULT " + json.dumps(out), flush=True)

main()
