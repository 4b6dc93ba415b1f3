"""Round 28: spectral normalisation (the old ``nn.utils.spectral_norm`` hook and
``nn.utils.parametrizations.spectral_norm``) and ``nn.utils.parametrize`` against torch 2.13 in
float64: state-dict names, outputs over several training forwards (the power iteration's
buffers), eval forwards, gradients of the input and of the originals, ``remove_*``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(28)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _close(a, b, tol=1e-10):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _layer(lib, kind):
    lib.manual_seed(0)
    if kind == "linear":
        return lib.nn.Linear(5, 4).double(), (3, 5)
    if kind == "conv":
        return lib.nn.Conv2d(2, 3, 3).double(), (2, 2, 5, 5)
    return lib.nn.ConvTranspose2d(3, 2, 2, stride=2).double(), (2, 3, 3, 3)


def _copy_state(tm, sm):
    with torch.no_grad():
        for p in tm.parameters():
            p.add_(torch.tensor(RNG.standard_normal(tuple(p.shape)) * 0.3))
    sd = tm.state_dict()
    assert sorted(sd) == sorted(sm.state_dict())
    sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in sd.items()})


def _steps(lib, m, xs):
    outs = []
    for i, x in enumerate(xs):
        m.train(i < len(xs) - 1)
        t = lib.tensor(x, requires_grad=True)
        y = m(t)
        (y * lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum().backward()
        outs += [y, t.grad]
    return outs


@pytest.mark.parametrize("form", ["old", "parametrized"])
@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
def test_spectral_norm_against_torch(form, kind):
    res = {}
    for lib in (torch, skiff):
        m, shape = _layer(lib, kind)
        fn = (lib.nn.utils.spectral_norm if form == "old"
              else lib.nn.utils.parametrizations.spectral_norm)
        res[lib] = (fn(m), shape)
    (tm, shape), (sm, _) = res[torch], res[skiff]
    _copy_state(tm, sm)
    xs = [RNG.standard_normal(shape) for _ in range(4)]
    got, want = _steps(skiff, sm, xs), _steps(torch, tm, xs)
    for a, b in zip(got, want):
        _close(a, b)
    for (k, a), (k2, b) in zip(sorted(sm.state_dict().items()), sorted(tm.state_dict().items())):
        assert k == k2
        _close(skiff.tensor(a) if not hasattr(a, "detach") else a, b)
    for (_k, a), (_, b) in zip(sorted(sm.named_parameters()), sorted(tm.named_parameters())):
        _close(a.grad, b.grad)
    _close(sm.weight, tm.weight)
    if form == "old":
        skiff.nn.utils.remove_spectral_norm(sm)
        torch.nn.utils.remove_spectral_norm(tm)
    else:
        skiff.nn.utils.parametrize.remove_parametrizations(sm, "weight")
        torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    assert sorted(sm.state_dict()) == sorted(tm.state_dict())
    _close(sm.weight, tm.weight)


def test_spectral_norm_bounds_sigma_like_torch():
    """After many training forwards the largest singular value of the weight is 1."""
    m = skiff.nn.utils.parametrizations.spectral_norm(skiff.nn.Linear(6, 8).double())
    x = skiff.tensor(RNG.standard_normal((2, 6)))
    for _ in range(30):
        m(x)
    s = np.linalg.svd(_np(m.weight), compute_uv=False)[0]
    assert abs(s - 1.0) < 1e-6
    with pytest.raises(RuntimeError, match="two spectral_norm"):
        skiff.nn.utils.spectral_norm(skiff.nn.utils.spectral_norm(skiff.nn.Linear(2, 2)))


def _params(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    class Scale(lib.nn.Module):
        def forward(self, X):
            return 2.0 * X

        def right_inverse(self, A):
            return A / 2.0

    return Symmetric, Scale


def test_register_parametrization_chain_assign_remove_against_torch():
    ms = {}
    for lib in (torch, skiff):
        lib.manual_seed(0)
        m = lib.nn.Linear(4, 4).double()
        Symmetric, Scale = _params(lib)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Symmetric())
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Scale())
        ms[lib] = m
    tm, sm = ms[torch], ms[skiff]
    assert sorted(sm.state_dict()) == sorted(tm.state_dict())
    assert skiff.nn.utils.parametrize.is_parametrized(sm, "weight")
    A = RNG.standard_normal((4, 4))
    tm.weight = torch.tensor(A + A.T)
    sm.weight = skiff.tensor(A + A.T)
    sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((3, 4))
    outs = []
    for lib, m in ((skiff, sm), (torch, tm)):
        y = m(lib.tensor(x))
        (y ** 2).sum().backward()
        outs.append([y, m.parametrizations.weight.original.grad, m.weight])
    for a, b in zip(*outs):
        _close(a, b)
    with skiff.nn.utils.parametrize.cached():
        assert sm.weight is sm.weight
    skiff.nn.utils.parametrize.remove_parametrizations(sm, "weight", leave_parametrized=True)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=True)
    assert sorted(sm.state_dict()) == sorted(tm.state_dict())
    assert type(sm) is skiff.nn.Linear
    _close(sm.weight, tm.weight)


def test_parametrization_that_changes_the_shape_is_refused():
    class Bad(skiff.nn.Module):
        def forward(self, X):
            return X[:1]

    with pytest.raises(ValueError, match="unsafe=True"):
        skiff.nn.utils.parametrize.register_parametrization(skiff.nn.Linear(3, 3), "weight",
                                                            Bad())
