"""precision="hybrid" (round 32): a clean image's crops go to the recognizer's int8 twin, a
noisy image's (and its denoised copies') to the float32 file, and the readings come back in
their crops' places. Oracle: the float32 pipeline (``precision="auto"``) with the twin
replaced by the float32 file itself, so every text must be the float32 one; the noise is
numpy's, of a known sigma, on a rendered page with none."""

from importlib.resources import files

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from skiff.kernels.ocr import OcrPipeline, pipeline, quantize  # noqa: E402
from skiff.kernels.ocr import quantize_rec as qr  # noqa: E402
from skiff.kernels.ocr.quantize import PRECISIONS, QuantizeError  # noqa: E402


@pytest.fixture(scope="module")
def pages(fonts):
    from skiff.kernels.ocr.synth import render_sample

    clean = render_sample("clean", 0, seed=3).image  # 1029 x 447
    other = render_sample("clean", 1, seed=3).image
    wide = np.full((other.shape[0], 900, 3), 255, np.uint8)  # large: float32 by its noise
    wide[:, :other.shape[1]] = other
    rng = np.random.default_rng(0)
    noisy = np.clip(wide.astype(np.float32) + rng.normal(0, 20, wide.shape), 0, 255)
    return clean, noisy.astype(np.uint8)


@pytest.fixture(scope="module")
def hybrid():
    """One hybrid pipeline whose twin is the float32 file itself (any text differing from
    the float32 pipeline's is a crop read out of place), and its engines' crop counts."""
    float_file = files("rapidocr") / "models" / "PP-OCRv6_rec_small.onnx"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "int8_recognizer", lambda src, log=None: float_file)
        pipe = OcrPipeline("ch", device="cpu", threads=2, precision="hybrid")
        counts = {"rec-int8": _counting(pipe, "rec-int8"), "rec": _counting(pipe, "rec")}
    return pipe, counts


def _read(hybrid, images):
    pipe, counts = hybrid
    for seen in counts.values():
        del seen[:]
    texts = [r.text for r in pipe.run(images)]
    return texts, sum(counts["rec-int8"]), sum(counts["rec"])


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


def test_clean_crops_go_int8_noisy_ones_float32_texts_in_place(pages, pipe, hybrid):
    clean, noisy = pages
    want = [r.text for r in pipe.run([clean, noisy])]  # the float32 pipeline
    assert want[0] and want[1]
    texts, as_int8, as_float = _read(hybrid, [clean])
    assert texts == want[:1] and as_int8 > 0 and as_float == 0  # a clean page: int8 only
    texts, as_int8, as_float = _read(hybrid, [noisy])
    assert texts == want[1:] and as_int8 == 0 and as_float > 0  # sigma 20: float32 only
    # both kinds in one run, each text in its image's place (a third image read no more
    # than these two: round 41, h2, the test 2.88 -> 2.66 CPU s)
    texts, as_int8, as_float = _read(hybrid, [noisy, clean])
    assert texts == [want[1], want[0]] and as_int8 > 0 and as_float > 0


def test_small_clean_images_stay_float32(pages, hybrid):
    import cv2

    small = cv2.resize(pages[0], None, fx=0.45, fy=0.45, interpolation=cv2.INTER_AREA)
    assert max(small.shape[:2]) <= 480  # half the detector's limit (960)
    texts, as_int8, as_float = _read(hybrid, [small])
    assert texts[0] and as_int8 == 0 and as_float > 0


def test_the_line_gate_reads_unsure_lines_again_in_float32(pages, hybrid, monkeypatch):
    want, read, as_float = _read(hybrid, [pages[0]])
    assert as_float == 0 and read > 0  # the gate off: no second reading
    monkeypatch.setattr(pipeline, "HYBRID_LINE", 1.01)  # every line is unsure: all again
    texts, as_int8, as_float = _read(hybrid, [pages[0]])
    assert texts == want and as_int8 == read and as_float == read


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
    builds = []

    def build(src_, tmp, timeout):  # in-process, on the tiny graph's own batches
        builds.append(tmp)
        qr.build_int8_recognizer(src_, tmp, [rng.uniform(-1, 1, (2, 3, 8, 16)).astype(
            np.float32) for _ in range(3)])

    monkeypatch.setattr(quantize, "_build_rec", build)
    heard = []
    path = qr.int8_recognizer(src, log=heard.append)
    assert path == qr.int8_rec_path(src) and path.is_file() and len(heard) == 1
    assert path.parent == tmp_path / "cache" / "ocr" and len(builds) == 1
    import onnx

    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    assert qr.int8_recognizer(src, log=heard.append) == path  # found, not built again
    assert len(builds) == 1 and len(heard) == 1


def test_a_failed_build_says_so_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx file")
    with pytest.raises(QuantizeError, match="could not be built"):  # the real subprocess
        quantize.int8_recognizer(bad, timeout=300)
    assert not any((tmp_path / "cache" / "ocr").iterdir())
