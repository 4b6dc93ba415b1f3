"""Round 33 (h2): the pipeline's CPU engines keep the graph onnxruntime optimizes in skiff's
cache and later processes load it optimized (0.22 CPU s less at each start for the three
models). Oracle: a plain onnxruntime session on the shipped file, optimized in memory as
before; the cached graph must give the same outputs, bit for bit."""

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from skiff.kernels.ocr import engine  # noqa: E402
from skiff.kernels.ocr.engine import OnnxEngine, optimized_graph_path  # noqa: E402


def _model(which):
    from skiff.kernels.ocr.models import get_model_set

    try:
        return get_model_set("ch").path(which)
    except Exception as exc:  # the models' wheels missing
        pytest.skip(f"no OCR models: {exc}")


def _plain(path, x):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


SHAPES = {"cls": (3, 3, 80, 160), "rec": (2, 3, 48, 320), "det": (1, 3, 128, 192)}


@pytest.mark.parametrize("which", ["cls", "rec", "det"])
def test_cached_graph_reads_as_the_plain_session(which, tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path))
    path = _model(which)
    x = np.random.default_rng(3).uniform(-1, 1, SHAPES[which]).astype(np.float32)
    want = _plain(path, x)
    target = optimized_graph_path(path, ort.__version__)
    assert target is not None and not target.exists()
    first = OnnxEngine(path, "cpu", threads=1, graph_cache=True)  # optimizes, writes
    assert target.exists()
    assert not list(target.parent.glob("*.tmp"))
    second = OnnxEngine(path, "cpu", threads=1, graph_cache=True)  # loads the cached graph
    for eng in (first, second):
        np.testing.assert_array_equal(eng(x), want)


def test_loading_the_cached_graph_skips_the_optimizations(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path))
    path = _model("cls")
    OnnxEngine(path, "cpu", threads=1, graph_cache=True)
    seen = []
    real = ort.InferenceSession

    def spy(source, sess_options=None, **kw):
        seen.append((str(source), sess_options.graph_optimization_level))
        return real(source, sess_options=sess_options, **kw)

    monkeypatch.setattr(ort, "InferenceSession", spy)
    OnnxEngine(path, "cpu", threads=1, graph_cache=True)
    OnnxEngine(path, "cpu", threads=1)  # not asked: the shipped file, optimized in memory
    monkeypatch.setenv("SKIFF_OCR_GRAPH_CACHE", "0")
    OnnxEngine(path, "cpu", threads=1, graph_cache=True)
    target = str(optimized_graph_path(path, ort.__version__))
    assert seen == [(target, ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
                    (str(path), ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                    (str(path), ort.GraphOptimizationLevel.ORT_ENABLE_ALL)]


def test_key_follows_the_file_the_runtime_and_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path))
    model = tmp_path / "m.onnx"
    model.write_bytes(b"x" * 10)
    a = optimized_graph_path(model, "1.32.0")
    assert a == optimized_graph_path(model, "1.32.0")
    assert a != optimized_graph_path(model, "1.22.1")
    monkeypatch.setattr(engine, "_cpu_flags", lambda: "model name: other\nflags: avx2")
    assert optimized_graph_path(model, "1.32.0") != a
    monkeypatch.undo()
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path))
    model.write_bytes(b"y" * 11)  # re-exported
    assert optimized_graph_path(model, "1.32.0") != a
    assert optimized_graph_path(tmp_path / "missing.onnx", "1.32.0") is None
