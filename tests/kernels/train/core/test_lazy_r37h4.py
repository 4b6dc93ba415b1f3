"""Round 37 (h4): torch's lazy layers (LazyConv*, LazyConvTranspose*, LazyBatchNorm*,
LazyInstanceNorm*): shaped by the first input or by a loaded state dict, then the eager class,
against torch 2.13 in float64."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(37)
X = R.normal(size=(2, 3, 8, 8))


def _build(lib):
    nn = lib.nn
    return nn.Sequential(nn.LazyConv2d(6, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                         nn.LazyConvTranspose2d(4, 2, stride=2), nn.LazyInstanceNorm2d(),
                         nn.Flatten(), nn.LazyLinear(5)).double()


def test_lazy_model_loads_torchs_weights_and_becomes_its_eager_classes():
    tm = _build(torch)
    want = tm(torch.tensor(X)).detach().numpy()
    sm = _build(skiff)
    calls = []
    sm[0].register_forward_hook(lambda m, i, o: calls.append(tuple(o.shape)))
    sm.load_state_dict({k: skiff.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})  # shapes them (nested too)
    got = sm(skiff.tensor(X)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert [type(m).__name__ for m in sm][:5] == [type(m).__name__ for m in tm][:5]
    assert calls == [(2, 6, 8, 8)]  # a hook registered before materializing stays, runs once
    assert sorted(sm.state_dict()) == sorted(tm.state_dict())


def test_lazy_layers_take_their_channels_from_the_first_input():
    for make, x in ((lambda lib: lib.nn.LazyConv1d(4, 3), R.normal(size=(5, 7))),
                    (lambda lib: lib.nn.LazyConv3d(2, 2), R.normal(size=(1, 3, 4, 4, 4))),
                    (lambda lib: lib.nn.LazyConvTranspose1d(2, 3), R.normal(size=(2, 3, 5))),
                    (lambda lib: lib.nn.LazyBatchNorm1d(), R.normal(size=(4, 6))),
                    (lambda lib: lib.nn.LazyInstanceNorm1d(), R.normal(size=(2, 3, 5)))):
        t, s = make(torch).double(), make(skiff).double()
        tout = t(torch.tensor(x))
        s.load_state_dict({k: skiff.tensor(v.detach().numpy().copy())
                           for k, v in t.state_dict().items()})
        assert type(s).__name__ == type(t).__name__
        s2 = make(skiff).double()
        assert tuple(s2(skiff.tensor(x)).shape) == tuple(tout.shape)
        assert type(s2).__name__ == type(t).__name__
