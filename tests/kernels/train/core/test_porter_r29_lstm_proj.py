"""Round 29: ``nn.LSTM(proj_size=...)`` against torch 2.13 in float64: parameter names and
shapes (``weight_hr_l{k}``), outputs, final ``(h, c)`` and the gradients of the input, the
initial states and every weight, with layers, directions and ``batch_first``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(2909)


@pytest.mark.parametrize("layers,bidir,batch_first,with_state", [
    (1, False, False, False), (2, False, True, True), (2, True, False, True),
    (1, True, True, False)])
def test_lstm_proj_size_equals_torch(layers, bidir, batch_first, with_state):
    kw = dict(num_layers=layers, bidirectional=bidir, batch_first=batch_first, proj_size=3)
    t = torch.nn.LSTM(4, 6, **kw).double()
    s = skiff.nn.LSTM(4, 6, **kw).double()
    assert [(n, tuple(p.shape)) for n, p in s.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()},
                      strict=True)
    d = 2 if bidir else 1
    x = RNG.standard_normal((2, 5, 4) if batch_first else (5, 2, 4))
    h0, c0 = RNG.standard_normal((layers * d, 2, 3)), RNG.standard_normal((layers * d, 2, 6))
    res = []
    for lib, m in ((skiff, s), (torch, t)):
        xs = lib.tensor(x, requires_grad=True)
        st = (lib.tensor(h0, requires_grad=True), lib.tensor(c0, requires_grad=True)) \
            if with_state else None
        out, (h, c) = m(xs, st) if with_state else m(xs)
        loss = (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
                ).sum() + (h ** 2).sum() + c.sin().sum()
        loss.backward()
        got = [out, h, c, xs.grad] + [p.grad for p in m.parameters()]
        if with_state:
            got += [st[0].grad, st[1].grad]
        res.append(got)
    for a, b in zip(*res):
        np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


def test_proj_size_refusals_as_torch():
    with pytest.raises(ValueError, match="only supported for LSTM"):
        skiff.nn.GRU(4, 6, proj_size=2)
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        skiff.nn.LSTM(4, 6, proj_size=6)
    m = skiff.nn.LSTM(4, 6, proj_size=3)
    with pytest.raises(ValueError, match="h_0 must have shape"):
        m(skiff.zeros(5, 2, 4), (skiff.zeros(1, 2, 6), skiff.zeros(1, 2, 6)))
