"""A run stopped under dp or ZeRO resumes under tp and pp with its AdamW moments (cut from
ZeRO's flat slices to the split layers' pieces), and mixed precision's float32 masters move
between dp, ZeRO, tp and one process.

usage: split_resume_check.py DIR
Float32 (a GPT without biases: Adam turns the rounding noise of the attention key bias's
zero gradient into full steps in any layout): per case the step it resumed from, steps run,
the largest relative loss difference and weight difference against one device that never
stopped. bf16-mixed: the masters the resumed layout holds after reading the checkpoint
against the masters the stopped run held (its layout's pieces of them, by name): the largest
difference (0: carried over exactly).
"""

import json
import shutil
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import world

STEPS, STOP = 8, 3


class Reporter(NullReporter):
    def __init__(self, ranks, stop=None):
        self.world_size, self.stop, self.step = ranks, stop, 0
        self.rank = world().rank if ranks > 1 else 0
        self.lines = []

    def progress(self, done, total=None, **kw):
        self.step = done

    def log(self, message, *, level="info"):
        self.lines.append(f"{level}: {message}")

    def should_stop(self):
        return self.stop is not None and self.step >= self.stop


def data():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 64, size=(32, 17))
    return ids[:, :-1], ids[:, 1:]


def trainer_of(strategy, ranks, precision, folder=None, stop=None, resume=False):
    skiff.seed(0)
    model = GPT(GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=2, n_embd=32,
                          bias=False))
    rep = Reporter(ranks, stop)
    return skiff.Trainer(model, strategy=strategy, lr=1e-2, batch_size=8, seed=0,
                         schedule="constant", checkpoint_dir=folder, resume=resume,
                         reporter=rep, precision=precision)


def run(strategy, ranks, precision, folder=None, stop=None, resume=False):
    trainer = trainer_of(strategy, ranks, precision, folder, stop, resume)
    result = trainer.train(data(), steps=STEPS)
    return result, trainer.strategy.full_state_dict(trainer.model), trainer.reporter.lines


def masters_by_name(trainer, comm):
    """The masters this rank holds, by parameter name: whole arrays (dp, one process; ZeRO's
    flat slices gathered here and split), tp's slices as they are."""
    st, masters = trainer.strategy, [np.asarray(m.numpy()) for m in trainer.mixed.master]
    names = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    shapes = {n: tuple(p.shape) for n, p in trainer.model.named_parameters()}
    if getattr(st, "name", "") in ("zero1", "zero2"):
        flat = np.concatenate(comm.allgather(masters[0].reshape(-1)))
        sizes = [int(np.prod(shapes[n])) for n in st.names]
        cuts = np.cumsum([0] + sizes)
        return {n: flat[a:b].reshape(shapes[n]) for n, a, b in zip(st.names, cuts, cuts[1:])}
    return dict(zip(getattr(st, "names", names), masters))


def piece_of(whole, name, slicing):
    """A tp rank's piece of a whole master (rows or columns ``index`` along ``axis``)."""
    if name not in slicing:
        return whole
    _, axis, index = slicing[name]
    return np.take(whole, np.asarray(index), axis=axis)


def masters_carried(first, then, folder, comm):
    """Masters after resuming ``then`` from ``first`` stopped, against those at the stop."""
    from mpi4py import MPI

    from skiff.kernels.train.parallel.sliced_state import tensor_parallel_slicing

    a = trainer_of(first, 2, "bf16-mixed", folder, stop=STOP)
    a.train(data(), steps=STEPS)
    at_stop = masters_by_name(a, MPI.COMM_WORLD)
    step = a.reporter.step
    comm.barrier()
    if then == "one" and comm.rank != 0:
        comm.barrier()
        return None
    b = trainer_of("single" if then == "one" else then, 1 if then == "one" else 2,
                   "bf16-mixed", folder, resume=True)
    b.train(data(), steps=step)  # nothing left to train: the masters as read
    got = masters_by_name(b, MPI.COMM_WORLD)
    slicing = tensor_parallel_slicing(b.model) if then == "tp" else {}
    if then == "one":
        comm.barrier()
    return {"names": sorted(got) == sorted(at_stop),
            "masters": max(float(np.abs(got[n] - piece_of(at_stop[n], n, slicing)).max())
                           for n in got)}


def compare(result, weights, lines, ref):
    ref_result, ref_weights, _ = ref
    losses = [r["loss"] for r in result.history]
    want = [r["loss"] for r in ref_result.history]
    return {"resumed": (result.resumed or {}).get("from_step"), "steps": result.steps,
            "afresh": any("afresh" in line for line in lines),
            "loss": max(abs(a - b) / abs(b) for a, b in zip(losses, want)),
            "weights": max(float(np.abs(np.asarray(weights[k], np.float32)
                                        - np.asarray(ref_weights[k], np.float32)).max())
                           for k in ref_weights)}


def cases(comm, root, precision, plan):
    """``plan``: (name, first strategy, strategy that resumes; 'one' = one process)."""
    ref = run("single", 1, precision)
    out = {}
    for name, first, then in plan:
        folder = root / f"{precision}-{name}"
        run(first, 2, precision, folder, stop=STOP)
        comm.barrier()
        if then == "one":
            if comm.rank == 0:
                out[name] = compare(*run("single", 1, precision, folder, resume=True), ref)
            comm.barrier()
        else:
            out[name] = compare(*run(then, 2, precision, folder, resume=True), ref)
    return out


def main():
    comm = world()
    root = Path(sys.argv[1])
    out = {"rank": comm.rank}
    out["32"] = cases(comm, root, "32", [("zero2->tp", "zero2", "tp"),
                                         ("zero1->pp", "zero1", "pp"),
                                         ("dp->tp", "dp", "tp")])
    out["bf16"] = {}
    for first, then in (("zero2", "dp"), ("dp", "zero1"), ("zero2", "tp"), ("zero2", "one")):
        got = masters_carried(first, then, root / f"bf16-{first}-{then}", comm)
        if got is not None:
            out["bf16"][f"{first}->{then}"] = got
    if comm.rank == 0:
        shutil.rmtree(root, ignore_errors=True)
    print("RESULT " + json.dumps(out), flush=True)


main()
