"""Round 27, a torch porter's leftovers: ``optim.Adadelta`` and ``optim.Rprop`` (float64 steps
against torch 2.13's), the samplers (``WeightedRandomSampler`` frequencies against torch's
sampler's, ``RandomSampler``, ``SubsetRandomSampler``, ``BatchSampler``) and
``ConcatDataset`` (items, ``cumulative_sizes``, ``ds1 + ds2``, through a ``DataLoader``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import skiff
import skiff.utils.data as sud

RNG = np.random.default_rng(2027)


def _run(lib, name, kw, X, y, W0, b0, steps=25):
    model = lib.nn.Linear(4, 2).double()
    with lib.no_grad():
        model.weight.copy_(lib.tensor(W0))
        model.bias.copy_(lib.tensor(b0))
    opt = getattr(lib.optim, name)(model.parameters(), **kw)
    losses = []
    for k in range(steps):
        loss = ((model(lib.tensor(X[k % 3::3])) - lib.tensor(y[k % 3::3])) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), model.weight.detach().numpy().copy()


@pytest.mark.parametrize("name,kw", [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.01}),
    ("Adadelta", {"maximize": True, "lr": 0.1}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2)}),
    ("Rprop", {"maximize": True}),
], ids=["adadelta", "adadelta-kw", "adadelta-max", "rprop", "rprop-kw", "rprop-max"])
def test_optimizer_matches_torch(name, kw):
    X, y = RNG.standard_normal((24, 4)), RNG.standard_normal((24, 2))
    W0, b0 = RNG.standard_normal((2, 4)) * 0.3, RNG.standard_normal(2) * 0.1
    ls, ws = _run(skiff, name, kw, X, y, W0, b0)
    lt, wt = _run(torch, name, kw, X, y, W0, b0)
    np.testing.assert_allclose(ls, lt, rtol=1e-12)
    np.testing.assert_allclose(ws, wt, rtol=1e-12, atol=1e-14)


def test_optimizer_state_and_errors():
    p = skiff.nn.Parameter(np.ones(3))
    opt = skiff.optim.Rprop([p])
    p.grad = skiff.tensor(np.array([1.0, -1.0, 0.0]))
    opt.step()
    tp = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    topt = torch.optim.Rprop([tp])
    tp.grad = torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64)
    topt.step()
    st, tst = opt.state[p], topt.state[tp]
    np.testing.assert_array_equal(np.asarray(st["step_size"]), tst["step_size"].numpy())
    np.testing.assert_array_equal(np.asarray(p.detach()), tp.detach().numpy())
    with pytest.raises(ValueError, match="etas"):
        skiff.optim.Rprop([p], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="rho"):
        skiff.optim.Adadelta([p], rho=-0.1)


# ---- samplers and ConcatDataset ---------------------------------------------------------------
def _freq(sampler, n):
    return np.bincount(np.asarray(list(sampler)), minlength=n) / len(sampler)


def test_weighted_random_sampler_frequencies():
    w = np.array([0.1, 0.0, 3.0, 1.0, 0.5])
    skiff.manual_seed(0)
    torch.manual_seed(0)
    fs = _freq(sud.WeightedRandomSampler(skiff.tensor(w), 40000), 5)
    ft = _freq(tud.WeightedRandomSampler(torch.tensor(w), 40000), 5)
    np.testing.assert_allclose(fs, ft, atol=0.012)  # two samples of the same law
    assert fs[1] == 0 == ft[1]
    draw = list(sud.WeightedRandomSampler(w, 4, replacement=False))
    assert len(set(draw)) == 4 and 1 not in draw
    with pytest.raises(ValueError, match="without replacement"):
        sud.WeightedRandomSampler(w, 5, replacement=False)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        sud.WeightedRandomSampler(w, 0)


def test_random_samplers_and_batch_sampler():
    ds = list(range(10))
    for lib in (sud, tud):
        perm = list(lib.RandomSampler(ds))
        assert sorted(perm) == ds
        with_rep = list(lib.RandomSampler(ds, replacement=True, num_samples=30))
        assert len(with_rep) == 30 and set(with_rep) <= set(ds)
        assert sorted(lib.SubsetRandomSampler([3, 5, 7])) == [3, 5, 7]
        assert list(lib.SequentialSampler(ds)) == ds
    for drop in (False, True):
        got = list(sud.BatchSampler(sud.SequentialSampler(ds), 4, drop))
        want = list(tud.BatchSampler(tud.SequentialSampler(ds), 4, drop))
        assert got == want
        assert len(sud.BatchSampler(ds, 4, drop)) == len(tud.BatchSampler(ds, 4, drop))


def test_concat_dataset_through_loader():
    parts = [(RNG.standard_normal((n, 3)), RNG.integers(0, 2, n)) for n in (5, 0, 7)]
    sds = sud.ConcatDataset([sud.TensorDataset(skiff.tensor(x), skiff.tensor(y))
                             for x, y in parts])
    tds = tud.ConcatDataset([tud.TensorDataset(torch.tensor(x), torch.tensor(y))
                             for x, y in parts])
    assert len(sds) == len(tds) == 12 and sds.cumulative_sizes == tds.cumulative_sizes
    for i in (0, 4, 5, 11, -1, -12):
        for a, b in zip(sds[i], tds[i]):
            np.testing.assert_array_equal(np.asarray(a), b.numpy())
    with pytest.raises(IndexError):
        sds[12]
    order = [11, 0, 5, 3, 7, 2]
    sb = list(sud.DataLoader(sds, batch_size=4, sampler=order))
    tb = list(tud.DataLoader(tds, batch_size=4, sampler=order))
    assert len(sb) == len(tb) == 2
    for (xs, ys), (xt, yt) in zip(sb, tb):
        np.testing.assert_array_equal(np.asarray(xs), xt.numpy())
        np.testing.assert_array_equal(np.asarray(ys), yt.numpy())
    both = sds.datasets[0] + sds.datasets[2]
    assert len(both) == 12 and isinstance(both, sud.ConcatDataset)
    wl = sud.DataLoader(sds, batch_size=3, sampler=sud.WeightedRandomSampler(np.ones(12), 9))
    assert [len(b[0]) for b in wl] == [3, 3, 3]
