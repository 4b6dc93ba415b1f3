"""``linear_cross_entropy``: the head and the loss in one node, a slice of rows at a time,
equal to ``cross_entropy(linear(...))`` and to torch, with ignored targets, any slice size,
and only the gradients asked for."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.nn.functional import losses
from skiff.kernels.train.core.tensor import Tensor, no_grad


def _case(seed=0, n=37, c=16, v=50, bias=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c)).astype(np.float32)
    w = (rng.standard_normal((v, c)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(v) * 0.1).astype(np.float32) if bias else None
    t = rng.integers(0, v, n)
    t[::5] = -100
    return x, w, b, t


@pytest.mark.parametrize("slice_bytes", [16 << 20, 50 * 4 * 3, 1])
@pytest.mark.parametrize("bias", [True, False])
def test_equal_to_the_two_ops_and_to_torch(monkeypatch, slice_bytes, bias):
    monkeypatch.setattr(losses, "LINEAR_CE_BYTES", slice_bytes)  # 37 rows, 3 rows, 1 row
    monkeypatch.setattr(losses, "LINEAR_CE_MIN_ROWS", 1)
    x, w, b, t = _case(bias=bias)
    got, want = [], []
    for fused in (True, False):
        tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
        tb = Tensor(b, requires_grad=True) if bias else None
        loss = (F.linear_cross_entropy(tx, tw, tb, t) if fused
                else F.cross_entropy(F.linear(tx, tw, tb), t))
        (loss * 3.0).backward()  # an upstream gradient that is not 1
        (got if fused else want).append(
            [float(loss.data), tx.grad, tw.grad] + ([tb.grad] if bias else []))
    px, pw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    pb = torch.tensor(b, requires_grad=True) if bias else None
    ref = torch.nn.functional.cross_entropy(torch.nn.functional.linear(px, pw, pb),
                                            torch.tensor(t), ignore_index=-100)
    (ref * 3.0).backward()
    oracle = [float(ref.detach()), px.grad.numpy(), pw.grad.numpy()]
    oracle += [pb.grad.numpy()] if bias else []
    for a, bb, o in zip(got[0], want[0], oracle):
        np.testing.assert_allclose(a, bb, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(a, o, rtol=2e-5, atol=2e-6)


def test_only_the_gradients_asked_for_and_no_graph_under_no_grad():
    x, w, b, t = _case()
    tx, tw = Tensor(x, requires_grad=True), Tensor(w)  # a frozen head (LoRA)
    loss = F.linear_cross_entropy(tx, tw, None, t)
    node = loss._node
    assert node.saved[1] is None and node.saved[0] is not None  # no (V, C) gradient made
    loss.backward()
    assert tw.grad is None and tx.grad.shape == x.shape
    with no_grad():
        plain = F.linear_cross_entropy(Tensor(x), Tensor(w), None, t)
    assert plain._node is None
    assert float(plain.data) == pytest.approx(float(loss.data), rel=1e-6)


def test_bad_input_is_one_clear_error():
    x, w, b, t = _case()
    with pytest.raises(TypeError, match="integer"):
        F.linear_cross_entropy(Tensor(x), Tensor(w), None, t.astype(np.float32))
    with pytest.raises(ValueError, match="does not match"):
        F.linear_cross_entropy(Tensor(x[:, :5]), Tensor(w), None, t)
    with pytest.raises(ValueError, match="targets of shape"):
        F.linear_cross_entropy(Tensor(x), Tensor(w), None, t[:3])
