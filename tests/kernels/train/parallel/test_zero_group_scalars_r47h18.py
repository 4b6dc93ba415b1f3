"""Round 47 (h18): every group's scalar state in a ZeRO checkpoint, whatever rank holds it.

Round 47 h9 kept NAdam's ``mu_product`` and ASGD's ``eta``/``mu`` per group (``key@i``), but
a rank keeps only the groups of its flat slice and the checkpoint's scalars are rank 0's:
on 2 ranks a group with no element in rank 0's slice resumed with group 0's scalar. Here
rank 0's slice holds group 0 only (the first layer's 40 of 74 values, its slice 37), the
groups' betas and momentum decay differ. Two ZeRO ranks run in one process, as two threads
over a communicator of shared slots (no MPI launch). Oracle: torch 2.13's optimizer of the
same groups under the same scheduler, float64, 4 steps in one process; each run is cut at
step 2 and resumed to 4 under zero2 and zero1 on 2 ranks, dp and one process; a dp run cut
at 2 is resumed under zero1 on 2 ranks (rank 1's slice then needs group 1's scalar from
dp's per-parameter state). Weights and every group's lr to 1e-12.
"""

from __future__ import annotations

import random
import shutil
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff.kernels.train.parallel import SelfComm  # noqa: E402
from skiff.kernels.train.parallel.comm import Comm  # noqa: E402
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO  # noqa: E402

from .zero_reference import (  # noqa: E402
    assert_lrs,
    assert_weights,
    lrs,
    skiff_model,
    skiff_train,
    torch_run,
    two_groups,
    weights,
)

RNG = np.random.default_rng(4718)
X = RNG.standard_normal((16, 4))
Y = np.tanh(X @ RNG.standard_normal((4, 2)))
STEPS, CUT = 4, 2

# group 0: the first layer (its 40 values: rank 0's whole slice), group 1: the rest
GROUPS = {
    "NAdam": ({"betas": (0.8, 0.99), "momentum_decay": 0.01},
              {"lr": 0.005, "decoupled_weight_decay": True, "weight_decay": 0.1},
              {"lr": 0.02}),
    "ASGD": ({"lambd": 1e-2, "t0": 1}, {"lr": 0.005, "alpha": 0.5}, {"lr": 0.02}),
}


class _Slots:
    def __init__(self, size):
        self.size, self.slots = size, [None] * size
        self.bar = threading.Barrier(size, timeout=60)


class _ThreadComm(Comm):
    """Rank ``rank`` of ranks that are threads of this process: each collective swaps the
    ranks' values through shared slots."""

    def __init__(self, slots, rank):
        super().__init__()
        self.sh, self.rank, self.size = slots, rank, slots.size

    def _swap(self, obj):
        self.sh.bar.wait()
        self.sh.slots[self.rank] = obj
        self.sh.bar.wait()
        out = list(self.sh.slots)
        self.sh.bar.wait()
        return out

    def allreduce_(self, x, op="sum"):
        got = np.stack(self._swap(np.array(x, copy=True)))
        out = {"sum": np.sum, "mean": np.sum, "max": np.max, "min": np.min}[op](got, axis=0)
        x[...] = out / self.size if op == "mean" else out
        return x

    def allgather(self, x):
        return np.stack(self._swap(np.array(x, copy=True)))

    def allgatherv(self, x):
        got = [g.reshape(-1) for g in self._swap(np.array(x, copy=True))]
        return np.concatenate(got), [int(g.size) for g in got]

    def broadcast(self, x, root=0):
        return np.array(self._swap(np.array(x, copy=True))[root], copy=True)

    def barrier(self):
        self._swap(None)

    def bcast_object(self, obj, root=0):
        return self._swap(obj)[root]

    def allgather_object(self, obj):
        return self._swap(obj)


def _opt(lib, named, kind):
    return two_groups(lib, kind, [p for n, p in named if n.startswith("0.")],
                      [p for n, p in named if not n.startswith("0.")], *GROUPS[kind])


def _schedule(lib, opt):  # the groups' lrs move apart, each toward eta_min
    return lib.optim.lr_scheduler.CosineAnnealingLR(opt, 3, eta_min=0.001)


@pytest.fixture(scope="module")
def start():
    return weights(skiff_model(5))


@pytest.fixture(scope="module")
def torch_runs(start):
    """torch's weights and groups' lrs after STEPS steps, per optimizer."""
    out = {}
    for kind in GROUPS:
        want, opt = torch_run(start, X, Y, lambda lib, named, kind=kind: _opt(lib, named, kind),
                              _schedule, STEPS)
        out[kind] = (want, lrs(opt))
    return out


def _train(start, kind, strategy, ck, stop=None):
    m = skiff_model()
    m.load_state_dict(start)
    trainer = skiff_train(m, strategy, _opt(skiff, list(m.named_parameters()), kind),
                          lambda o: _schedule(skiff, o), (X, Y), STEPS, ck,
                          1 if stop else None, stop is None, stop)
    return m, trainer


def _run(start, kind, strategy, ck, stop=None):
    """One process (strategy a string or object) or two thread ranks ("zero1"/"zero2" on
    2): rank 0's model and trainer."""
    # a resume restores the global generators it saved: left as they were
    state, py, th = np.random.get_state(), random.getstate(), torch.get_rng_state()
    try:
        with skiff.random.fork_rng():
            if not (isinstance(strategy, tuple)):
                return _train(start, kind, strategy, ck, stop)
            slots, out, errors = _Slots(2), [None, None], []

            def rank(r):
                try:
                    out[r] = _train(start, kind, ZeRO(strategy[1], _ThreadComm(slots, r)),
                                    ck, stop)
                except BaseException as exc:  # the other rank must not wait for it
                    errors.append(exc)
                    slots.bar.abort()

            threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            if errors:
                raise errors[0]
            assert out[0][1].strategy.hi == 37 and out[1][1].strategy.lo == 37
            return out[0]
    finally:
        np.random.set_state(state)
        random.setstate(py)
        torch.set_rng_state(th)


def _close(got, want, what):
    (m, trainer), (weights_, lrs_) = got, want
    assert_weights(m, weights_, what)
    assert_lrs(trainer, lrs_, what)


@pytest.mark.parametrize("kind", sorted(GROUPS))
def test_two_ranks_resume_each_groups_scalar(kind, start, torch_runs, tmp_path):
    """Cut at step 2 on two zero2 ranks (rank 0: group 0 only), resumed under zero2 and zero1
    on two ranks, dp and one process: torch's 4 steps (group 1 took group 0's mu_product, or
    eta and mu, before)."""
    _run(start, kind, ("zero", 2), tmp_path, stop=CUT)
    assert not list(tmp_path.glob("step-*.npz"))  # sharded: a folder of the ranks' files
    resumes = [("zero", 2), ("zero", 1), DataParallel(SelfComm()), "auto"]
    for i, strategy in enumerate(resumes):  # each from the cut (a resume saves its end)
        ck = shutil.copytree(tmp_path, tmp_path.parent / f"{tmp_path.name}-{i}")
        _close(_run(start, kind, strategy, ck), torch_runs[kind],
               f"{kind} zero2 x2 -> {strategy}")


def test_dp_resumed_on_two_zero_ranks(start, torch_runs, tmp_path):
    """A dp run cut at 2, resumed under zero1 on two ranks: rank 1's slice holds both groups
    and takes each group's mu_product from the per-parameter state (group 0's before)."""
    _run(start, "NAdam", DataParallel(SelfComm()), tmp_path, stop=CUT)
    _close(_run(start, "NAdam", ("zero", 1), tmp_path), torch_runs["NAdam"], "dp -> zero1 x2")
