"""Quantization-aware fine-tuning of an int8 QDQ graph (skiff/kernels/train/onnx/qdq.py):
the imported QDQ graph's forward against onnxruntime running the same file, its weights'
gradients against PyTorch's fake_quantize (straight-through) convolutions, and the export's
integers against numpy's rounding with the file's scales."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from skiff.kernels.train.core.tensor import Tensor  # noqa: E402
from skiff.kernels.train.onnx.qdq import export_qdq, load_qdq, qdq_ranges  # noqa: E402


def _float_graph(path, rng):
    w1 = rng.normal(0, 0.4, (4, 3, 3, 3)).astype(np.float32)
    b1 = rng.normal(0, 0.1, 4).astype(np.float32)
    w2 = rng.normal(0, 0.4, (5, 4, 1, 1)).astype(np.float32)
    b2 = rng.normal(0, 0.1, 5).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"),
                                                         (b2, "b2"))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="conv2")]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [None, 3, 6, 10])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.fixture(scope="module")
def qdq_file(tmp_path_factory):
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    rng = np.random.default_rng(3)
    d = tmp_path_factory.mktemp("qat")
    _float_graph(d / "f.onnx", rng)
    cal = [rng.uniform(-1, 1, (2, 3, 6, 10)).astype(np.float32) for _ in range(4)]

    class Feed(CalibrationDataReader):
        def __init__(self):
            self.it = iter(cal)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {"x": x}

    quantize_static(str(d / "f.onnx"), str(d / "q.onnx"), Feed(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, op_types_to_quantize=["Conv"])
    return d / "q.onnx"


def _ort(path, x, optimized):
    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]


def test_imported_qdq_graph_equals_onnxruntime(qdq_file):
    m = load_qdq(qdq_file)
    x = np.random.default_rng(5).uniform(-1, 1, (2, 3, 6, 10)).astype(np.float32)
    y = m(Tensor(x)).numpy()
    ref = _ort(qdq_file, x, optimized=False)  # Q, DQ and float Conv as written
    assert np.abs(y - ref).max() < 1e-4
    fused = _ort(qdq_file, x, optimized=True)  # QLinearConv: one output step at most
    step = qdq_ranges(onnx.load(str(qdq_file)))["y_QuantizeLinear_Input"][0]
    assert np.abs(y - fused).max() <= step * 1.01
    assert y.std() > 0.05  # not a graph of zeros


def _torch_twin(m, x):
    """The same fake-quantized convolutions in PyTorch, weights as leaves."""
    model = m.qdq_proto
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    rng = qdq_ranges(model)
    key_of = {v: k for k, v in m.onnx_names.items()}
    leaves, out = {}, torch.from_numpy(x)

    def act(t, name):
        s, z = rng[name]
        return torch.fake_quantize_per_tensor_affine(t, s, z, 0, 255)

    def weight(base):
        fname = next(f for f in m.qdq_weights if f.startswith(base + "_quantized"))
        qname, s, z, axis, _ = m.qdq_weights[fname]
        w = torch.tensor(getattr(m, key_of[fname]).numpy(), requires_grad=True)
        leaves[base] = w
        if np.dtype(init[qname].dtype) == np.int32:
            return w  # int32 bias: its grid is finer than float32 rounding here
        return torch.fake_quantize_per_channel_affine(
            w, torch.tensor(s), torch.tensor(z.astype(np.int32)), axis, -128, 127)

    h = act(out, "x")
    h = torch.nn.functional.conv2d(h, weight("w1"), weight("b1"), padding=1)
    h = act(torch.relu(act(h, "c1")), "r1")
    h = torch.nn.functional.conv2d(h, weight("w2"), weight("b2"))
    return act(h, "y_QuantizeLinear_Input"), leaves


def test_weight_gradients_equal_torch_fake_quantize(qdq_file):
    m = load_qdq(qdq_file)
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (2, 3, 6, 10)).astype(np.float32)
    r = rng.normal(size=(2, 5, 6, 10)).astype(np.float32)
    y = m(Tensor(x))
    (y * Tensor(r)).sum().backward()
    ty, leaves = _torch_twin(m, x)
    (ty * torch.from_numpy(r)).sum().backward()
    assert np.abs(y.numpy() - ty.detach().numpy()).max() < 1e-4
    key_of = {v: k for k, v in m.onnx_names.items()}
    for base, leaf in leaves.items():
        fname = next(f for f in m.qdq_weights if f.startswith(base + "_quantized"))
        g = getattr(m, key_of[fname]).grad.numpy()
        np.testing.assert_allclose(g, leaf.grad.numpy(), rtol=1e-4, atol=1e-4)
        assert np.abs(g).max() > 0


def test_export_rounds_trained_weights_with_the_files_scales(qdq_file, tmp_path):
    m = load_qdq(qdq_file)
    same = export_qdq(m, tmp_path / "same.onnx")
    a = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(qdq_file)).graph.initializer}
    b = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(same)).graph.initializer}
    assert all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)

    key_of = {v: k for k, v in m.onnx_names.items()}
    fname = "w1_quantized_qat_float"
    qname, s, _, _, _ = m.qdq_weights[fname]
    p = getattr(m, key_of[fname])
    w = p.numpy().copy()
    w[0] += 2.6 * s[0]  # +3 steps after rounding
    w[1, 0, 0, 0] = 1e3  # saturates at 127
    p.data[...] = w
    out = export_qdq(m, tmp_path / "moved.onnx")
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(out)).graph.initializer}
    want = np.clip(np.rint(w / s[:, None, None, None]), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got[qname], want)
    assert (got[qname][0].astype(int) - a[qname][0]).max() == 3
    x = np.random.default_rng(7).uniform(-1, 1, (1, 3, 6, 10)).astype(np.float32)
    y = m(Tensor(x)).numpy()
    assert np.abs(y - _ort(out, x, optimized=False)).max() < 1e-4


def test_dynamic_scale_is_refused_naming_the_fix():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s"], ["y"])]
    g = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                        [1]),
                                         helper.make_tensor_value_info("s", TensorProto.FLOAT,
                                                                       [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(ValueError, match="quantize statically"):
        load_qdq(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
