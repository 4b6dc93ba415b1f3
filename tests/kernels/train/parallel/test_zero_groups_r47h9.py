"""Round 47 (h9): ZeRO steps the groups of every element-wise optimizer group by group.

Round 47 h3 stepped a user's parameter groups of other settings one group at a time for
SGD, Adam and AdamW; RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, Rprop and ASGD with
groups of other settings were refused. Their updates are element-wise too; what differs is
their state: Adagrad's is made at construction (each group's ``initial_accumulator_value``),
NAdam's ``mu_product`` and ASGD's ``eta``/``mu`` are scalars of the group's settings, so
each group keeps its own. Oracle: torch 2.13's optimizer of the same groups (and a
scheduler moving them apart) in one process, float64, weights to 1e-12. ZeRO runs in one
process (``SelfComm``) through the flat-slice code, as test_zero_groups_r47h3.py.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff.kernels.train.parallel import SelfComm  # noqa: E402
from skiff.kernels.train.parallel.data_parallel import ZeRO  # noqa: E402

from .zero_reference import (  # noqa: E402
    assert_lrs,
    assert_weights,
    by_ndim,
    lrs,
    skiff_model,
    skiff_train,
    torch_run,
    two_groups,
)

RNG = np.random.default_rng(479)
X = RNG.standard_normal((24, 4))
Y = np.tanh(X @ RNG.standard_normal((4, 2)))

# matrices' group, vectors' group (biases, the norm's): they interleave in the flat vector
GROUPS = {
    "RMSprop": ({"alpha": 0.9, "momentum": 0.5, "centered": True},
                {"lr": 0.005, "weight_decay": 0.1}, {"lr": 0.01}),
    # torch fills every group's sum with the constructor's initial_accumulator_value
    "Adagrad": ({"lr_decay": 0.01}, {"lr": 0.05, "eps": 1e-8},
                {"lr": 0.02, "initial_accumulator_value": 0.1}),
    "Adamax": ({"betas": (0.8, 0.99)}, {"lr": 0.005, "weight_decay": 0.1}, {"lr": 0.02}),
    "NAdam": ({"betas": (0.8, 0.99), "momentum_decay": 0.01},
              {"lr": 0.005, "decoupled_weight_decay": True, "weight_decay": 0.1},
              {"lr": 0.02}),
    "RAdam": ({"betas": (0.9, 0.9)}, {"lr": 0.005, "weight_decay": 0.1,
                                      "decoupled_weight_decay": True}, {"lr": 0.02}),
    "Adadelta": ({"rho": 0.8}, {"lr": 0.5, "eps": 1e-5}, {"lr": 1.0}),
    "Rprop": ({"etas": (0.4, 1.3)}, {"lr": 0.005, "step_sizes": (1e-5, 0.1)}, {"lr": 0.01}),
    "ASGD": ({"lambd": 1e-2, "t0": 2}, {"lr": 0.005, "alpha": 0.5}, {"lr": 0.02}),
}


def _opt(lib, named, kind):
    return two_groups(lib, kind, *by_ndim(named), *GROUPS[kind])


def _schedule(lib, opt):  # the groups' lrs move apart, each toward eta_min
    return lib.optim.lr_scheduler.CosineAnnealingLR(opt, 5, eta_min=0.001)


def _torch(kind, steps=6):
    return torch_run(skiff_model(2).state_dict(), X, Y,
                     lambda lib, named: _opt(lib, named, kind), _schedule, steps)


def _skiff(kind, layout=2, ck=None, stop=None, resume=False):
    m = skiff_model(2)
    trainer = skiff_train(m, ZeRO(layout, SelfComm()), _opt(skiff, list(m.named_parameters()),
                                                             kind),
                          lambda o: _schedule(skiff, o), (X, Y), 6, ck, 1 if ck else None,
                          resume, stop)
    return m, trainer


@pytest.mark.parametrize("kind", sorted(GROUPS))
def test_zero_steps_element_wise_optimizers_groups_as_torch(kind):
    """Refused before ('... of 2 parameter groups of other settings'); each group's settings,
    construction state and scalar state now its own."""
    want, opt = _torch(kind)
    m, trainer = _skiff(kind, layout=1 if kind in ("Adagrad", "ASGD") else 2)
    assert_weights(m, want, kind)
    assert_lrs(trainer, lrs(opt))


def test_a_resume_keeps_each_groups_scalar_state(tmp_path):
    """NAdam's mu_product differs by group (betas[0], momentum_decay): cut at step 3 under
    zero2 and resumed under zero2 to step 6, torch's 6 steps."""
    want, _ = _torch("NAdam")
    _skiff("NAdam", ck=tmp_path, stop=3)
    m, _ = _skiff("NAdam", ck=tmp_path, resume=True)
    assert_weights(m, want, "resumed")


def test_a_resume_under_dp_gives_each_group_its_scalar_state(tmp_path):
    """The same NAdam cut at step 3 under zero2, resumed in one process and under dp: each
    parameter's mu_product is its group's. Needs h9's request 6 (relayout.py)."""
    from skiff.kernels.train.parallel.data_parallel import DataParallel

    want, _ = _torch("NAdam")
    _skiff("NAdam", ck=tmp_path, stop=3)
    for strategy in ("auto", DataParallel(SelfComm())):
        m = skiff_model(2)
        skiff_train(m, strategy, _opt(skiff, list(m.named_parameters()), "NAdam"),
                    lambda o: _schedule(skiff, o), (X, Y), 6, tmp_path, resume=True)
        assert_weights(m, want, f"zero2 -> {strategy}")


@pytest.mark.parametrize("kind", ["Adafactor", "Muon"])
def test_optimizers_not_element_wise_are_refused_naming_what_works(kind):
    m = skiff_model(2)
    mats, vecs = by_ndim(list(m.named_parameters()))
    first, rest = (mats[:1], mats[1:]) if kind == "Muon" else (mats, vecs)  # Muon: matrices
    opt = getattr(skiff.optim, kind)([{"params": first, "lr": 0.02}, {"params": rest}],
                                     lr=0.01)
    with pytest.raises(ValueError, match=rf"{kind} of 2 parameter groups of other settings "
                                         r"\(lr\).*element-wise optimizers only.*RMSprop"):
        skiff.Trainer(m, strategy=ZeRO(1, SelfComm()), optimizer=opt, loss="mse",
                      batch_size=8).train((X, Y), steps=1)
