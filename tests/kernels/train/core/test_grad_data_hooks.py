"""torch's ``.grad`` / ``.data`` (tensors sharing memory, recording nothing), in-place
``+=``/``-=``, RMSprop/Adagrad, OneCycleLR/CyclicLR, tensor and module hooks: each against
torch 2.x in float64 (the same steps, the same numbers to ~1e-12)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core import nn
from skiff.kernels.train.core.tensor import Tensor
from skiff.optim import SGD, Adagrad, AdamW, RMSprop
from skiff.optim.lr_scheduler import CyclicLR, OneCycleLR

rng = np.random.default_rng(0)
X = rng.standard_normal((8, 5))
Y = rng.standard_normal((8, 3))
W0 = rng.standard_normal((3, 5)) * 0.5
B0 = rng.standard_normal(3) * 0.1


def pair(seed_bias=True):
    """A float64 skiff Linear and a torch one with the same weights."""
    ours = nn.Linear(5, 3, bias=seed_bias).double()
    theirs = torch.nn.Linear(5, 3, bias=seed_bias).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(W0))
        if seed_bias:
            theirs.bias.copy_(torch.tensor(B0))
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def loss_of(model, lib):
    x, y = (skiff.tensor(X), skiff.tensor(Y)) if lib is skiff else (torch.tensor(X),
                                                                    torch.tensor(Y))
    return ((model(x).tanh() - y) ** 2).mean()


def assert_same(ours, theirs, tol=1e-12):
    for (n, p), (m, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert n == m
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=tol, atol=tol)


# ---- .grad and .data ---------------------------------------------------------------------
def test_grad_and_data_are_tensors_sharing_memory():
    ours, _ = pair()
    p = ours.weight
    assert p.grad is None
    loss_of(ours, skiff).backward()
    g = p.grad
    assert isinstance(g, Tensor) and isinstance(p.data, Tensor)
    assert g is p.grad and not g.requires_grad and not p.data.requires_grad
    assert g.is_leaf and p.data.is_leaf
    snapshot = p.grad.clone()
    p.grad.mul_(2.0)  # in place on the gradient itself
    np.testing.assert_allclose(p.grad.numpy(), 2 * snapshot.numpy())
    p.data.fill_(0.5)
    assert (p.numpy() == 0.5).all()
    p.data.copy_(skiff.tensor(W0))
    np.testing.assert_array_equal(p.numpy(), W0)
    p.grad.zero_()
    assert (p.grad.numpy() == 0).all() and (snapshot.numpy() != 0).any()  # clone owns its copy
    p.grad = None
    assert p.grad is None
    with pytest.raises(RuntimeError, match="shape"):
        p.grad = skiff.zeros(2, 2, dtype="float64")


@pytest.mark.parametrize("style", ["no_grad_isub", "data_isub", "data_add_alpha", "grad_none"])
def test_manual_sgd_loops_equal_torch(style):
    ours, theirs = pair()
    lr = 0.3
    for _ in range(6):
        for model, lib in ((ours, skiff), (theirs, torch)):
            loss_of(model, lib).backward()
            for p in model.parameters():
                if style == "no_grad_isub":
                    with lib.no_grad():
                        p -= lr * p.grad
                        p.grad.zero_()
                elif style == "data_isub":
                    p.data -= lr * p.grad
                    p.grad.data.zero_()
                elif style == "data_add_alpha":
                    p.data.add_(p.grad, alpha=-lr)
                    p.grad.zero_()
                else:
                    with lib.no_grad():
                        p.sub_(lr * p.grad)
                    p.grad = None
    assert_same(ours, theirs)


def test_in_place_on_a_parameter_outside_no_grad_is_refused_and_a_computed_tensor_is_tracked():
    ours, _ = pair()
    with pytest.raises(RuntimeError):
        ours.weight -= 1.0
    with pytest.raises(RuntimeError):
        torch.nn.Linear(2, 2).weight.sub_(1.0)  # torch refuses too
    # a computed tensor: += takes its new value's place in the graph (torch's in-place)
    a = skiff.tensor(X, requires_grad=True)
    ta = torch.tensor(X, requires_grad=True)
    for x in (a, ta):
        h = x * 2.0
        h += x ** 2
        h *= 3.0
        h.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    i = skiff.tensor(np.arange(3))
    with pytest.raises(RuntimeError):
        i += 0.5  # an integer tensor keeps its dtype (torch: cannot cast Float to Long)


def test_grad_norm_clip_and_accumulation_equal_torch():
    ours, theirs = pair()
    for model, lib in ((ours, skiff), (theirs, torch)):
        for _ in range(3):  # accumulates into .grad
            loss_of(model, lib).backward()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(float(p.grad.norm()), float(q.grad.norm()), rtol=1e-12)
    n1 = skiff.nn.utils.clip_grad_norm_(ours.parameters(), 0.05)
    n2 = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.05)
    np.testing.assert_allclose(float(n1), float(n2), rtol=1e-12)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10)


# ---- optimizers and schedules --------------------------------------------------------------
OPTIMS = [
    (RMSprop, torch.optim.RMSprop, {}),
    (RMSprop, torch.optim.RMSprop, {"lr": 0.02, "momentum": 0.9}),
    (RMSprop, torch.optim.RMSprop, {"lr": 0.01, "centered": True, "weight_decay": 0.1}),
    (RMSprop, torch.optim.RMSprop, {"lr": 0.01, "momentum": 0.5, "centered": True,
                                    "alpha": 0.9, "eps": 1e-6, "maximize": True}),
    (Adagrad, torch.optim.Adagrad, {}),
    (Adagrad, torch.optim.Adagrad, {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1,
                                    "initial_accumulator_value": 0.2, "eps": 1e-8}),
]


@pytest.mark.parametrize("ours_cls,theirs_cls,kw", OPTIMS)
def test_rmsprop_and_adagrad_equal_torch_step_by_step(ours_cls, theirs_cls, kw):
    ours, theirs = pair()
    o, t = ours_cls(ours.parameters(), **kw), theirs_cls(theirs.parameters(), **kw)
    for _ in range(25):
        for model, lib, opt in ((ours, skiff, o), (theirs, torch, t)):
            opt.zero_grad()
            loss_of(model, lib).backward()
            opt.step()
        assert_same(ours, theirs)
    # a state dict resumes the run exactly
    again = pair()[0]
    again.load_state_dict(ours.state_dict())
    o2 = ours_cls(again.parameters(), **kw)
    o2.load_state_dict(o.state_dict())
    for model, opt in ((ours, o), (again, o2)):
        opt.zero_grad()
        loss_of(model, skiff).backward()
        opt.step()
    assert_same(ours, type("M", (), {"named_parameters": again.named_parameters})(), 0)


def test_rmsprop_step_takes_a_closure():
    ours, theirs = pair()
    o, t = RMSprop(ours.parameters(), lr=0.01), torch.optim.RMSprop(theirs.parameters(), lr=0.01)

    def closure(model, lib, opt):
        def run():
            opt.zero_grad()
            loss = loss_of(model, lib)
            loss.backward()
            return loss
        return run

    l1 = o.step(closure(ours, skiff, o))
    l2 = t.step(closure(theirs, torch, t))
    np.testing.assert_allclose(l1.item(), l2.item(), rtol=1e-12)
    assert_same(ours, theirs)


SCHEDULES = [
    lambda o: OneCycleLR(o, max_lr=0.1, total_steps=30),
    lambda o: OneCycleLR(o, max_lr=[0.2], epochs=3, steps_per_epoch=10, pct_start=0.25,
                         anneal_strategy="linear", three_phase=True, div_factor=10.0),
    lambda o: CyclicLR(o, 0.01, 0.1, step_size_up=4),
    lambda o: CyclicLR(o, 0.01, 0.1, step_size_up=4, step_size_down=3, mode="triangular2"),
    lambda o: CyclicLR(o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.9),
]


@pytest.mark.parametrize("make", SCHEDULES)
@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_one_cycle_and_cyclic_lr_equal_torch(make, opt):
    ours, theirs = pair()
    if opt == "sgd":
        o, t = SGD(ours.parameters(), lr=0.1, momentum=0.9), torch.optim.SGD(
            theirs.parameters(), lr=0.1, momentum=0.9)
    else:
        o, t = AdamW(ours.parameters(), lr=0.1), torch.optim.AdamW(theirs.parameters(), lr=0.1)
    s, ts = make(o), make(t)
    key = "momentum" if opt == "sgd" else "betas"
    for _ in range(29):
        for model, lib, opt_, sched in ((ours, skiff, o, s), (theirs, torch, t, ts)):
            opt_.zero_grad()
            loss_of(model, lib).backward()
            opt_.step()
            sched.step()
        assert s.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-13, abs=1e-15)
        assert np.ravel(o.param_groups[0][key])[0] == pytest.approx(
            np.ravel(t.param_groups[0][key])[0], rel=1e-13)
    assert_same(ours, theirs, 1e-11)


def test_one_cycle_refuses_a_step_past_the_end():
    o = SGD(pair()[0].parameters(), lr=0.1)
    s = OneCycleLR(o, max_lr=0.1, total_steps=3)
    for _ in range(3):
        s.step()
    with pytest.raises(ValueError, match="total steps"):
        s.step()


# ---- hooks -----------------------------------------------------------------------------------
def test_tensor_hooks_change_gradients_as_torch_and_remove():
    got = []
    for lib in (skiff, torch):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(W0, requires_grad=True)
        h = x @ w.T
        h.retain_grad()
        seen = []
        handle = h.register_hook(lambda g: g * 2.0)
        w.register_hook(lambda g, seen=seen: seen.append(g.clone()))
        (h.tanh() ** 2).sum().backward()
        handle.remove()
        h2 = x @ w.T
        h2.register_hook(lambda g: None)
        (h2 * 3.0).sum().backward()  # no doubling: the hook was on the old h
        got.append((x.grad.numpy().copy(), w.grad.numpy().copy(), h.grad.numpy().copy(),
                    seen[0].numpy().copy(), len(seen)))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_module_forward_hooks_equal_torch():
    outs = []
    for lib, model in zip((skiff, torch), pair()):
        calls = []
        pre = model.register_forward_pre_hook(lambda m, args: (args[0] * 2.0,))
        post = model.register_forward_hook(lambda m, args, out, calls=calls: calls.append(
            tuple(out.shape)) or out + 1.0)
        y1 = model(lib.tensor(X))
        pre.remove()
        y2 = model(lib.tensor(X))
        post.remove()
        y3 = model(lib.tensor(X))
        outs.append([y.detach().numpy() for y in (y1, y2, y3)] + [calls])
    for a, b in zip(outs[0][:3], outs[1][:3]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert outs[0][3] == outs[1][3] == [(8, 3), (8, 3)]


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
@pytest.mark.parametrize("input_grad", [True, False])
def test_full_backward_hook_equals_torch(input_grad):
    rec = []
    for lib, model in zip((skiff, torch), pair()):
        seen = []

        def hook(m, gin, gout, seen=seen):
            seen.append(([None if g is None else g.numpy().copy() for g in gin],
                         [g.numpy().copy() for g in gout]))
            return None if gin[0] is None else (gin[0] * 0.5,)

        handle = model.register_full_backward_hook(hook)
        x = lib.tensor(X, requires_grad=input_grad)
        ((model(x).tanh() - lib.tensor(Y)) ** 2).mean().backward()
        handle.remove()
        rec.append((seen, None if x.grad is None else x.grad.numpy().copy(),
                    model.weight.grad.numpy().copy()))
    (s1, xg1, wg1), (s2, xg2, wg2) = rec
    assert len(s1) == len(s2) == 1
    for a, b in zip(s1[0][0] + s1[0][1], s2[0][0] + s2[0][1]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12)
    if input_grad:
        np.testing.assert_allclose(xg1, xg2, rtol=1e-12)  # halved by the hook in both
    else:
        assert xg1 is None and xg2 is None
    np.testing.assert_allclose(wg1, wg2, rtol=1e-12)
