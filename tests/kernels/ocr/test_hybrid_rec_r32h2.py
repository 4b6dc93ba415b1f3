"""precision="hybrid" (round 32): a clean image's crops go to the recognizer's int8 twin, a
noisy image's (and its denoised copies') to the float32 file, and the readings come back in
their crops' places. Oracle: the float32 pipeline (``precision="auto"``) with the twin
replaced by the float32 file itself, so every text must be the float32 one; the noise is
numpy's, of a known sigma, on a rendered page with none."""

from importlib.resources import files

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from skiff.kernels.ocr import OcrPipeline  # noqa: E402
from skiff.kernels.ocr import quantize_rec as qr  # noqa: E402
from skiff.kernels.ocr.quantize import PRECISIONS, QuantizeError  # noqa: E402


@pytest.fixture(scope="module")
def pages(fonts):
    from skiff.kernels.ocr.synth import render_sample

    clean = render_sample("clean", 0, seed=3).image
    other = render_sample("clean", 1, seed=3).image
    rng = np.random.default_rng(0)
    noisy = np.clip(other.astype(np.float32) + rng.normal(0, 20, other.shape), 0, 255)
    return clean, noisy.astype(np.uint8)


def _counting(pipe, which):
    """Wrap engine ``which``'s session so it counts the crops it reads."""
    eng = pipe.engine(which)
    run = eng.session.run
    seen = []

    def counted(outputs, feeds, *args, **kwargs):
        seen.append(len(next(iter(feeds.values()))))
        return run(outputs, feeds, *args, **kwargs)

    eng.session.run = counted
    return seen


def test_clean_crops_go_int8_noisy_ones_float32_texts_in_place(pages, monkeypatch):
    float_file = files("rapidocr") / "models" / "PP-OCRv6_rec_small.onnx"
    # the twin stood in by the float32 file: any text differing is a crop read out of place
    monkeypatch.setattr(qr, "int8_recognizer", lambda src, log=None: float_file)
    clean, noisy = pages
    want = [r.text for r in OcrPipeline("ch", device="cpu", threads=2).run([clean, noisy])]
    assert want[0] and want[1]
    hybrid = OcrPipeline("ch", device="cpu", threads=2, precision="hybrid")
    as_int8, as_float = _counting(hybrid, "rec-int8"), _counting(hybrid, "rec")
    assert [r.text for r in hybrid.run([clean])] == want[:1]
    assert sum(as_int8) > 0 and sum(as_float) == 0  # a clean page: int8 only
    del as_int8[:]
    assert [r.text for r in hybrid.run([noisy])] == want[1:]
    assert sum(as_int8) == 0 and sum(as_float) > 0  # sigma 20 >= NOISY: float32 only
    del as_float[:]
    assert [r.text for r in hybrid.run([noisy, clean, noisy])] == [want[1], want[0], want[1]]
    assert sum(as_int8) > 0 and sum(as_float) > 0


def test_the_line_gate_reads_unsure_lines_again_in_float32(pages, monkeypatch):
    from skiff.kernels.ocr import pipeline

    float_file = files("rapidocr") / "models" / "PP-OCRv6_rec_small.onnx"
    monkeypatch.setattr(qr, "int8_recognizer", lambda src, log=None: float_file)
    clean, _ = pages
    hybrid = OcrPipeline("ch", device="cpu", threads=2, precision="hybrid")
    as_int8, as_float = _counting(hybrid, "rec-int8"), _counting(hybrid, "rec")
    want = [r.text for r in hybrid.run([clean])]
    assert sum(as_float) == 0 and sum(as_int8) > 0  # the gate off: no second reading
    read = sum(as_int8)
    del as_int8[:]
    monkeypatch.setattr(pipeline, "HYBRID_LINE", 1.01)  # every line is unsure: all again
    assert [r.text for r in hybrid.run([clean])] == want
    assert sum(as_int8) == read and sum(as_float) == read


def test_hybrid_is_a_precision_of_the_cli():
    from skiff.kinds.ocr import COMMAND, to_config

    assert "hybrid" in PRECISIONS
    values = vars(COMMAND.parse("page.png --precision hybrid"))
    assert to_config(values, check_inputs=False)["precision"] == "hybrid"


def test_the_twin_is_built_once_into_the_cache(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime.quantization")
    from .test_int8_rec_r28 import _tiny_recognizer  # its hand-built graph

    src = tmp_path / "tiny.onnx"
    _tiny_recognizer(src)
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(1)
    monkeypatch.setattr(qr, "calibration_pages", lambda n: [])
    monkeypatch.setattr(qr, "pipeline_batches", lambda images, rec=None: [
        rng.uniform(-1, 1, (2, 3, 8, 16)).astype(np.float32) for _ in range(3)])
    heard = []
    path = qr.int8_recognizer(src, log=heard.append)
    assert path == qr.int8_rec_path(src) and path.is_file() and len(heard) == 1
    assert path.parent == tmp_path / "cache" / "ocr"
    import onnx

    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    # found, not built again
    monkeypatch.setattr(qr, "build_int8_recognizer", lambda *a, **k: 1 / 0)
    assert qr.int8_recognizer(src, log=heard.append) == path and len(heard) == 1
    # a failed build says so and leaves no file
    path.unlink()
    with pytest.raises(QuantizeError, match="could not be built"):
        qr.int8_recognizer(src)
    assert not any((tmp_path / "cache" / "ocr").iterdir())
