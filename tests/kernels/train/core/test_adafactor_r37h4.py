"""Round 37 (h4): torch's ``optim.Adafactor`` (factored second moments of matrices and a
3-D tensor, vectors' plain ones, weight decay, maximize, eps/d/beta2_decay, the state and
its ``state_dict`` names) against torch 2.13 in float64."""

import copy

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(37)
X, Y = R.normal(size=(16, 6)), R.normal(size=(16, 2))
W3 = np.arange(24.0).reshape(2, 3, 4) / 10


@pytest.mark.parametrize("kw", [{}, {"lr": 0.05, "weight_decay": 0.1},
                                {"eps": (1e-20, 1e-3), "d": 1.5, "beta2_decay": -0.5,
                                 "maximize": True}, {"lr": 0.3}])
def test_adafactor_steps_are_torchs(kw):
    runs, init = [], {}
    for lib in (torch, skiff):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2)).double()
        if lib is torch:
            init.update(copy.deepcopy(m.state_dict()))
        else:
            m.load_state_dict({k: skiff.tensor(v.numpy().copy()) for k, v in init.items()})
        w3 = lib.nn.Parameter(lib.tensor(W3))
        opt = lib.optim.Adafactor(list(m.parameters()) + [w3], **kw)
        losses = []
        for _ in range(6):
            loss = ((m(lib.tensor(X)) - lib.tensor(Y)) ** 2).mean() + 0.01 * (w3 ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        state = opt.state_dict()["state"]
        runs.append((losses, [p.detach().numpy().copy() for p in list(m.parameters()) + [w3]],
                     {i: sorted(s) for i, s in state.items()}, float(state[0]["step"])))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-12)
    for a, b in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
    assert runs[1][2:] == runs[0][2:]


def test_adafactor_refuses_what_torch_refuses():
    for lib in (torch, skiff):
        p = [lib.nn.Parameter(lib.ones(2, 2))]
        for kw in ({"lr": -1.0}, {"beta2_decay": 0.5}, {"d": 0.5}, {"eps": (None, -1.0)},
                   {"weight_decay": -0.1}):
            with pytest.raises(ValueError):
                lib.optim.Adafactor(p, **kw)
