"""Round 44 (h11): weight decay by parameter under ZeRO, whose optimizer steps one flat
slice of all the parameters, one group.

A user's optimizer of the usual two groups, decay on the matrices and none on biases and
norms (``AdamW([{decay, weight_decay: 0.1}, {no decay, weight_decay: 0}])``, nanoGPT's and
transformers' habit), was refused under zero1/zero2 ("2 parameter groups of other settings
(weight_decay) ... one group"), as was ``Trainer(decay_bias_norm=False)`` (round 44 h5).
Now the slice is built as one group of decay 0 and each element decays by its parameter's
own decay before the step (``trainer_optimizer.flat_decay``): AdamW's decoupled decay, SGD's
and Adam's L2. Other lrs run since round 45 h5 (test_torch_port_r45h5.py), other betas since
round 47 h3 (the slice stepped group by group: parallel/test_zero_groups_r47h3.py).

Oracle: torch 2.13's optimizers with the same two groups, float64, the same first weights
and batches in order; ZeRO runs in one process (``SelfComm``) through the flat-slice code
the ranks run (2 ranks: ``parallel/test_same_data_r29.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.parallel import SelfComm
from skiff.kernels.train.parallel.data_parallel import ZeRO

torch = pytest.importorskip("torch")

from .parallel.zero_reference import (  # noqa: E402
    assert_weights,
    by_ndim,
    skiff_model,
    skiff_train,
    torch_run,
    weights,
)

RNG = np.random.default_rng(3)
X = RNG.standard_normal((24, 4))
Y = np.tanh(X @ RNG.standard_normal((4, 2)))


def _groups(named, decay):
    mats, vecs = by_ndim(named)
    return [{"params": mats, "weight_decay": decay}, {"params": vecs, "weight_decay": 0.0}]


def _make(lib, kind, params):
    opt = lib.optim
    if kind == "adamw":
        return opt.AdamW(params, lr=0.05)
    if kind == "adam":  # L2
        return opt.Adam(params, lr=0.05)
    return opt.SGD(params, lr=0.1, momentum=0.9)


def _torch_weights(init, kind, steps=6, second=None):
    def make(lib, named):
        groups = _groups(named, 0.3)
        groups[1].update(second or {})
        return _make(lib, kind, groups)

    return torch_run(init, X, Y, make, None, steps)[0]


@pytest.mark.parametrize("kind", ["adamw", "adam", "sgd"])
def test_a_no_decay_group_under_zero_steps_as_torch(kind):
    m = skiff_model(1)
    init = weights(m)
    opt = _make(skiff, kind, _groups(list(m.named_parameters()), 0.3))
    skiff_train(m, ZeRO(2, SelfComm()), opt, "constant", (X, Y), 6)
    assert_weights(m, _torch_weights(init, kind))


def test_groups_of_other_betas_step_as_torch_and_the_built_in_groups_run():
    m = skiff_model(1)
    init = weights(m)
    groups = _groups(list(m.named_parameters()), 0.3)
    groups[1]["betas"] = (0.8, 0.99)  # refused until round 47 h3 (other moments per group)
    skiff_train(m, ZeRO(1, SelfComm()), _make(skiff, "adamw", groups), "constant", (X, Y), 6)
    assert_weights(m, _torch_weights(init, "adamw", second={"betas": (0.8, 0.99)}))
    # decay_bias_norm=False, the built-in AdamW's two groups: torch's AdamW groups
    m = skiff_model(1)
    init = weights(m)
    skiff.Trainer(m, strategy=ZeRO(1, SelfComm()), lr=0.05, weight_decay=0.3,
                  decay_bias_norm=False, loss="mse", batch_size=8, shuffle=False, clip=None,
                  schedule="constant").train((X, Y), steps=6)
    assert_weights(m, _torch_weights(init, "adamw"))
