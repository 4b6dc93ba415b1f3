"""Round 27: ``optim.swa_utils`` (AveragedModel: SWA and EMA, SWALR, update_bn), BatchNorm's
``affine``/``track_running_stats``/``momentum=None``, and ``IterableDataset``/``ChainDataset``
through a DataLoader, each against torch 2.13 in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import skiff
import skiff.utils.data as sud

RNG = np.random.default_rng(8)
X = RNG.standard_normal((40, 3))
Y = RNG.standard_normal((40, 1))


def _np(t):
    if isinstance(t, np.ndarray):  # skiff's state_dict holds host numpy copies
        return t
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _net(lib):
    torch.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(3, 6), lib.nn.BatchNorm1d(6), lib.nn.ReLU(),
                            lib.nn.Linear(6, 1))
    return net.double()


@pytest.mark.parametrize("mode", ["swa", "ema", "ema_multi"])
def test_swa_training_matches_torch(mode):
    res = []
    tnet = _net(torch)
    state = {k: v.clone() for k, v in tnet.state_dict().items()}
    for lib in (torch, skiff):
        net = tnet if lib is torch else _net(skiff)
        if lib is skiff:
            net.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in state.items()})
        su = lib.optim.swa_utils
        kw = {"swa": {}, "ema": {"avg_fn": su.get_ema_avg_fn(0.9)},
              "ema_multi": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)}}[mode]
        avg = su.AveragedModel(net, **kw)
        opt = lib.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        sched = su.SWALR(opt, swa_lr=0.02, anneal_epochs=4, anneal_strategy="cos")
        lrs = []
        for k in range(10):
            xb, yb = lib.tensor(X[4 * k:4 * k + 4]), lib.tensor(Y[4 * k:4 * k + 4])
            loss = ((net(xb) - yb) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if k >= 3:
                avg.update_parameters(net)
                sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        loader = [(lib.tensor(X[i:i + 10]), lib.tensor(Y[i:i + 10])) for i in range(0, 40, 10)]
        su.update_bn(loader, avg)
        avg.eval()
        res.append((lrs, _np(avg(lib.tensor(X))), int(avg.n_averaged),
                    {k: _np(v) for k, v in avg.state_dict().items()}))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-14)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-11)
    assert res[1][2] == res[0][2] == 7
    assert sorted(res[1][3]) == sorted(res[0][3])
    for k in res[0][3]:
        np.testing.assert_allclose(res[1][3][k], res[0][3][k], rtol=1e-11, err_msg=k)


@pytest.mark.parametrize("kw", [{"affine": False}, {"track_running_stats": False},
                                {"momentum": None}], ids=["affine", "no-stats", "cumulative"])
def test_batchnorm_options(kw):
    x = RNG.standard_normal((8, 3, 4, 4))
    res = []
    for lib in (torch, skiff):
        bn = lib.nn.BatchNorm2d(3, **kw).double()
        xt = lib.tensor(x, requires_grad=True)
        outs = [bn(xt * (k + 1)) for k in range(3)]
        sum((o * o).sum() for o in outs).backward()
        bn.eval()
        res.append([_np(o) for o in outs] + [_np(bn(lib.tensor(x))), _np(xt.grad)]
                   + [_np(v) for _, v in sorted(bn.state_dict().items())])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


class _Stream:
    def __init__(self, n, start):
        self.n, self.start = n, start

    def __iter__(self):
        for i in range(self.start, self.start + self.n):
            yield np.float64(i), np.array([i, -i])


def test_iterable_dataset_loader():
    got = []
    for mod in (sud, tud):
        cls = type("S", (_Stream, mod.IterableDataset), {})
        ds = cls(5, 0) + cls(4, 10)  # a ChainDataset
        assert isinstance(ds, mod.ChainDataset)
        batches = list(mod.DataLoader(ds, batch_size=3))
        got.append([[_np(t) if hasattr(t, "detach") else t for t in b] for b in batches])
        assert len(list(mod.DataLoader(ds, batch_size=3, drop_last=True))) == 3
        with pytest.raises(ValueError):
            mod.DataLoader(ds, batch_size=3, shuffle=True)
    assert len(got[0]) == len(got[1]) == 3
    for a, b in zip(*got):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
