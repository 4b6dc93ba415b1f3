"""A state dict's values answer the Tensor calls torch programs make on them (keeping the
best weights: ``{k: v.cpu().clone() ...}``, ``v.to(device)``, ``v.float()``, ``copy_``);
oracle: the same program under torch 2.13, and numpy/``torch.from_numpy`` still taking them."""

import copy
import io
import pickle

import numpy as np
import torch

import skiff


def _program(lib, X, y, init):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.Tanh(), lib.nn.Linear(6, 1)).double()
    model.load_state_dict(init)
    opt = lib.optim.SGD(model.parameters(), lr=0.3)
    X, y = lib.tensor(X), lib.tensor(y)
    best, best_loss, seen = None, float("inf"), []
    for _ in range(6):
        opt.zero_grad()
        loss = ((model(X) - y) ** 2).mean()
        loss.backward()
        opt.step()
        v = loss.item()
        seen.append(v)
        if v < best_loss:
            best_loss = v
            best = {k: v.cpu().clone() for k, v in model.state_dict().items()}
    avg = {k: v.detach().clone().to("cpu").double() for k, v in model.state_dict().items()}
    for k in avg:
        avg[k].copy_(best[k])
    model.load_state_dict(avg)
    n = sum(v.numel() for v in model.state_dict().values())
    with lib.no_grad():
        final = ((model(X) - y) ** 2).mean().item()
    return seen, final, n


def test_best_weights_idiom_matches_torch():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((20, 4)), rng.standard_normal((20, 1)) * 3
    torch.manual_seed(1)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))
    init = {k: v.detach().double() for k, v in tm.state_dict().items()}
    ts, tf, tn = _program(torch, X, y, init)
    ss, sf, sn = _program(skiff, X, y, {k: v.numpy() for k, v in init.items()})
    np.testing.assert_allclose(ss, ts, rtol=1e-12)
    np.testing.assert_allclose(sf, tf, rtol=1e-12)
    assert sn == tn


def test_values_stay_numpy_arrays_for_numpy_code():
    m = skiff.nn.Linear(3, 2)
    sd = m.state_dict()
    w = sd["weight"]
    assert isinstance(w, np.ndarray) and w.shape == (2, 3)
    assert type(pickle.loads(pickle.dumps(w))) is np.ndarray
    assert isinstance(torch.from_numpy(w), torch.Tensor)
    np.testing.assert_array_equal(copy.deepcopy(sd)["bias"], sd["bias"])
    assert w.clone() is not w and np.shares_memory(w.clone(), w) is False
    assert w.numpy().__class__ is np.ndarray and w.dim() == 2 and w.is_floating_point()
    buf = io.BytesIO()
    np.savez(buf, **sd)
    buf.seek(0)
    np.testing.assert_array_equal(np.load(buf)["weight"], w)
    w.copy_(skiff.ones(2, 3))
    np.testing.assert_array_equal(w, np.ones((2, 3)))
    # round 41: a write reaches the parameter, as into torch's view (EMA code relies on it)
    assert np.all(m.state_dict()["weight"] == 1) and np.all(m.weight.detach().numpy() == 1)
