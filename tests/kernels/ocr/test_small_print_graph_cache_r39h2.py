"""Round 39 (h2): the small-print recognizer's engine (a second recognizer session, made the
first time a run reads an unsure small CJK line) keeps its optimized graph in skiff's cache
as the pipeline's other engines do (engine.optimized_graph_path): a later process loads it
with the optimizations off (session 0.078 -> 0.042 CPU s, its RSS +48 -> +37 MiB). Oracle: a
plain onnxruntime session on the built model, optimized in memory; the engine's outputs
must equal it bit for bit, from the first session (which writes the graph) and the second
(which reads it)."""

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from skiff.kernels.ocr import OcrPipeline, small_print  # noqa: E402
from skiff.kernels.ocr.engine import optimized_graph_path  # noqa: E402


@pytest.fixture(scope="module")
def built():
    pipe = OcrPipeline("ch", device="cpu", threads=2)
    path = small_print.small_print_model(pipe.models.path("rec"))  # skiff's cache, as h1's
    if path is None:
        pytest.skip("no small-print delta for this recognizer")
    return path


def test_small_print_engine_loads_its_cached_graph(built, tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path))  # the optimized graph's cache only
    monkeypatch.setattr(small_print, "small_print_model", lambda src, delta=None: built)
    seen = []
    real = ort.InferenceSession

    def spy(source, sess_options=None, **kw):
        seen.append((str(source), sess_options.graph_optimization_level))
        return real(source, sess_options=sess_options, **kw)

    monkeypatch.setattr(ort, "InferenceSession", spy)
    x = np.random.default_rng(5).uniform(-1, 1, (2, 3, 48, 200)).astype(np.float32)
    engines = [OcrPipeline("ch", device="cpu", threads=2)._small_print_engine()
               for _ in range(2)]
    target = optimized_graph_path(built, ort.__version__)
    assert seen == [(str(built), ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                    (str(target), ort.GraphOptimizationLevel.ORT_DISABLE_ALL)]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    plain = real(str(built), opts, providers=["CPUExecutionProvider"])
    want = plain.run(None, {plain.get_inputs()[0].name: x})[0]
    for eng in engines:
        np.testing.assert_array_equal(eng(x), want)


def test_the_base_check_reads_the_digest_alone(built, monkeypatch):
    def whole(*args, **kwargs):
        raise AssertionError("every tensor of the delta decompressed for its base's digest")

    monkeypatch.setattr(small_print, "delta_info", whole)
    pipe = OcrPipeline("ch", device="cpu", threads=2)
    assert small_print.small_print_model(pipe.models.path("rec")) == built
