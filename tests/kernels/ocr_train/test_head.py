"""The recognizer's training head: the fused MatMul + bias node, the pruned graph run, the
loss over pieces of the batch (equal to the loss over the whole batch, and to torch), and the
GELU twins far out in the tails."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.gradcheck import gradcheck
from skiff.kernels.train.core.tensor import Tensor, no_grad
from skiff.kernels.train.onnx import OnnxModule, ops

pytest.importorskip("onnx")


def _t(a):
    return Tensor(a, dtype="float64", requires_grad=True)


def test_linear_node_gradient():
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5)), rng.normal(size=5)
    y = ops.linear(_t(x), _t(w), _t(b)).numpy()
    assert np.allclose(y, x @ w + b, rtol=1e-12, atol=1e-12)
    assert gradcheck(ops.linear, [_t(x), _t(w), _t(b)])


@pytest.fixture(scope="module")
def v4():
    from skiff.kernels.ocr.models import MODEL_SETS

    return str(MODEL_SETS["ch-v4"].path("rec"))


def test_fused_last_layer_and_pruned_run(v4):
    from skiff.kernels.ocr_train.finetune import _final_linear

    fused, plain = OnnxModule.load(v4), OnnxModule.load(v4, fuse=False)
    wkey, bkey, logits, feat = _final_linear(fused)
    assert _final_linear(plain)[:3] == (wkey, bkey, logits)
    assert any(n[0] == "Linear" for n in fused._nodes)
    x = np.random.default_rng(1).uniform(-1, 1, (2, 3, 48, 80)).astype(np.float32)
    with no_grad():
        got = fused(x, outputs=(logits,))[logits].numpy()
        want = plain(x, outputs=(logits, feat))
    assert np.abs(got - want[logits].numpy()).max() < 1e-4
    # the run for the logits stops short of the final softmax; the full run does not
    plan = fused._plan((logits,))
    assert "Softmax" in {n[0] for n in fused._nodes[-3:]}
    assert plan[-1][2] == [logits] and len(plan) < len(fused._nodes)


def test_loss_in_pieces_equals_whole_batch_and_torch(v4, monkeypatch):
    torch = pytest.importorskip("torch")
    import skiff.kernels.ocr_train.finetune as ft

    m = OnnxModule.load(v4)
    head = ft._final_linear(m)
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (5, 3, 48, 64)).astype(np.float32)
    targets = [list(rng.integers(1, 50, k)) for k in (3, 5, 2, 4, 6)]

    def run(chunk):
        monkeypatch.setattr(ft, "HEAD_CHUNK_BYTES", chunk)
        for p in m.parameters():
            p.grad = None
        loss = ft.ctc_batch_loss(m, x, targets, head)
        loss.backward()
        return float(loss.item()), getattr(m, head[0]).grad.numpy().copy(), \
            getattr(m, head[1]).grad.numpy().copy()

    whole, pieces = run(1 << 30), run(1)  # one piece; one sample a piece
    assert abs(whole[0] - pieces[0]) < 1e-5 * abs(whole[0])
    for a, b in zip(whole[1:], pieces[1:]):
        assert np.abs(a - b).max() < 1e-5 * np.abs(a).max()
    with no_grad():  # torch's CTC (mean over the batch of loss / target length) on the logits
        logits = m(x, outputs=(head[2],))[head[2]].numpy()
    lp = torch.log_softmax(torch.tensor(logits), -1).transpose(0, 1)
    tl = torch.tensor([len(t) for t in targets])
    ref = torch.nn.functional.ctc_loss(lp, torch.tensor(np.concatenate(targets)),
                                       torch.full((5,), lp.shape[0]), tl, zero_infinity=True)
    assert abs(float(ref) - whole[0]) < 1e-4 * abs(whole[0])


def test_gelu_twins_in_the_tails():
    from skiff.kernels.train.onnx.activations import gelu_erf_bwd, gelu_erf_fwd

    x = np.concatenate([np.linspace(-120, 120, 2001), [-13.2, -13.3, 13.3, -9.0, 0.0, 1e-30]])
    x = x.astype(np.float32)
    g = np.random.default_rng(3).normal(size=x.shape).astype(np.float32)
    check_op(gelu_erf_fwd, x, rtol=1e-5, atol=1e-5)
    check_op(gelu_erf_bwd, g, x, rtol=1e-5, atol=1e-5)
    assert np.isfinite(gelu_erf_fwd(x)).all() and np.isfinite(gelu_erf_bwd(g, x)).all()


def test_freeze_early_stops_backward_at_the_first_trained_weight(v4):
    import skiff.kernels.ocr_train.finetune as ft

    m = OnnxModule.load(v4)
    n = ft.freeze_early(m, 0.5)
    frozen = [p for p in m.parameters() if not p.requires_grad]
    assert n == len(frozen) > 10
    x = np.random.default_rng(4).uniform(-1, 1, (2, 3, 48, 64)).astype(np.float32)
    ft.ctc_batch_loss(m, x, [[5, 6], [7]]).backward()
    assert all(p.grad is None for p in frozen)
    assert all(p.grad is not None for p in m.parameters() if p.requires_grad)
    with pytest.raises(ValueError, match="freeze must be in"):
        ft.freeze_early(m, 1.0)


def test_general_lines_cut_to_the_batch_width(fonts):
    from skiff.kernels.ocr_train.data import GeneralText

    g = GeneralText(5)
    for _ in range(40):
        crop, text = g.sample(max_width=150)
        assert text and 48 * crop.shape[1] / crop.shape[0] <= 150 or len(text) <= 2
