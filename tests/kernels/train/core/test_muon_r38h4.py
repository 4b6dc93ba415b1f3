"""Round 38 (h4): torch's ``optim.Muon`` (bfloat16 Newton-Schulz orthogonalization,
Nesterov or plain momentum, decoupled weight decay, both learning-rate adjustments) against
torch 2.13: the orthogonalization bit for bit, an MLP's hidden matrices trained by Muon next
to AdamW for the rest as torch's documentation writes it, and torch's refusals."""

import copy

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core.optim_muon_r38 import zeropower_via_newtonschulz

torch = pytest.importorskip("torch")
from torch.optim._muon import _zeropower_via_newtonschulz  # noqa: E402

R = np.random.default_rng(38)
X, Y = R.normal(size=(32, 6)).astype(np.float32), R.normal(size=(32, 3)).astype(np.float32)
COEF = (3.4445, -4.7750, 2.0315)


@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (16, 16), (48, 20)])
def test_newton_schulz_is_torchs_bit_for_bit(shape):
    g = R.normal(size=shape).astype(np.float32)
    ours = zeropower_via_newtonschulz(g, COEF, 5, 1e-7)
    theirs = _zeropower_via_newtonschulz(torch.tensor(g), COEF, 5, 1e-7).float().numpy()
    np.testing.assert_array_equal(ours, theirs)
    s = np.linalg.svd(ours.astype(np.float64), compute_uv=False)
    assert 0.5 < s.min() and s.max() < 1.5  # orthogonalized (torch's S' ~ U(0.5, 1.5))


@pytest.mark.parametrize("kw", [{"lr": 0.02}, {"lr": 0.05, "nesterov": False, "momentum": 0.9},
                                {"lr": 0.01, "weight_decay": 0.0, "adjust_lr_fn":
                                 "match_rms_adamw"}, {"lr": 0.02, "ns_steps": 3}])
def test_muon_with_adamw_trains_as_torchs(kw):
    runs, init = [], {}
    for lib in (torch, skiff):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.Tanh(), lib.nn.Linear(16, 16),
                              lib.nn.Tanh(), lib.nn.Linear(16, 3))
        if lib is torch:
            init.update(copy.deepcopy(m.state_dict()))
        else:
            m.load_state_dict({k: skiff.tensor(v.numpy().copy()) for k, v in init.items()})
        hidden = [p for p in m.parameters() if p.ndim == 2]
        other = [p for p in m.parameters() if p.ndim != 2]
        muon = lib.optim.Muon(hidden, **kw)
        adamw = lib.optim.AdamW(other, lr=3e-3, weight_decay=0.01)
        losses = []
        for _ in range(5):
            loss = ((m(lib.tensor(X)) - lib.tensor(Y)) ** 2).mean()
            muon.zero_grad()
            adamw.zero_grad()
            loss.backward()
            muon.step()
            adamw.step()
            losses.append(loss.item())
        buf = muon.state_dict()["state"][0]["momentum_buffer"]
        runs.append((losses, [p.detach().numpy().copy() for p in m.parameters()],
                     np.asarray(buf.numpy() if hasattr(buf, "numpy") else buf)))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5)
    for a, b in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=1e-4, atol=1e-7)


def test_muon_refuses_what_torch_refuses():
    for lib in (torch, skiff):
        w = lib.nn.Parameter(lib.ones(2, 2))
        for kw in ({"lr": -1.0}, {"momentum": -0.1}, {"weight_decay": -0.1},
                   {"adjust_lr_fn": "other"}):
            with pytest.raises(ValueError):
                lib.optim.Muon([w], **kw)
        with pytest.raises(ValueError, match="only supports 2D parameters"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(3))])
        with pytest.raises(ValueError, match="less than 100"):
            z = _zeropower_via_newtonschulz if lib is torch else zeropower_via_newtonschulz
            z(np.ones((2, 2), np.float32) if lib is skiff else torch.ones(2, 2), COEF, 100, 1e-7)
        c = lib.nn.Parameter(lib.ones(2, 2, dtype=lib.cfloat))
        c.grad = lib.ones(2, 2, dtype=lib.cfloat)
        with pytest.raises(RuntimeError, match="complex"):
            lib.optim.Muon([c]).step()
