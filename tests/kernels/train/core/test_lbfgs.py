"""LBFGS against torch 2.13's torch.optim.LBFGS in float64, with and without the strong Wolfe
line search: the Rosenbrock function, a least-squares MLP regression, a few steps of a 1-D
Poisson PINN (second derivatives through ``autograd.grad(create_graph=True)`` in the closure),
the history limit, resuming from a state dict, and the errors for bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core import nn
from skiff.kernels.train.core.optim_lbfgs import LBFGS

RTOL = 1e-10
SEARCHES = [None, "strong_wolfe"]


def optimizer(lib, params, **kw):
    return (torch.optim.LBFGS if lib is torch else LBFGS)(params, **kw)


def run(lib, params, loss_fn, steps, **kw):
    """``steps`` calls of ``step(closure)``: the losses step returns, the closure's losses
    (every evaluation) and the final parameters."""
    opt = optimizer(lib, params, **kw)
    seen = []

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        seen.append(float(loss.detach()))
        return loss

    returned = [float(opt.step(closure).detach()) for _ in range(steps)]
    return returned, seen, [np.array(p.detach().numpy(), copy=True) for p in params], opt


def assert_same(got, want, rtol=RTOL):
    """Same number of closure calls; every loss within ``rtol`` of the problem's scale (the
    first loss: a line search's trial steps come from a cubic fit whose differences cancel, so
    a rounding apart in the gradients moves a trial point by ~1e-10 of its size); every
    parameter within ``rtol`` of its tensor's largest entry."""
    (r1, s1, p1, _), (r2, s2, p2, _) = got, want
    assert len(s1) == len(s2), f"closure calls: {len(s1)} vs torch's {len(s2)}"
    scale = abs(s2[0])
    np.testing.assert_allclose(r1, r2, rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(s1, s2, rtol=rtol, atol=rtol * scale)
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * float(np.abs(b).max()))


# ---- Rosenbrock: the classic curved valley, minimum at (1, 1) ----------------------------------
def rosenbrock(lib, start, steps, **kw):
    xy = lib.tensor(np.array(start), dtype=lib.float64, requires_grad=True)

    def loss():
        return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2

    return run(lib, [xy], loss, steps, **kw)


@pytest.mark.parametrize("search", SEARCHES)
def test_rosenbrock_as_torch(search):
    kw = dict(lr=1.0 if search else 0.05, max_iter=20, line_search_fn=search)
    got = rosenbrock(skiff, [-1.2, 1.0], 3, **kw)
    want = rosenbrock(torch, [-1.2, 1.0], 3, **kw)
    assert_same(got, want)
    assert want[1][-1] < want[1][0]


def test_rosenbrock_strong_wolfe_converges_as_torch():
    kw = dict(lr=1.0, max_iter=100, line_search_fn="strong_wolfe")
    got = rosenbrock(skiff, [-1.2, 1.0], 2, **kw)
    want = rosenbrock(torch, [-1.2, 1.0], 2, **kw)
    assert_same(got, want)
    assert want[1][-1] < 1e-9  # torch stops in the valley's end: loss 4e-10 at (1 - 2e-5, ...)
    np.testing.assert_allclose(got[2][0], [1.0, 1.0], atol=1e-4)
    assert got[3].state_dict()["state"][0]["n_iter"] == \
        want[3].state_dict()["state"][0]["n_iter"]


# ---- a small MLP regression (least squares) ---------------------------------------------------
def mlp(lib):
    m = lib.nn if lib is torch else nn
    return m.Sequential(m.Linear(3, 8), m.Tanh(), m.Linear(8, 2))


def twin(theirs, ours):
    ours = ours.double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours


def regression(lib, net, steps, dtype="float64", **kw):
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.standard_normal((32, 3)), dtype=getattr(lib, dtype))
    y = lib.tensor(np.stack([np.sin(rng.standard_normal(32)), rng.standard_normal(32)], 1),
                   dtype=getattr(lib, dtype))
    y = x[:, :2] * 0.5 + y * 0.1
    return run(lib, list(net.parameters()), lambda: ((net(x) - y) ** 2).mean(), steps, **kw)


@pytest.mark.parametrize("search", SEARCHES)
def test_mlp_regression_as_torch(search):
    torch.manual_seed(0)
    theirs = mlp(torch).double()
    ours = twin(theirs, mlp(skiff))
    kw = dict(lr=1.0 if search else 0.5, max_iter=10, history_size=5, line_search_fn=search)
    got, want = regression(skiff, ours, 3, **kw), regression(torch, theirs, 3, **kw)
    # strong Wolfe: the cubic fit's cancellation carries a gradient's rounding (one BLAS
    # kernel's sums against another's) into the trial steps, 1.3e-11 of their size at worst
    # over 7 OpenBLAS/numpy/ATen paths (round 48 h9: at RTOL that was a margin of 8x, not
    # 10x); 1e-9 keeps 77x over it and stays far under what a wrong step changes
    assert_same(got, want, rtol=1e-9 if search else RTOL)
    assert want[1][-1] < want[1][0] / 2


# ---- a 1-D Poisson PINN: u'' + pi^2 sin(pi x) = 0, u(0) = u(1) = 0 ----------------------------
def tanh_mlp(lib, width=10):
    m = lib.nn if lib is torch else nn
    return m.Sequential(m.Linear(1, width), m.Tanh(), m.Linear(width, width), m.Tanh(),
                        m.Linear(width, 1))


def pinn(lib, net, steps, **kw):
    x = lib.tensor(np.linspace(0.0, 1.0, 17)[:, None], dtype=lib.float64, requires_grad=True)
    f = math.pi ** 2 * lib.sin(x.detach() * math.pi)
    ends = lib.tensor([[0.0], [1.0]], dtype=lib.float64)

    def loss():
        u = net(x)
        (ux,) = lib.autograd.grad(u, x, grad_outputs=lib.ones_like(u), create_graph=True)
        (uxx,) = lib.autograd.grad(ux, x, grad_outputs=lib.ones_like(ux), create_graph=True)
        return ((uxx + f) ** 2).mean() + (net(ends) ** 2).mean()

    return run(lib, list(net.parameters()), loss, steps, **kw)


@pytest.mark.parametrize("search", SEARCHES)
def test_pinn_as_torch(search):
    torch.manual_seed(1)
    theirs = tanh_mlp(torch).double()
    ours = twin(theirs, tanh_mlp(skiff))
    kw = dict(lr=1.0 if search else 0.05, max_iter=8, line_search_fn=search)
    got, want = pinn(skiff, ours, 2, **kw), pinn(torch, theirs, 2, **kw)
    assert_same(got, want)
    assert want[1][-1] < want[1][0]


# ---- history limit, evaluation budget, state dict --------------------------------------------
@pytest.mark.parametrize("search", SEARCHES)
def test_short_history_and_eval_budget_as_torch(search):
    kw = dict(lr=1.0 if search else 0.02, max_iter=15, max_eval=9, history_size=2,
              line_search_fn=search)
    assert_same(rosenbrock(skiff, [0.3, -0.4], 3, **kw), rosenbrock(torch, [0.3, -0.4], 3, **kw))


@pytest.mark.parametrize("search", SEARCHES)
def test_resume_from_state_dict_matches_one_run(search):
    kw = dict(lr=1.0 if search else 0.05, max_iter=4, line_search_fn=search)
    want = rosenbrock(torch, [-1.2, 1.0], 4, **kw)
    r1, s1, p1, opt = rosenbrock(skiff, [-1.2, 1.0], 2, **kw)
    saved = opt.state_dict()
    xy = skiff.tensor(p1[0], dtype=skiff.float64, requires_grad=True)
    opt2 = LBFGS([xy], **kw)
    opt2.load_state_dict(saved)
    seen = []

    def closure():
        opt2.zero_grad()
        loss = (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2
        loss.backward()
        seen.append(float(loss.detach()))
        return loss

    r2 = [float(opt2.step(closure).detach()) for _ in range(2)]
    np.testing.assert_allclose(r1 + r2, want[0], rtol=RTOL)
    np.testing.assert_allclose(s1 + seen, want[1], rtol=RTOL)
    np.testing.assert_allclose(xy.detach().numpy(), want[2][0], rtol=RTOL)


def test_stationary_start_returns_at_once_as_torch():
    kw = dict(line_search_fn="strong_wolfe")
    got, want = rosenbrock(skiff, [1.0, 1.0], 1, **kw), rosenbrock(torch, [1.0, 1.0], 1, **kw)
    assert_same(got, want)
    assert len(got[1]) == 1


def test_bad_input_names_the_fix():
    w = skiff.tensor(np.zeros(2), dtype=skiff.float64, requires_grad=True)
    with pytest.raises(ValueError, match="strong_wolfe"):
        LBFGS([w], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="closure"):
        LBFGS([w]).step()
    v = skiff.tensor(np.zeros(2), dtype=skiff.float64, requires_grad=True)
    with pytest.raises(ValueError, match="one parameter group"):
        LBFGS([{"params": [w]}, {"params": [v], "lr": 0.1}])


@pytest.mark.parametrize("search", SEARCHES)
def test_unused_and_frozen_parameters_as_torch(search):
    """A parameter outside the loss (no gradient) counts as a zero gradient, as torch's."""
    torch.manual_seed(2)
    theirs = mlp(torch).double()
    ours = twin(theirs, mlp(skiff))
    spare = {lib: lib.tensor(np.ones(3), dtype=lib.float64, requires_grad=True)
             for lib in (torch, skiff)}
    kw = dict(lr=1.0 if search else 0.5, max_iter=6, line_search_fn=search)

    def go(lib, net):
        x = lib.tensor(np.linspace(-1, 1, 24).reshape(8, 3), dtype=lib.float64)
        params = [*net.parameters(), spare[lib]]
        return run(lib, params, lambda: (net(x) ** 2).mean(), 2, **kw)

    got, want = go(skiff, ours), go(torch, theirs)
    assert_same(got, want)
    np.testing.assert_array_equal(got[2][-1], np.ones(3))


def test_float32_follows_torch():
    torch.manual_seed(0)
    theirs = mlp(torch)
    ours = mlp(skiff)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    kw = dict(lr=0.5, max_iter=5)
    got = regression(skiff, ours, 1, dtype="float32", **kw)
    want = regression(torch, theirs, 1, dtype="float32", **kw)
    assert all(p.dtype == np.float32 for p in got[2])
    assert_same(got, want, rtol=1e-4)


@pytest.mark.parametrize("search", SEARCHES)
def test_resume_from_torch_state_dict(search):
    """torch's LBFGS state dict (tensors, lists of tensors, torch's keys) loads into skiff's:
    two torch steps then two skiff steps land where four torch steps do."""
    kw = dict(lr=1.0 if search else 0.05, max_iter=4, line_search_fn=search)
    want = rosenbrock(torch, [-1.2, 1.0], 4, **kw)
    _, _, half, opt = rosenbrock(torch, [-1.2, 1.0], 2, **kw)
    xy = skiff.tensor(half[0], dtype=skiff.float64, requires_grad=True)
    ours = LBFGS([xy], **kw)
    ours.load_state_dict(opt.state_dict())
    assert set(ours.state_dict()["state"][0]) == set(opt.state_dict()["state"][0])

    def closure():
        ours.zero_grad()
        loss = (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(2):
        ours.step(closure)
    np.testing.assert_allclose(xy.detach().numpy(), want[2][0], rtol=RTOL)


def test_lbfgs_is_skiff_optims():
    """A porter writes ``skiff.optim.LBFGS`` (``torch.optim.LBFGS`` renamed)."""
    import skiff

    assert skiff.optim.LBFGS is LBFGS and "LBFGS" in skiff.optim.__all__
