"""Mixed precision through the Trainer on 2 ranks (dp, ZeRO-1/2, tp, pp) against the same
Trainer on one device in the same precision: losses, skipped fp16 steps, final masters.

usage: mixed_check.py KIND:PRECISION ...   (KIND in dp zero1 zero2 tp pp)

The MLP data hold one sample 300 times larger than the rest: in fp16 its gradients overflow
on the rank whose shard of the batch holds it (only there), and every rank must skip that
step as the one device does.
"""

import json
import shutil
import sys
import tempfile

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import Layout, world
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO
from skiff.kernels.train.parallel.hybrid import TensorParallel
from skiff.kernels.train.parallel.pipeline import PipelineParallel
from skiff.nn import Linear, ReLU, Sequential

CFG = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=4, n_embd=16)


class Ranks(NullReporter):
    world_size = 2


def mlp_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = (x.sum(1) > 0).astype(np.int64)
    x[5] *= 300.0
    return x, y


def gpt_data():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 32, (32, 8))
    return x, np.roll(x, -1, axis=1)


def strategy_of(kind):
    return {"dp": lambda: DataParallel(), "zero1": lambda: ZeRO(1), "zero2": lambda: ZeRO(2),
            "tp": lambda: TensorParallel(Layout(tp=2)),
            "pp": lambda: PipelineParallel(Layout(pp=2), micro_batches=2)}[kind]()


def run(kind, precision, strategy):
    gpt = kind in ("tp", "pp")
    skiff.seed(0)
    model = GPT(CFG) if gpt else Sequential(Linear(8, 32), ReLU(), Linear(32, 2))
    kw = dict(optimizer="sgd", lr=0.05, batch_size=8 if gpt else 16)
    if kind == "pp" and strategy is None:  # the pipeline's 2 micro-batches, as accumulation:
        kw.update(batch_size=4, grad_accum=2)  # each one's loss scaled the same way
    trainer = skiff.Trainer(model, strategy=strategy or "single", precision=precision,
                            schedule="constant", seed=0, shuffle=not gpt,
                            reporter=Ranks() if strategy else None, **kw)
    result = trainer.train(gpt_data() if gpt else mlp_data(), steps=6)
    return [row["loss"] for row in result.history], trainer.mixed.skipped, gathered(trainer)


def gathered(trainer):
    """The float32 masters of every rank, joined into the single-device names (collective)."""
    mixed, st = trainer.mixed, trainer.strategy
    if isinstance(st, ZeRO):  # the masters are the flat slices: gather them in float32
        for q in st.params:
            q._data = q._data.astype(np.float32)
        st.gather_params()
        return {n: q._data for n, q in zip(st.names, st.params)}
    # the masters into the model, then gathered as the weights are
    names = getattr(st, "names", None) or [n for n, _ in trainer.model.named_parameters()]
    for p, m in zip(mixed.params, mixed.master):
        p._data = m._data.copy()
    full = st.full_state_dict(trainer.model)
    return {n: full[n] for n in names}


def switch_to_mixed(kind):
    """A float32 checkpoint resumed in bf16-mixed: the masters (ZeRO's flat slices, tp's
    slices) take the checkpoint's float32 weights, not their bfloat16 rounding."""
    comm = world()
    folder = comm.bcast_object(tempfile.mkdtemp() if comm.rank == 0 else None)
    gpt = kind in ("tp", "pp")
    data = gpt_data() if gpt else mlp_data()
    out = []
    for seed, precision in ((0, "32"), (1, "bf16-mixed")):
        skiff.seed(seed)
        model = GPT(CFG) if gpt else Sequential(Linear(8, 32), ReLU(), Linear(32, 2))
        trainer = skiff.Trainer(model, strategy=strategy_of(kind), precision=precision,
                                batch_size=8, lr=1e-2, reporter=Ranks(), checkpoint_dir=folder,
                                resume=precision != "32")
        trainer.train(data, steps=2)
        out.append(trainer)
    full = out[0].strategy.full_state_dict(out[0].model)
    masters = gathered(out[1])
    comm.barrier()
    if comm.rank == 0:
        shutil.rmtree(folder, ignore_errors=True)
    return {"exact": all(np.array_equal(masters[k], full[k]) for k in masters)}


def skip_together(kind):
    """An inf in rank 1's gradients only (fp16): every rank skips the step, none moves."""
    skiff.seed(0)
    gpt = kind in ("tp", "pp")
    model = GPT(CFG) if gpt else Sequential(Linear(8, 32), ReLU(), Linear(32, 2))
    trainer = skiff.Trainer(model, strategy=strategy_of(kind), precision="fp16-mixed",
                            batch_size=8, reporter=Ranks(), shuffle=False)
    trainer.train(gpt_data() if gpt else mlp_data(), steps=1)
    mixed, world_rank = trainer.mixed, world().rank
    before = [m.numpy().copy() for m in mixed.master]
    for m in mixed.master:
        m._grad = m._data * 0 + 1
    if world_rank == 1:
        mixed.master[0]._grad[(0,) * mixed.master[0].ndim] = np.inf
    if not mixed.owned:  # the step takes the model's gradients
        for p, m in zip(mixed.params, mixed.master):
            p._grad = m._grad.astype(p.dtype)
    ran, _ = mixed.step(trainer.optimizer, 1.0, norm=trainer.strategy.grad_norm)
    return {"ran": ran, "moved": any(not np.array_equal(b, m.numpy())
                                     for b, m in zip(before, mixed.master))}


def resume_exactly(kind):
    """fp16 with checkpoints (masters sharded or in pieces, scaler): stopped after 3 steps
    and resumed, the run ends with the masters and loss scale of one that never stopped."""
    comm = world()
    folder = comm.bcast_object(tempfile.mkdtemp() if comm.rank == 0 else None)
    gpt = kind in ("tp", "pp")

    def run(steps, resume, sub):
        skiff.seed(0)
        model = GPT(CFG) if gpt else Sequential(Linear(8, 32), ReLU(), Linear(32, 2))
        trainer = skiff.Trainer(model, strategy=strategy_of(kind), precision="fp16-mixed",
                                batch_size=8, lr=1e-2, schedule="constant", shuffle=not gpt,
                                reporter=Ranks(), checkpoint_dir=f"{folder}/{sub}",
                                checkpoint_every=2, resume=resume)
        trainer.train(gpt_data() if gpt else mlp_data(), steps=steps)
        return [m.numpy().copy() for m in trainer.mixed.master], trainer.mixed.loss_scale

    whole, scale = run(5, False, "whole")
    run(3, False, "part")
    again, scale2 = run(5, True, "part")
    comm.barrier()
    if comm.rank == 0:
        shutil.rmtree(folder, ignore_errors=True)
    return {"exact": scale == scale2 and all(np.array_equal(a, b)
                                             for a, b in zip(whole, again))}


def main():
    comm = world()
    out = {"rank": comm.rank}
    ranks_runs = []
    for case in sys.argv[1:]:
        kind, precision = case.split(":")
        if precision in ("skip", "resume", "switch"):
            out[case] = {"skip": skip_together, "resume": resume_exactly,
                         "switch": switch_to_mixed}[precision](kind)
            continue
        ranks_runs.append((case, kind, precision, *run(kind, precision, strategy_of(kind))))
    # the one-device references, dealt out over the ranks (they ran each one twice, once on
    # every rank, one after another: round 46 h3), then shared
    refs = {}
    for i, (case, kind, precision, *_) in enumerate(ranks_runs):
        if i % comm.size == comm.rank:
            refs[case] = run(kind, precision, None)
    refs = {k: v for part in comm.allgather_object(refs) for k, v in part.items()}
    for case, _, _, losses, skipped, masters in ranks_runs:
        ref_losses, ref_skipped, ref = refs[case]
        out[case] = {
            "skipped": skipped, "ref_skipped": ref_skipped,
            "loss_diff": float(np.max(np.abs(np.subtract(losses, ref_losses)))),
            "master_diff": max(float(np.max(np.abs(masters[k] - ref[k]))) for k in masters),
            "master_scale": max(float(np.max(np.abs(ref[k]))) for k in ref),
            "dtype": str(np.float32 if not masters else next(iter(masters.values())).dtype)}
    print("RESULT " + json.dumps(out), flush=True)

main()
