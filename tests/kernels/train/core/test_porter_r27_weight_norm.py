"""Round 27: weight normalisation (nn/weight_norm.py) against torch 2.13 in float64: the old
``nn.utils.weight_norm``/``remove_weight_norm`` and ``nn.utils.parametrizations.weight_norm``:
state-dict names and values, outputs and the gradients of g and v over 5 Adam steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(5)


def _np(t):
    if isinstance(t, np.ndarray):
        return t
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _apply(lib, kind, m, dim):
    if kind == "old":
        return lib.nn.utils.weight_norm(m, dim=dim)
    return lib.nn.utils.parametrizations.weight_norm(m, dim=dim)


@pytest.mark.parametrize("kind", ["old", "parametrizations"])
@pytest.mark.parametrize("layer,dim", [("linear", 0), ("conv", 0), ("linear", None)])
def test_weight_norm_trains_as_torch(kind, layer, dim):
    torch.manual_seed(0)
    make = {"linear": lambda L: L.nn.Linear(4, 3), "conv": lambda L: L.nn.Conv1d(2, 3, 3)}
    tm = make[layer](torch).double()
    sm = make[layer](skiff).double()
    sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((5, 4) if layer == "linear" else (5, 2, 7))
    res = []
    for lib, m in ((torch, tm), (skiff, sm)):
        m = _apply(lib, kind, m, dim)
        opt = lib.optim.Adam(m.parameters(), lr=0.05)
        losses = []
        for _ in range(5):
            loss = (m(lib.tensor(x)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        res.append((losses, {k: _np(v) for k, v in m.state_dict().items()},
                    _np(m.weight)))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    assert list(res[1][1]) == list(res[0][1])
    for k in res[0][1]:
        np.testing.assert_allclose(res[1][1][k], res[0][1][k], rtol=1e-11, err_msg=k)
    if kind == "parametrizations":  # computed on access, as torch's
        np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-11)


def test_remove_weight_norm():
    w0 = RNG.standard_normal((2, 3))
    got = []
    for lib in (torch, skiff):
        m = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w0))
        m = lib.nn.utils.weight_norm(m)
        assert sorted(m.state_dict()) == ["bias", "weight_g", "weight_v"]
        m(lib.tensor(RNG.standard_normal((1, 3))))
        lib.nn.utils.remove_weight_norm(m)
        got.append((sorted(m.state_dict()), _np(m.weight)))
    assert got[0][0] == got[1][0] == ["bias", "weight"]
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-14)
    np.testing.assert_allclose(got[1][1], w0, rtol=1e-14)
    with pytest.raises(ValueError, match="weight_norm"):
        skiff.nn.utils.remove_weight_norm(skiff.nn.Linear(2, 2))
