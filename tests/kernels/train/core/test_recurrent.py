"""LSTM, GRU, Conv1d and AdaptiveAvgPool2d against torch's layers: a torch state_dict loads
as it is, and outputs, final states and every gradient agree (float64 to 1e-10)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.train.core import nn
from skiff.kernels.train.core.tensor import Tensor

TOL = {"rtol": 1e-10, "atol": 1e-12}


def _pair(ours, theirs, **kw):
    torch.manual_seed(0)
    t = theirs(**kw).double()
    m = ours(dtype=np.float64, **kw)
    m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    assert list(m.state_dict()) == list(t.state_dict())  # the same names, in torch's order
    return m, t


@pytest.mark.parametrize("cls,tcls", [(nn.LSTM, torch.nn.LSTM), (nn.GRU, torch.nn.GRU)])
@pytest.mark.parametrize("kw", [
    {},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
    {"num_layers": 3, "bias": False},
])
@pytest.mark.parametrize("with_state", [False, True])
def test_recurrent_layers_equal_torch(cls, tcls, kw, with_state):
    m, t = _pair(cls, tcls, input_size=5, hidden_size=6, **kw)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 5))  # (L, N, F) or, batch_first, (N, L, F)
    k = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    h0, c0 = rng.standard_normal((2, k, 3 if kw.get("batch_first") else 4, 6))
    xs, xt = Tensor(x, requires_grad=True, dtype=np.float64), torch.tensor(x, requires_grad=True)
    if with_state:
        hs, ht = Tensor(h0, requires_grad=True, dtype=np.float64), torch.tensor(h0,
                                                                                 requires_grad=True)
        state_s = (hs, Tensor(c0, dtype=np.float64)) if cls is nn.LSTM else hs
        state_t = (ht, torch.tensor(c0)) if cls is nn.LSTM else ht
        out, fin = m(xs, state_s)
        ot, fint = t(xt, state_t)
    else:
        out, fin = m(xs)
        ot, fint = t(xt)
    np.testing.assert_allclose(out.numpy(), ot.detach().numpy(), **TOL)
    h, ht_n = (fin[0], fint[0]) if cls is nn.LSTM else (fin, fint)
    np.testing.assert_allclose(h.numpy(), ht_n.detach().numpy(), **TOL)
    ((out * out).sum() + (h * h).sum()).backward()
    ((ot * ot).sum() + (ht_n * ht_n).sum()).backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), **TOL)
    for (name, p), tp in zip(m.named_parameters(), t.parameters()):
        np.testing.assert_allclose(p.grad, tp.grad.numpy(), err_msg=name, **TOL)
    if with_state:
        np.testing.assert_allclose(hs.grad, ht.grad.numpy(), **TOL)


def test_unbatched_input_and_bad_shapes():
    m, t = _pair(nn.GRU, torch.nn.GRU, input_size=3, hidden_size=4)
    x = np.random.default_rng(2).standard_normal((7, 3))
    out, h = m(Tensor(x, dtype=np.float64))
    ot, ht = t(torch.tensor(x))
    assert out.shape == (7, 4) and h.shape == (1, 4)
    np.testing.assert_allclose(out.numpy(), ot.detach().numpy(), **TOL)
    with pytest.raises(ValueError, match=r"expects input \(L, N, 3\)"):
        m(Tensor(np.zeros((2, 2, 5))))
    with pytest.raises(ValueError, match="h_0 must have shape"):
        m(Tensor(np.zeros((2, 3, 3))), Tensor(np.zeros((2, 3, 4))))


def test_conv1d_and_adaptive_pooling_equal_torch():
    torch.manual_seed(0)
    t = torch.nn.Conv1d(3, 5, 4, stride=2, padding=1).double()
    m = nn.Conv1d(3, 5, 4, stride=2, padding=1, dtype=np.float64)
    m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((2, 3, 11))
    xs, xt = Tensor(x, requires_grad=True, dtype=np.float64), torch.tensor(x, requires_grad=True)
    y, yt = m(xs), t(xt)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), **TOL)
    np.testing.assert_allclose(m.weight.grad, t.weight.grad.numpy(), **TOL)
    img = np.random.default_rng(4).standard_normal((2, 3, 6, 8))
    for size in (1, (2, 4), (3, 2), 4, (5, 3)):  # 4, (5, 3): torch's overlapping bins
        got = nn.AdaptiveAvgPool2d(size)(Tensor(img, dtype=np.float64)).numpy()
        want = torch.nn.AdaptiveAvgPool2d(size)(torch.tensor(img)).numpy()
        np.testing.assert_allclose(got, want, **TOL)


class _Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(1, 16, batch_first=True)
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        out, (h, _) = self.rnn(x)
        return self.head(h[-1])


def test_a_sequence_classifier_trains_with_the_trainer():
    """Does a sequence's running sum ever go below zero? (order matters: no bag of values)"""
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.trainer import Trainer

    rng = np.random.default_rng(5)
    x = rng.choice([-1.0, 1.0], size=(600, 8, 1)).astype("f4")
    y = (np.cumsum(x[:, :, 0], axis=1).min(axis=1) < 0).astype("i8")
    train_random.seed(0)
    trainer = Trainer(_Classifier(), lr=1e-2, batch_size=32)
    # 8 epochs: 0.98 at the 5th, 1.0 from the 6th (12 took 0.33 s CPU, 8 take 0.22 s)
    result = trainer.train((x[:500], y[:500]), epochs=8, val_dataset=(x[500:], y[500:]))
    assert result.val_history[-1]["val_accuracy"] > 0.9, result.val_history[-1]
