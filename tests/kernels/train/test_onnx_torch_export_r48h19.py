"""(round 48, h19) A torch model exported to ONNX by a user, read back as a skiff
``OnnxModule``: Tanh, LeakyRelu and Dropout (a model exported without ``.eval()`` keeps its
Dropout nodes) run, forward and gradients equal to torch's on two batch sizes (the file's
batch axis is dynamic); an operator the importer lacks is refused in one line that names
the operator and the torch module path it came from."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skiff.kernels.train.onnx import OnnxModule, UnsupportedOnnx

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")


@pytest.fixture(autouse=True)
def _own_torch_rng():
    """The tests seed torch: its global generator is given back as it was."""
    with torch.random.fork_rng():
        yield


def _export(net, path, *, training=False):
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.zeros(2, 5), str(path), dynamo=False, opset_version=13,
                          training=mode, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    return path


def test_tanh_leaky_relu_dropout_run_as_torch(tmp_path):
    g = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 6),
                              torch.nn.LeakyReLU(0.2), torch.nn.Dropout(0.5))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    m = OnnxModule.load(_export(net.train(), tmp_path / "net.onnx", training=True))
    assert "Dropout" in {n[0] for n in m._nodes}  # the file kept it (exported in train mode)
    net.eval()
    m.eval()
    rng = np.random.default_rng(0)
    for n in (3, 7):  # two batch sizes through the dynamic axis
        x = rng.normal(size=(n, 5)).astype(np.float32)
        xt = torch.from_numpy(x)
        want = net(xt)
        got = m(x)
        # float32 of a 3-layer net with O(1) weights: ~1e-6 seen; 1e-4 leaves 100x for BLAS
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
        r = rng.normal(size=want.shape).astype(np.float32)
        net.zero_grad()
        (want * torch.from_numpy(r)).sum().backward()
        m.zero_grad()
        (got * r).sum().backward()
        w0 = next(k for k, v in m.onnx_names.items() if v == "0.weight")
        np.testing.assert_allclose(getattr(m, w0).grad.numpy(), net[0].weight.grad.numpy(),
                                   rtol=1e-4, atol=1e-4)
    # in train() the file's ratio drops: each output is 0 or its eval value over (1 - 0.5)
    x = rng.normal(size=(64, 5)).astype(np.float32)
    full = m(x).numpy()
    m.train()
    drop = m(x).numpy()
    m.eval()
    kept = drop != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(drop[kept], 2 * full[kept], rtol=1e-5, atol=1e-6)


class _Smooth(torch.nn.Module):  # a user's block with an op the importer lacks
    def forward(self, x):
        return torch.nn.functional.softplus(x) * x


def test_unknown_op_is_refused_in_one_line_naming_the_module(tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(5, 4),
                              torch.nn.Sequential(torch.nn.Linear(4, 4), _Smooth()))
    path = _export(net.eval(), tmp_path / "smooth.onnx")
    with pytest.raises(UnsupportedOnnx) as e:
        OnnxModule.load(path)
    msg = str(e.value)
    assert "\n" not in msg
    assert "Softplus at /1/1.1/Softplus" in msg, msg


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_opset_20_gelu_node_runs_as_torch(tmp_path, approximate):
    """Opset 20 writes ``nn.GELU`` as one ``Gelu`` node (``approximate`` an attribute);
    before round 48 the importer ran it only as its own fusion of the erf form."""
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.GELU(approximate=approximate),
                              torch.nn.LayerNorm(8), torch.nn.Linear(8, 3)).eval()
    path = tmp_path / "gelu.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.zeros(2, 5), str(path), dynamo=False, opset_version=20,
                          input_names=["x"])
    m = OnnxModule.load(path)
    assert "Gelu" in {n[0] for n in m._nodes}
    x = np.random.default_rng(2).normal(size=(4, 5)).astype(np.float32) * 2
    want = net(torch.from_numpy(x))
    got = m(x)
    # the two forms differ by up to ~1e-3 at |x| ~ 2: a wrong form fails a 1e-4 bound
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
    want.sum().backward()
    got.sum().backward()
    w0 = next(k for k, v in m.onnx_names.items() if v == "0.weight")
    np.testing.assert_allclose(getattr(m, w0).grad.numpy(), net[0].weight.grad.numpy(),
                               rtol=1e-4, atol=1e-4)


def test_int8_qdq_of_a_tanh_model_equals_onnxruntime(tmp_path):
    """onnxruntime's static QDQ quantization of a torch MLP with Tanh: skiff's QAT module
    and its re-export run as onnxruntime runs the int8 file."""
    ort = pytest.importorskip("onnxruntime")
    quant = pytest.importorskip("onnxruntime.quantization")
    from skiff.kernels.train.onnx.qdq import export_qdq, load_qdq

    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    src, q8, back = tmp_path / "f.onnx", tmp_path / "q8.onnx", tmp_path / "back.onnx"
    _export(net.eval(), src)
    rng = np.random.default_rng(3)
    batches = iter([{"x": rng.normal(size=(8, 5)).astype(np.float32)} for _ in range(2)])

    class Reader(quant.CalibrationDataReader):
        def get_next(self):
            return next(batches, None)

    quant.quantize_static(str(src), str(q8), Reader(), quant_format=quant.QuantFormat.QDQ,
                          per_channel=True, activation_type=quant.QuantType.QInt8,
                          weight_type=quant.QuantType.QInt8)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    x = rng.normal(size=(6, 5)).astype(np.float32)
    ref = ort.InferenceSession(str(q8), so).run(None, {"x": x})[0]
    m = load_qdq(q8)
    m.eval()
    step = float(np.abs(ref).max()) / 100  # far below one int8 step of the output (~1/127)
    np.testing.assert_allclose(m(x).numpy(), ref, atol=step)
    export_qdq(m, back)
    again = ort.InferenceSession(str(back), so).run(None, {"x": x})[0]
    np.testing.assert_allclose(again, ref, atol=step)


class _Bag(torch.nn.Module):  # a text classifier: token ids -> embedding -> mean -> linear
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.out = torch.nn.Linear(4, 3)

    def forward(self, ids):
        return self.out(self.emb(ids).mean(1))


def test_embedding_of_input_token_ids_runs_as_torch(tmp_path):
    """``Gather`` of a weight by the input's token ids (torch's ``nn.Embedding``) was refused
    as "a shape input depends on the data"; ids repeat, so the weight's gradient sums."""
    torch.manual_seed(4)
    net = _Bag().eval()
    path = tmp_path / "bag.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.zeros(2, 5, dtype=torch.int64), str(path), dynamo=False,
                          opset_version=13, input_names=["ids"],
                          dynamic_axes={"ids": {0: "n", 1: "t"}})
    m = OnnxModule.load(path)
    ids = np.array([[1, 2, 2, 9, 1, 1], [0, 3, 3, 3, 4, 7], [5, 5, 6, 8, 2, 1]], np.int64)
    want = net(torch.from_numpy(ids))
    got = m(ids)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    r = np.random.default_rng(4).normal(size=want.shape).astype(np.float32)
    (want * torch.from_numpy(r)).sum().backward()
    (got * r).sum().backward()
    key = next(k for k, v in m.onnx_names.items() if v == "emb.weight")
    np.testing.assert_allclose(getattr(m, key).grad.numpy(), net.emb.weight.grad.numpy(),
                               rtol=1e-5, atol=1e-6)


def test_a_node_refused_at_run_time_is_named():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["as_int"], to=TensorProto.INT64, name="/cast/Cast")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("as_int", TensorProto.INT64, [2])])
    m = OnnxModule(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    with pytest.raises(UnsupportedOnnx, match=r"ONNX node Cast -> 'as_int': Cast of data"):
        m(np.ones(2, np.float32))


def test_cast_of_integer_data_to_float_is_float(tmp_path):
    """``Cast`` of uint8 pixels to float kept them uint8, so ``x + x`` wrapped at 256."""
    from onnx import TensorProto, helper

    ort = pytest.importorskip("onnxruntime")
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["f", "f"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.array([1, 200, 255], np.uint8)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = OnnxModule(model)(x).numpy()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)  # [2, 400, 510]
