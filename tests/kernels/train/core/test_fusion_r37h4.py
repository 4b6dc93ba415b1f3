"""Round 37 (h4): torch's ``nn.utils.fuse_conv_bn_eval``/``fuse_linear_bn_eval`` (and their
``_weights`` forms) against torch 2.13 in float64, and the fused layer against the pair."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(37)


def _build(lib):
    nn = lib.nn
    return nn.ModuleList([nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4),
                          nn.ConvTranspose2d(4, 2, 2, stride=2, bias=False), nn.BatchNorm2d(2),
                          nn.Linear(5, 6), nn.BatchNorm1d(6)]).double()


def test_fused_layers_are_torchs():
    tm = _build(torch)
    with torch.no_grad():
        for bn in (tm[1], tm[3], tm[5]):
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2)
            bn.weight.normal_()
            bn.bias.normal_()
    tm.eval()
    sm = _build(skiff)
    sm.load_state_dict({k: skiff.tensor(v.numpy().copy()) for k, v in tm.state_dict().items()})
    sm.eval()
    x, z = R.normal(size=(2, 3, 6, 6)), R.normal(size=(4, 5))
    got = []
    for lib, m in ((torch, tm), (skiff, sm)):
        u = lib.nn.utils
        c = u.fuse_conv_bn_eval(m[0], m[1])
        t = u.fuse_conv_bn_eval(m[2], m[3], transpose=True)
        lin = u.fuse_linear_bn_eval(m[4], m[5])
        h = m[1](m[0](lib.tensor(x)))
        got.append([c(lib.tensor(x)), t(h), lin(lib.tensor(z)), c.weight, c.bias, t.bias,
                    lin.weight])
        np.testing.assert_allclose(c(lib.tensor(x)).detach().numpy(), h.detach().numpy(),
                                   rtol=1e-12, atol=1e-13)  # the pair, folded
        assert c is not m[0] and c.weight.requires_grad
    for a, b in zip(got[1], got[0]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-14)
    for lib, m in ((torch, tm), (skiff, sm)):
        with pytest.raises(AssertionError, match="Fusion only for eval"):
            lib.nn.utils.fuse_conv_bn_eval(m[0].train(), m[1])
        m.eval()
        with pytest.raises(AssertionError, match="out_features"):
            lib.nn.utils.fuse_linear_bn_eval(m[4], m[1])
