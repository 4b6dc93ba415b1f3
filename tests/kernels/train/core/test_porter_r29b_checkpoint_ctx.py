"""checkpoint(context_fn=...) and selective-checkpoint contexts as torch ports pass them;
oracle: torch 2.13's gradients and its order of entering the two contexts."""

import contextlib
import functools

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import skiff
import skiff.utils.checkpoint as scp


def _block(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.GELU(), lib.nn.Linear(8, 4)).double()


def _run(lib, cp, x, init):
    m = _block(lib)
    m.load_state_dict(init)
    log = []

    @contextlib.contextmanager
    def tag(name):
        log.append(f"enter {name}")
        try:
            yield
        finally:  # torch's recomputation may stop early, by an exception through here
            log.append(f"exit {name}")

    X = lib.tensor(x, requires_grad=True)
    y = cp.checkpoint(m, X, use_reentrant=False,
                      context_fn=lambda: (tag("forward"), tag("recompute")))
    z = cp.checkpoint(m, y.tanh(), use_reentrant=False, context_fn=functools.partial(
        cp.create_selective_checkpoint_contexts,
        lambda ctx, op, *a, **k: cp.CheckpointPolicy.PREFER_RECOMPUTE))
    log.append("backward")
    (z ** 2).sum().backward()
    g = [np.asarray(p.grad.numpy()) for p in m.parameters()] + [np.asarray(X.grad.numpy())]
    return log, g, float(z.sum())


def test_context_fn_order_and_gradients_match_torch():
    x = np.random.default_rng(0).standard_normal((3, 4))
    torch.manual_seed(2)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 4))
    init = {k: v.detach().double() for k, v in tm.state_dict().items()}
    tl, tg, tz = _run(torch, tcp, x, init)
    sl, sg, sz = _run(skiff, scp, x, {k: v.numpy() for k, v in init.items()})
    assert sl == tl
    assert abs(sz - tz) < 1e-12 * abs(tz)
    for a, b in zip(sg, tg):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_context_fn_refused_with_reentrant_and_bad_returns():
    m = skiff.nn.Linear(2, 2)
    x = skiff.ones(1, 2, requires_grad=True)
    with pytest.raises(ValueError, match="use_reentrant=False"):
        scp.checkpoint(m, x, use_reentrant=True, context_fn=lambda: (
            contextlib.nullcontext(), contextlib.nullcontext()))
    with pytest.raises(TypeError, match="two context managers"):
        scp.checkpoint(m, x, use_reentrant=False, context_fn=lambda: contextlib.nullcontext())
