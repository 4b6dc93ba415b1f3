"""Round 47 (h9): torch's Adagrad fills every group's ``sum`` with the constructor's
``initial_accumulator_value``, not the group's (torch 2.13's ``Adagrad.__init__`` reads the
argument); skiff's read the group's. Oracle: torch 2.13, float64, two steps to 1e-14.
Fixed by the core/optim_more.py diff in /work/round47/h9-requests.md."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402


def test_adagrad_groups_start_from_the_constructors_accumulator():
    a0, b0 = np.array([0.3, -0.2]), np.array([1.0, 0.5, -0.4])
    out = {}
    for lib in (torch, skiff):
        a = lib.tensor(a0.copy(), requires_grad=True)
        b = lib.tensor(b0.copy(), requires_grad=True)
        opt = lib.optim.Adagrad([{"params": [a], "initial_accumulator_value": 2.0},
                                 {"params": [b], "lr": 0.05}],
                                lr=0.1, initial_accumulator_value=0.5)
        for _ in range(2):
            opt.zero_grad()
            ((a * a).sum() + (b ** 3).sum()).backward()
            opt.step()
        out[lib.__name__] = [np.array(t.detach().numpy() if hasattr(t, "detach") else t)
                             for t in (a, b, opt.state[a]["sum"])]
    for mine, theirs in zip(out["skiff"], out["torch"]):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-14)
