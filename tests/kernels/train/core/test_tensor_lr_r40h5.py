"""Round 40 (h5): a tensor ``lr`` (``lr=torch.tensor(0.01)``, kept so ``torch.compile`` does
not recompile on lr changes) stays the user's tensor in ``param_groups`` as torch's: an
in-place change of it between steps is what the next step uses, schedulers write their lr
into it in place, ``initial_lr`` is a tensor copy (OneCycleLR's a number), ``get_last_lr``
gives tensor copies; Adam's ``foreach=True`` refusal. Against torch 2.13 on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import skiff  # noqa: E402

_OPTS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax", "ASGD",
         "Rprop", "Adadelta"]


def _np(x):
    return np.asarray(x.detach().numpy() if hasattr(x, "numpy") and not hasattr(x, "_data")
                      else x._data)


def _train(T, opt, sched=None, kw=None, dtype="float64", mutate=False, steps=4):
    w = np.linspace(-1.0, 1.0, 6)
    p = T.nn.Parameter(T.tensor(w))
    lr = T.tensor(0.05, dtype=getattr(T, dtype))
    o = getattr(T.optim, opt)([p], lr=lr)
    s = getattr(T.optim.lr_scheduler, sched)(o, **(kw or {})) if sched else None
    lrs, same, lasts = [], [], []
    for i in range(steps):
        o.zero_grad()
        ((p - 0.3) ** 2 * T.tensor(w + 2)).sum().backward()
        o.step()
        if s is not None:
            s.step(1.0) if sched == "ReduceLROnPlateau" else s.step()
            last = s.get_last_lr()[0]
            lasts.append((last.item(), last is lr))
        if mutate and i == 1:  # torch's compile-friendly lr change: in place
            with T.no_grad():
                lr.fill_(0.01)
        g = o.param_groups[0]
        lrs.append(float(g["lr"]))
        same.append(g["lr"] is lr)
    init = o.param_groups[0].get("initial_lr")
    return dict(p=_np(p), lrs=lrs, same=same, lasts=lasts, init=type(init).__name__,
                init_value=None if init is None else float(init))


@pytest.mark.parametrize("opt", _OPTS)
def test_param_groups_keep_the_tensor_and_see_its_in_place_change(opt):
    ours, theirs = _train(skiff, opt, mutate=True), _train(torch, opt, mutate=True)
    assert ours["same"] == theirs["same"] == [True] * 4
    np.testing.assert_allclose(ours["lrs"], theirs["lrs"], rtol=1e-15)
    np.testing.assert_allclose(ours["p"], theirs["p"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sched,kw", [
    ("StepLR", dict(step_size=2)), ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5)), ("LinearLR", {}), ("ConstantLR", {}),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.9 ** e)), ("PolynomialLR", {}),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3)), ("ReduceLROnPlateau", dict(patience=0))])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_schedulers_write_into_the_tensor_lr(sched, kw, dtype):
    ours, theirs = _train(skiff, "SGD", sched, kw, dtype), _train(torch, "SGD", sched, kw, dtype)
    assert ours["same"] == theirs["same"] == [True] * 4
    assert ours["init"] == theirs["init"]  # a tensor copy; OneCycleLR's a number
    assert [s for _, s in ours["lasts"]] == [s for _, s in theirs["lasts"]]
    # float32: torch's schedules multiply in float32, skiff's in float64 then round
    rtol = 1e-13 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(ours["lrs"], theirs["lrs"], rtol=rtol)
    np.testing.assert_allclose([v for v, _ in ours["lasts"]], [v for v, _ in theirs["lasts"]],
                               rtol=rtol)
    np.testing.assert_allclose(ours["p"], theirs["p"], rtol=rtol, atol=1e-14)


def test_state_dict_sequential_lr_and_the_foreach_refusal():
    for T in (skiff, torch):
        p = T.nn.Parameter(T.ones(3))
        lr = T.tensor(0.1)
        o = T.optim.SGD([p], lr=lr)
        warm = T.optim.lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=2)
        cos = T.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4)
        s = T.optim.lr_scheduler.SequentialLR(o, [warm, cos], milestones=[2])
        vals = []
        for _ in range(4):
            p.grad = T.ones(3)
            o.step()
            s.step()
            vals.append(lr.item())
        assert o.param_groups[0]["lr"] is lr
        saved = o.state_dict()["param_groups"][0]["lr"]
        assert isinstance(saved, T.Tensor) and saved.item() == lr.item()
        if T is skiff:
            ours = vals
        with pytest.raises(ValueError, match="1-element"):
            T.optim.Adam([p], lr=T.tensor([0.1, 0.2]))
        with pytest.raises(ValueError, match="capturable=False and foreach=True"):
            T.optim.Adam([p], lr=T.tensor(0.1), foreach=True)
        T.optim.SGD([p], lr=T.tensor(0.1), foreach=True)  # SGD takes it
    np.testing.assert_allclose(ours, vals, rtol=1e-6)


def test_a_checkpoint_round_trip_keeps_a_tensor_lr_as_torchs():
    import io

    got = []
    for T in (skiff, torch):
        p = T.nn.Parameter(T.ones(3))
        o = T.optim.Adam([p], lr=T.tensor(0.1))
        s = T.optim.lr_scheduler.StepLR(o, 1, 0.5)
        p.grad = T.ones(3)
        o.step()
        s.step()
        buf = io.BytesIO()
        T.save({"o": o.state_dict(), "s": s.state_dict()}, buf)
        buf.seek(0)
        ck = T.load(buf, weights_only=False) if T is torch else T.load(buf)
        p2, lr2 = T.nn.Parameter(T.ones(3)), T.tensor(0.1)
        o2 = T.optim.Adam([p2], lr=lr2)
        s2 = T.optim.lr_scheduler.StepLR(o2, 1, 0.5)
        o2.load_state_dict(ck["o"])
        s2.load_state_dict(ck["s"])
        g = o2.param_groups[0]
        row = [isinstance(g["lr"], T.Tensor), g["lr"] is lr2, isinstance(g["initial_lr"], T.Tensor),
               g["lr"].item(), g["initial_lr"].item(), s2.get_last_lr()[0].item()]
        p2.grad = T.ones(3)
        o2.step()
        s2.step()
        got.append(row + [o2.param_groups[0]["lr"].item(), p2.detach().numpy().copy()])
    ours, theirs = got
    assert ours[:3] == theirs[:3] == [True, False, True]
    np.testing.assert_allclose(ours[3:7], theirs[3:7], rtol=1e-7)
    np.testing.assert_allclose(ours[7], theirs[7], rtol=1e-6)
