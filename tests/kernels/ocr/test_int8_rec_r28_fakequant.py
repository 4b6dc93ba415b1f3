"""fake_quant (skiff/kernels/train/onnx/fakequant.py), the op quantization-aware training of
the int8 recognizer needs: forward against onnxruntime's QuantizeLinear + DequantizeLinear,
gradient against PyTorch's fake_quantize (straight-through estimator)."""

import numpy as np
import pytest

import skiff
from skiff.kernels.train.onnx.fakequant import INT8, UINT8, fake_quant

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _ort_qdq(x, scale, zero_point, dtype, axis=None):
    attrs = {} if axis is None else {"axis": axis}
    inits = [numpy_helper.from_array(np.asarray(scale, np.float32), "s"),
             numpy_helper.from_array(np.asarray(zero_point, dtype), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs)]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                        list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _inputs(rng, shape, scale, lo, hi):
    x = rng.uniform(lo, hi, shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[:7] = (np.arange(7) + 0.5) * np.float32(np.ravel(scale)[0])  # ties: half to even
    return x


def test_per_tensor_uint8_equals_onnxruntime_qdq():
    rng = np.random.default_rng(0)
    scale, zp = np.float32(0.0173), np.uint8(37)
    x = _inputs(rng, (2, 3, 5, 9), scale, -1.5, 4.5)  # below and above the grid's range
    got = fake_quant(skiff.tensor(x), scale, int(zp), *UINT8).numpy()
    np.testing.assert_array_equal(got, _ort_qdq(x, scale, zp, np.uint8))


def test_per_channel_int8_weight_equals_onnxruntime_qdq():
    rng = np.random.default_rng(1)
    w = rng.normal(0, 0.3, (6, 4, 3, 3)).astype(np.float32)
    scale = (np.abs(w).reshape(6, -1).max(1) / 127 * rng.uniform(0.6, 1.0, 6)).astype(np.float32)
    zp = np.zeros(6, np.int8)
    got = fake_quant(skiff.tensor(w), scale, 0, *INT8, axis=0).numpy()
    np.testing.assert_array_equal(got, _ort_qdq(w, scale, zp, np.int8, axis=0))


def test_gradient_is_pytorchs_straight_through_estimator():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.uniform(-2, 5, (3, 4, 6)).astype(np.float32)
    g = rng.normal(size=x.shape).astype(np.float32)
    scale, zp = 0.02, 40
    t = skiff.tensor(x, requires_grad=True)
    (fake_quant(t, scale, zp, *UINT8) * skiff.tensor(g)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    y = torch.fake_quantize_per_tensor_affine(tx, scale, zp, 0, 255)
    (y * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), tx.grad.numpy(), rtol=0, atol=0)
    assert 0 < (tx.grad.numpy() == 0).mean() < 1  # some saturated, some not

    w = rng.normal(0, 0.3, (5, 3, 3, 3)).astype(np.float32)
    s = (np.abs(w).reshape(5, -1).max(1) / 127 * 0.7).astype(np.float32)  # clips the tails
    gw = rng.normal(size=w.shape).astype(np.float32)
    t = skiff.tensor(w, requires_grad=True)
    (fake_quant(t, s, 0, *INT8, axis=0) * skiff.tensor(gw)).sum().backward()
    tw = torch.tensor(w, requires_grad=True)
    zeros = torch.zeros(5, dtype=torch.int32)
    y = torch.fake_quantize_per_channel_affine(tw, torch.tensor(s), zeros, 0, -128, 127)
    (y * torch.tensor(gw)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), tw.grad.numpy(), rtol=0, atol=0)
    np.testing.assert_allclose(fake_quant(skiff.tensor(w), s, 0, *INT8, axis=0).numpy(),
                               y.detach().numpy(), rtol=0, atol=1e-7)


def test_bad_ranges_are_refused_naming_the_fix():
    x = skiff.tensor(np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="positive"):
        fake_quant(x, 0.0)
    with pytest.raises(ValueError, match="axis"):
        fake_quant(x, np.ones(2, np.float32))
