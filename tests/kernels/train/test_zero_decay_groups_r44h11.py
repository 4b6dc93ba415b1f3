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
from skiff import nn
from skiff.kernels.train.parallel import SelfComm
from skiff.kernels.train.parallel.data_parallel import ZeRO

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X = RNG.standard_normal((24, 4))
Y = np.tanh(X @ RNG.standard_normal((4, 2)))


def _model():
    skiff.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Tanh(), nn.Linear(8, 2)).double()


def _groups(named, decay):
    return [{"params": [p for n, p in named if len(p.shape) >= 2], "weight_decay": decay},
            {"params": [p for n, p in named if len(p.shape) < 2], "weight_decay": 0.0}]


def _make(lib, kind, params):
    opt = lib.optim
    if kind == "adamw":
        return opt.AdamW(params, lr=0.05)
    if kind == "adam":  # L2
        return opt.Adam(params, lr=0.05)
    return opt.SGD(params, lr=0.1, momentum=0.9)


def _torch_weights(init, kind, steps=6, second=None):
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 2)).double()
    tm.load_state_dict({k: torch.tensor(v) for k, v in init.items()})
    groups = _groups(list(tm.named_parameters()), 0.3)
    groups[1].update(second or {})
    opt = _make(torch, kind, groups)
    x, y = torch.tensor(X), torch.tensor(Y)
    for s in range(steps):
        lo = (s % 3) * 8
        loss = torch.nn.functional.mse_loss(tm(x[lo:lo + 8]), y[lo:lo + 8])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in tm.state_dict().items()}


@pytest.mark.parametrize("kind", ["adamw", "adam", "sgd"])
def test_a_no_decay_group_under_zero_steps_as_torch(kind):
    m = _model()
    init = {k: np.array(v) for k, v in m.state_dict().items()}
    opt = _make(skiff, kind, _groups(list(m.named_parameters()), 0.3))
    skiff.Trainer(m, strategy=ZeRO(2, SelfComm()), optimizer=opt, loss="mse", batch_size=8,
                  shuffle=False, clip=None, schedule="constant").train((X, Y), steps=6)
    want = _torch_weights(init, kind)
    for k, w in want.items():
        np.testing.assert_allclose(np.asarray(m.state_dict()[k]), w, rtol=0, atol=1e-12,
                                   err_msg=k)


def test_groups_of_other_betas_step_as_torch_and_the_built_in_groups_run():
    m = _model()
    init = {k: np.array(v) for k, v in m.state_dict().items()}
    groups = _groups(list(m.named_parameters()), 0.3)
    groups[1]["betas"] = (0.8, 0.99)  # refused until round 47 h3 (other moments per group)
    skiff.Trainer(m, strategy=ZeRO(1, SelfComm()), optimizer=_make(skiff, "adamw", groups),
                  loss="mse", batch_size=8, shuffle=False, clip=None,
                  schedule="constant").train((X, Y), steps=6)
    for k, w in _torch_weights(init, "adamw", second={"betas": (0.8, 0.99)}).items():
        np.testing.assert_allclose(np.asarray(m.state_dict()[k]), w, rtol=0, atol=1e-12,
                                   err_msg=k)
    # decay_bias_norm=False, the built-in AdamW's two groups: torch's AdamW groups
    m = _model()
    init = {k: np.array(v) for k, v in m.state_dict().items()}
    skiff.Trainer(m, strategy=ZeRO(1, SelfComm()), lr=0.05, weight_decay=0.3,
                  decay_bias_norm=False, loss="mse", batch_size=8, shuffle=False, clip=None,
                  schedule="constant").train((X, Y), steps=6)
    for k, w in _torch_weights(init, "adamw").items():
        np.testing.assert_allclose(np.asarray(m.state_dict()[k]), w, rtol=0, atol=1e-12,
                                   err_msg=k)
