"""Round 41 (h9): a user's optimizer instance (two parameter groups: decay / no decay at
another lr, nanoGPT's habit) and a StepLR instance made on it, under tp, pp (a tiny GPT) and
ep (a tiny GPT MoE) on this world (2 ranks); tp, pp and ep cut at step 5 and resumed.
Round 42 (h5): ep in bf16-mixed too (refused before), cut at step 5 and resumed (each
rank's experts' float32 masters in its pieces), its gradients clipped to norm 0.5; ep's
bf16 checkpoint read by one process and one process's resumed under ep (the masters each
reads, by name); dp's checkpoint resumed under tp (the groups' moments by name).
Round 42 (h13): one process's checkpoint resumed under tp and pp (fp32) and tp (bf16-mixed);
dp with augmentations from the global generators, cut at step 3 and resumed.

usage: optimizer_split_r41h9_check.py DIR
Each rank writes ``DIR/rank<r>.npz``: for each case, the losses, the lrs and (rank 0) the
full weights gathered by the strategy. The test compares them with one process and torch.

Then ``keep_best=2`` with the ranks' sharded checkpoints under tp and pp: the run whole,
and the run SIGTERMed at step 7 (each rank signals itself; the handler asks the run to
stop, as a job's worker does) then resumed; each rank writes ``DIR/keep-rank<r>.json``:
the best checkpoint, ``best.json`` and the step folders kept, of both, and one process's.
"""

import json
import os
import random
import shutil
import signal
import sys
import types
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.moe import gpt_moe

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from flips_data import Flips  # noqa: E402  (round 42 h13's dataset, one definition)

V, T = 16, 8


class Ranks(NullReporter):
    world_size = 2


def tokens():
    x = np.random.default_rng(0).integers(0, V, (32, T))
    return x, (x + 1) % V


def model(moe):
    skiff.seed(0)
    if moe:
        return gpt_moe(vocab_size=V, block_size=T, n_embd=16, n_head=2, expert_hidden=16)
    return GPT(GPTConfig(block_size=T, vocab_size=V, n_layer=2, n_head=2, n_embd=16))


def groups(m):
    named = list(m.named_parameters())
    return [{"params": [p for _, p in named if p.ndim >= 2], "weight_decay": 0.1},
            {"params": [p for _, p in named if p.ndim < 2], "weight_decay": 0.0, "lr": 0.005}]


def run(strategy, precision="32", moe=False, ck=None, stop_at=None, clip=None, one=False):
    """With ``ck``: cut by a callback at ``stop_at``, or resumed from ``ck`` (a new model
    and a new instance, as a new process makes them). ``one``: one process (rank 0 alone)."""
    m = model(moe)
    opt = skiff.optim.AdamW(groups(m), lr=0.01)
    sched = skiff.optim.lr_scheduler.StepLR(opt, 3, 0.5)
    tr = skiff.Trainer(m, strategy=strategy, optimizer=opt, schedule=sched, batch_size=8,
                       seed=0, clip=clip, shuffle=False, precision=precision,
                       reporter=None if one else Ranks(), checkpoint_dir=ck,
                       resume=ck is not None and not stop_at,
                       callbacks=[lambda m: m["step"] == stop_at] if stop_at else None)
    r = tr.train(tokens(), epochs=2)
    full = tr.model.state_dict() if one else tr.strategy.full_state_dict(tr.model)
    global last
    last = tr
    return r, {k: np.asarray(v, np.float64) for k, v in full.items()}


last = None  # the Trainer of the last run()


def idle_barrier():
    """A barrier that sleeps while rank 0 runs alone (MPI's spins a core: round 42 h5,
    test time)."""
    import time

    from mpi4py import MPI

    req = MPI.COMM_WORLD.Ibarrier()
    while not req.Test():
        time.sleep(0.005)


def masters_by_name(names, masters, prefix):
    """Mixed precision's float32 masters under their single-device names (an ep rank's
    experts renamed to the global expert)."""
    from skiff.kernels.train.parallel.ernie_experts import _first, global_name

    first = _first(last.model) if last is not None else 0
    return {f"{prefix}/{global_name(n, first)}": np.asarray(m, np.float32)
            for n, m in zip(names, masters)}


def masters_across_world_sizes(root, out):
    """Round 42 (h5): ep's bf16 checkpoint read by one process, and one process's bf16
    checkpoint resumed under ep (refused before: "55 saved arrays for 39 parameters"):
    the masters each side reads, by name, and the resumed run's losses."""
    from skiff.kernels.train.parallel import world
    from skiff.kernels.train.parallel.moe import ExpertParallel
    from skiff.kernels.train.parallel.one_process import read_sharded

    global last
    comm = world()
    if comm.rank == 0:  # ep's newest checkpoint (step 8) in one process
        state, _ = read_sharded(model(True), root / "ck-ep-bf16")
        prec = state["precision"]
        out.update(masters_by_name(prec["names"], prec["master"], "read1/m"))
        run("single", "bf16-mixed", True, ck=root / "ck-one-bf16", stop_at=5, clip=0.5,
            one=True)  # one process cut at step 5: its masters then
        out.update(masters_by_name([n for n, _ in last.model.named_parameters()],
                                   [m.numpy() for m in last.mixed.master], "one5/m"))
    idle_barrier()
    ep = ExpertParallel(comm)  # what each ep rank reads of it
    m, _ = ep.setup(model(True), lambda ps: skiff.optim.AdamW(ps))
    last = types.SimpleNamespace(model=m)
    state = ep.load_checkpoint(root / "ck-one-bf16")
    out.update(masters_by_name(ep.names, state["precision"]["master"], "read2/m"))
    r, _ = run("ep", "bf16-mixed", True, ck=root / "ck-one-bf16", clip=0.5)
    assert (r.resumed or {}).get("from_step") == 5, r.resumed
    out["one-to-ep/loss"] = np.array([h["loss"] for h in r.history])


def augmented(folder, stop_at=None, resume=False):
    """dp on 2 ranks, validation every 2 steps, early stopping on val_accuracy (max) and
    keep_best; cut at ``stop_at`` or resumed: the losses."""
    rank = world().rank
    np.random.seed(7 + rank)
    random.seed(7 + rank)
    skiff.seed(0)
    m = skiff.nn.Sequential(skiff.nn.Conv2d(1, 2, 3, padding=1), skiff.nn.ReLU(),
                            skiff.nn.Flatten(), skiff.nn.Linear(72, 2))
    rep = Ranks()
    rep.rank = rank
    tr = skiff.Trainer(m, strategy="dp", lr=0.02, batch_size=8, seed=0, checkpoint_dir=folder,
                       checkpoint_every=2, eval_every=2, monitor="val_accuracy", mode="max",
                       early_stopping=3, keep_best=True, resume=resume, reporter=rep,
                       callbacks=[lambda s: s["step"] == stop_at] if stop_at else None)
    r = tr.train(Flips(32, 0), epochs=3, val_dataset=Flips(16, 1, augment=False))
    return np.array([h["loss"] for h in r.history])


class Stoppable(Ranks):
    """A SIGTERM asks the run to stop at its next step, as a job's worker does (a rank of a
    plain script would just die)."""

    term = False

    def should_stop(self):
        return self.term


def keep(strategy, folder, term_at=None, resume=False):
    skiff.seed(0)
    rng = np.random.default_rng(1)
    x, xv = rng.integers(0, V, (32, T)), rng.integers(0, V, (16, T))
    rep = Stoppable() if strategy != "single" else None
    if term_at is not None:
        signal.signal(signal.SIGTERM, lambda *_: setattr(rep, "term", True))
    cb = [lambda m: m["step"] == term_at and os.kill(os.getpid(), signal.SIGTERM) and False]
    tr = skiff.Trainer(GPT(GPTConfig(block_size=T, vocab_size=V, n_layer=2, n_head=2,
                                     n_embd=16)),
                       strategy=strategy, lr=0.03, batch_size=8, seed=0, schedule="constant",
                       checkpoint_dir=folder, checkpoint_every=2, eval_every=2,
                       keep_checkpoints=1, keep_best=2, resume=resume, reporter=rep,
                       early_stopping=2,
                       callbacks=cb if term_at else None)
    yv = (xv + 1) % V
    yv[8:] = (xv[8:] * 3 + 5) % V  # half the validation wants another map: best at step 6
    r = tr.train((x, (x + 1) % V), epochs=4, val_dataset=(xv, yv))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    kept = sorted(p.name for p in Path(folder).glob("step-*"))
    full = tr.strategy.full_state_dict(tr.model) if strategy != "single" else \
        tr.model.state_dict()
    if world().rank == 0:  # the whole model's weights, gathered (compared by the test)
        np.savez(Path(folder).parent / f"{Path(folder).name}-w{int(resume)}.npz",
                 **{k: np.asarray(v, np.float64) for k, v in full.items()})
    return {"steps": r.steps, "stopped": r.stopped, "best_step": r.best_step,
            "best": Path(r.best_checkpoint).name,
            "record": json.loads((Path(folder) / "best.json").read_text()), "kept": kept,
            "val": [v["val_loss"] for v in r.val_history]}


def main():
    comm = world()
    out = {}
    root = Path(sys.argv[1])
    for case, args in (("tp", ("tp",)), ("pp", ("pp",)), ("tp-bf16", ("tp", "bf16-mixed")),
                       ("ep", ("ep", "32", True)), ("ep-bf16", ("ep", "bf16-mixed", True))):
        clip = 0.5 if case == "ep-bf16" else None  # round 42: ep's norm in mixed precision
        if case == "tp-bf16":
            r, w = run(*args)
        else:  # cut at step 5 and resumed: the instance's moments by name in the checkpoint
            run(*args, ck=root / f"ck-{case}", stop_at=5, clip=clip)
            r, w = run(*args, ck=root / f"ck-{case}", clip=clip)
            assert (r.resumed or {}).get("from_step") == 5, r.resumed
        out[f"{case}/loss"] = np.array([h["loss"] for h in r.history])
        out[f"{case}/lr"] = np.array([h["lr"] for h in r.history])
        out[f"{case}/norm"] = np.array([h.get("grad_norm", np.nan) for h in r.history])
        if comm.rank == 0:
            out.update({f"{case}/w/{k}": v for k, v in w.items()})
        if case == "ep-bf16":  # this rank's masters at the end (step 8)
            out.update(masters_by_name(last.strategy.names,
                                       [q.numpy() for q in last.mixed.master], "ep-bf16/m"))
    masters_across_world_sizes(root, out)
    # round 42 (h5): dp's checkpoint of the instance's groups resumed under tp ("array is
    # too big": the moments were taken by the model's order, not the groups')
    run("dp", ck=root / "ck-dp", stop_at=5)
    r, w = run("tp", ck=root / "ck-dp")
    assert (r.resumed or {}).get("from_step") == 5, r.resumed
    out["dp-to-tp/loss"] = np.array([h["loss"] for h in r.history])
    out["dp-to-tp/lr"] = np.array([h["lr"] for h in r.history])
    if comm.rank == 0:
        out.update({f"dp-to-tp/w/{k}": v for k, v in w.items()})
    # round 42 (h13): one process's checkpoint (step-N.npz) resumed under tp and pp, fp32
    # and bf16-mixed (refused before: "resume with one process, dp or zero1/zero2")
    for case, strategy, precision in (("one-to-tp", "tp", "32"), ("one-to-pp", "pp", "32"),
                                      ("one-to-tp-bf16", "tp", "bf16-mixed")):
        if comm.rank == 0 and case != "one-to-pp":  # pp's: a copy of tp's (below)
            run("single", precision, ck=root / f"ck-{case}", stop_at=5, one=True)
            if case == "one-to-tp":  # the same one-process checkpoint for pp, kept before
                shutil.copytree(root / f"ck-{case}", root / "ck-one-to-pp")  # tp resumes
            if precision != "32":  # its masters at step 5, and the checkpoint kept as it is
                one = {n: m.numpy() for (n, _), m in zip(last.model.named_parameters(),
                                                         last.mixed.master)}
                shutil.copytree(root / f"ck-{case}", root / f"ck-{case}-5")
        idle_barrier()
        r, w = run(strategy, precision, ck=root / f"ck-{case}")
        assert (r.resumed or {}).get("from_step") == 5, r.resumed
        if precision != "32":  # each rank's masters as tp reads them: the one's, cut
            one = comm.bcast_object(one if comm.rank == 0 else None, root=0)
            read = last.strategy.load_checkpoint(root / f"ck-{case}-5")["precision"]["master"]
            slicing = last.strategy._sliced().slicing
            off = 0.0
            for n, m in zip(last.strategy.names, read):
                want = one[n]
                if n in slicing:
                    _, axis, index = slicing[n]
                    want = want[(slice(None),) * axis + (index,)]
                off = max(off, float(np.abs(np.asarray(m, np.float64) - want).max()))
            out[f"{case}/masters_off"] = np.array(off)
        out[f"{case}/loss"] = np.array([h["loss"] for h in r.history])
        out[f"{case}/lr"] = np.array([h["lr"] for h in r.history])
        if comm.rank == 0:
            out.update({f"{case}/w/{k}": v for k, v in w.items()})
    out["aug/whole"] = augmented(root / "aug-whole")
    augmented(root / "aug-cut", stop_at=3)
    out["aug/resumed"] = augmented(root / "aug-cut", resume=True)
    np.savez(Path(sys.argv[1]) / f"rank{comm.rank}.npz", **out)
    root = Path(sys.argv[1])
    res = {"one": keep("single", root / "one")} if comm.rank == 0 else {}
    idle_barrier()
    for strategy in ("tp", "pp"):
        res[strategy] = {"whole": keep(strategy, root / f"{strategy}-whole"),
                         "cut": keep(strategy, root / f"{strategy}-cut", term_at=7)}
        res[strategy]["resumed"] = keep(strategy, root / f"{strategy}-cut", resume=True)
    (root / f"keep-rank{comm.rank}.json").write_text(json.dumps(res))
    print("RESULT " + json.dumps({"rank": comm.rank}), flush=True)


if __name__ == "__main__":
    main()
