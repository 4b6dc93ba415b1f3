"""The torch reference and the skiff run of the ZeRO parameter-group tests (round 47 h22).

``test_zero_groups_r47h3.py``, ``test_zero_groups_r47h9.py``,
``test_zero_group_scalars_r47h18.py`` and ``../test_zero_decay_groups_r44h11.py`` train the
same float64 net (Linear(4, 8), LayerNorm(8), Tanh, Linear(8, 2)) with an optimizer of two
groups of other settings, under ZeRO and under torch 2.13 in one process (the oracle), and
compare the weights to 1e-12. Here: the net (skiff's and torch's), the groups, torch's loop
(the MSE of the batches of 8 rows in order, cycling; ``opt.step`` then ``sched.step``), the
skiff Trainer run and the comparisons. Each test keeps its own data, settings and cases.
"""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff import nn

torch = pytest.importorskip("torch")

BATCH = 8


def skiff_model(seed=None):
    """The net, float64; ``seed``: seeded with the global generator left as it was."""
    if seed is None:
        return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Tanh(),
                             nn.Linear(8, 2)).double()
    with skiff.random.fork_rng():
        skiff.manual_seed(seed)
        return skiff_model()


def weights(m):
    """A model's state as numpy arrays (a copy)."""
    return {k: np.array(v) for k, v in m.state_dict().items()}


def by_ndim(named):
    """Matrices and vectors (biases, the norm's) of ``named``: two groups that interleave in
    the flat vector."""
    return [p for _, p in named if p.ndim >= 2], [p for _, p in named if p.ndim < 2]


def two_groups(lib, kind, first, rest, first_settings, rest_settings, default):
    """``lib.optim.<kind>`` of the groups ``first`` and ``rest``, each with its settings."""
    return getattr(lib.optim, kind)([{"params": first, **first_settings},
                                     {"params": rest, **rest_settings}], **default)


def torch_run(state, x, y, make_opt, make_sched=None, steps=6):
    """torch's weights (numpy) and optimizer after ``steps`` steps from ``state``:
    ``make_opt(torch, named_parameters)``, ``make_sched(torch, opt)`` stepped after each
    ``opt.step``, the MSE of the batches of 8 rows of ``x``, ``y`` in order, cycling."""
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 2)).double()
    tm.load_state_dict({k: torch.tensor(np.array(v)) for k, v in state.items()})
    opt = make_opt(torch, list(tm.named_parameters()))
    sched = make_sched(torch, opt) if make_sched else None
    x, y = torch.tensor(x), torch.tensor(y)
    batches = len(x) // BATCH
    for s in range(steps):
        lo = (s % batches) * BATCH
        loss = torch.nn.functional.mse_loss(tm(x[lo:lo + BATCH]), y[lo:lo + BATCH])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
    return {k: v.detach().numpy() for k, v in tm.state_dict().items()}, opt


def skiff_train(m, strategy, optimizer, schedule, data, steps, checkpoint_dir=None,
                checkpoint_every=None, resume=False, stop=None):
    """skiff's Trainer on the same batches (8 rows in order, no clip); ``stop``: cut after
    that step. Returns the trainer."""
    trainer = skiff.Trainer(
        m, strategy=strategy, optimizer=optimizer, loss="mse", batch_size=BATCH,
        shuffle=False, clip=None, schedule=schedule, checkpoint_dir=checkpoint_dir,
        checkpoint_every=checkpoint_every, resume=resume,
        callbacks=[lambda r: r["step"] >= stop] if stop else None)
    trainer.train(data, steps=steps)
    return trainer


def lrs(opt):
    return [g["lr"] for g in opt.param_groups]


def assert_weights(m, want, what=""):
    """Every weight of ``m`` to torch's ``want`` within 1e-12 (absolute)."""
    for k, w in want.items():
        np.testing.assert_allclose(np.asarray(m.state_dict()[k]), w, rtol=0, atol=1e-12,
                                   err_msg=f"{what} {k}")


def assert_lrs(trainer, want, what=""):
    """Every group's lr of the trainer's optimizer to ``want`` within 1e-12 (relative)."""
    np.testing.assert_allclose(lrs(trainer.optimizer), want, rtol=1e-12, err_msg=what)
