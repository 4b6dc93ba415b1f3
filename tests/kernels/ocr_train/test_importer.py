"""The ONNX importer against onnxruntime: both shipped recognizers, a hand-built graph with
the other operators, and finite-difference gradients of the new nodes and of a graph."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.gradcheck import gradcheck
from skiff.kernels.train.core.tensor import no_grad
from skiff.kernels.train.onnx import OnnxModule, UnsupportedOnnx, ops
from skiff.kernels.train.onnx.depthwise import depthwise_bwd, depthwise_fwd

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _ort(path_or_model, x):
    data = path_or_model if isinstance(path_or_model, (str, bytes)) else \
        path_or_model.SerializeToString()
    sess = ort.InferenceSession(str(data) if isinstance(data, str) else data,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("name", ["ch", "ch-v4", "ch-tiny"])
def test_shipped_recognizer_equals_onnxruntime(name, fuse):
    from skiff.kernels.ocr.models import MODEL_SETS

    for package in MODEL_SETS[name].packages():
        pytest.importorskip(package, reason="its extra is not installed")
    path = str(MODEL_SETS[name].path("rec"))
    m = OnnxModule.load(path, fuse=fuse)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (2, 3, 48, 96)).astype(np.float32)
    with no_grad():
        got = m(x).numpy()
    want = _ort(path, x)
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 1e-4
    if fuse:  # the written-out activations ran as fused nodes
        ops_run = {n[0] for n in m._nodes}
        assert ("AffineHardSwish" if name == "ch-v4" else "Gelu") in ops_run
    # and the same file written back untouched gives the same numbers
    assert m.num_parameters() > (1_000_000 if name == "ch-tiny" else 2_000_000)


def _graph(nodes, inits, out_shape, in_shape=(2, 4, 6, 6), opset=14):
    from onnx import TensorProto, helper, numpy_helper

    g = helper.make_graph(
        nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   ["N", in_shape[1], "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.astype(np.float32) if v.dtype.kind == "f" else v, k)
         for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _small_model(rng):
    """Conv (depthwise, SAME_UPPER) + BN + HardSwish + Clip + GAP + Flatten + Gemm + Softmax,
    and a MaxPool with asymmetric pads on a side branch joined by Concat."""
    from onnx import helper

    inits = {
        "w_dw": rng.normal(0, 0.5, (4, 1, 3, 3)), "b_dw": rng.normal(0, 0.1, 4),
        "s": rng.uniform(0.5, 1.5, 4), "bb": rng.normal(0, 0.1, 4),
        "mu": rng.normal(0, 0.1, 4), "var": rng.uniform(0.5, 1.5, 4),
        "w_g": rng.normal(0, 0.3, (4, 2, 1, 1)), "gw": rng.normal(0, 0.5, (8, 5)),
        "gb": rng.normal(0, 0.1, 5), "lo": np.array(-1.0), "hi": np.array(2.0),
        "idx": np.array([0, 2], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w_dw", "b_dw"], ["c"], group=4, kernel_shape=[3, 3],
                         strides=[2, 1], auto_pad="SAME_UPPER"),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "mu", "var"], ["n"],
                         epsilon=1e-5),
        helper.make_node("HardSwish", ["n"], ["h"]),
        helper.make_node("Clip", ["h", "lo", "hi"], ["k"]),
        helper.make_node("Conv", ["k", "w_g"], ["cg"], group=2, kernel_shape=[1, 1]),
        helper.make_node("MaxPool", ["cg"], ["mp"], kernel_shape=[2, 2], strides=[1, 1],
                         pads=[0, 0, 1, 1]),
        helper.make_node("GlobalAveragePool", ["mp"], ["gap"]),
        helper.make_node("GlobalAveragePool", ["k"], ["gap2"]),
        helper.make_node("Concat", ["gap", "gap2"], ["cc"], axis=1),
        helper.make_node("Flatten", ["cc"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "gw", "gb"], ["z"], alpha=0.7),
        helper.make_node("Gather", ["z", "idx"], ["zz"], axis=0),
        helper.make_node("Softmax", ["zz"], ["y"], axis=-1),
    ]
    return _graph(nodes, inits, None)


def test_other_operators_equal_onnxruntime():
    rng = np.random.default_rng(2)
    model = _small_model(rng)
    x = rng.normal(0, 1, (3, 4, 6, 7)).astype(np.float32)
    m = OnnxModule(model)
    with no_grad():
        got = m(x).numpy()
    want = _ort(model, x)
    assert np.abs(got - want).max() < 1e-5


def test_graph_gradient_by_finite_differences():
    rng = np.random.default_rng(3)
    m = OnnxModule(_small_model(rng)).double()
    x = skiff.tensor(rng.normal(0, 1, (3, 4, 5, 5)), dtype="float64", requires_grad=True)
    w = m.w_dw
    assert gradcheck(lambda a, b: m(a), [x, w], atol=1e-6, rtol=1e-4)


def test_unsupported_operator_named():
    from onnx import helper

    model = _graph([helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,ij->ij")],
                   {}, None)
    with pytest.raises(UnsupportedOnnx, match="Einsum"):
        OnnxModule(model)


def _t(a, grad=True):
    return skiff.tensor(a, dtype="float64", requires_grad=grad)


def test_new_nodes_gradcheck():
    rng = np.random.default_rng(4)
    x = _t(rng.normal(0, 1.5, (2, 3, 4, 5)))
    assert gradcheck(ops.erf, [x])
    assert gradcheck(lambda a: ops.clip(a, -0.7, 0.9), [x])
    assert gradcheck(lambda a: ops.hard_sigmoid(a, 1 / 6, 0.5), [x])
    assert gradcheck(lambda a: ops.pad2d(a, (1, 0, 2, 3), value=-1.0), [x])
    assert gradcheck(lambda a: ops.affine_hard_swish(a, 1.7, 0.2, 1.3, 0.1), [x])
    assert gradcheck(ops.affine_hard_swish, [x])


@pytest.mark.parametrize("groups,stride,pads", [(3, (2, 1), (1, 1, 1, 1)),
                                                (3, (1, 1), (0, 1, 1, 2)),
                                                (1, (1, 2), (1, 0, 0, 1))])
def test_grouped_conv_against_torch_and_reference(groups, stride, pads):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, (2, 3, 6, 7))
    w = rng.normal(0, 1, (3, 3 // groups, 3, 2))
    b = rng.normal(0, 1, 3)
    xs, ws, bs = _t(x), _t(w), _t(b)
    y = ops.grouped_conv2d(xs, ws, bs, stride=stride, pads=pads, groups=groups)
    ref = ops.grouped_conv2d_reference(x, w, b, stride=stride, pads=pads, groups=groups)
    xt = torch.nn.functional.pad(torch.tensor(x), (pads[1], pads[3], pads[0], pads[2]))
    tw = torch.nn.functional.conv2d(xt, torch.tensor(w), torch.tensor(b), stride=stride,
                                    groups=groups).numpy()
    assert np.abs(y.numpy() - ref).max() < 1e-12
    assert np.abs(ref - tw).max() < 1e-12
    assert gradcheck(lambda a, c, d: ops.grouped_conv2d(a, c, d, stride=stride, pads=pads,
                                                        groups=groups), [xs, ws, bs])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_twins(dtype):
    rng = np.random.default_rng(6)
    xt = rng.normal(0, 1, (4, 2, 9, 11)).astype(dtype)
    w = rng.normal(0, 1, (4, 3, 5)).astype(dtype)
    g = rng.normal(0, 1, (4, 2, 4, 7)).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    check_op(depthwise_fwd, xt, w, 2, 1, 4, 7, **tol)
    check_op(depthwise_bwd, g, xt, w, 2, 1, True, True, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_affine_hard_swish_twins(dtype):
    from skiff.kernels.train.onnx.activations import affine_hswish_bwd, affine_hswish_fwd

    rng = np.random.default_rng(7)
    x = rng.normal(0, 3, (3, 2, 4, 5)).astype(dtype)
    g = rng.normal(0, 1, x.shape).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    check_op(affine_hswish_fwd, x, 0.8, 0.3, 1.2, -0.1, **tol)
    check_op(affine_hswish_fwd, x.transpose(1, 0, 2, 3), 1.0, 0.0, 1.0, 0.0, **tol)
    check_op(affine_hswish_bwd, g, x, 0.96, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_erf_twins_and_gradient(dtype):
    from skiff.kernels.train.onnx.activations import gelu_erf_bwd, gelu_erf_fwd

    rng = np.random.default_rng(8)
    x = rng.normal(0, 2, (3, 2, 4, 5)).astype(dtype)
    g = rng.normal(0, 1, x.shape).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    check_op(gelu_erf_fwd, x, **tol)
    check_op(gelu_erf_fwd, x.transpose(1, 0, 2, 3), **tol)
    check_op(gelu_erf_bwd, g, x, **tol)
    if dtype == np.float64:
        assert gradcheck(ops.gelu_erf, [_t(x)])
