"""Round 39 (h2): ``bench_ocr.py --stages`` names the small-print recognizer (round 38's
second opinion, :mod:`skiff.kernels.ocr.small_print`, a cache file
``<rec stem>-small-print-<digests>.onnx``) apart from the recognizer: it was counted as
``rec`` inside ``rec (read_both_ways)``, so its cost on the speed folder (a turned reading of
a clean page; session 0.08 CPU s, 2 calls 0.08 s, +37-48 MiB) was hidden. Oracles: the
cache file's name as small_print builds it, and the shipped files' names."""

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_ocr_r39h2",
                                                  ROOT / "benchmarks" / "bench_ocr.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_small_print_file_has_its_own_stage():
    bench = _bench()
    src = Path("/site/rapidocr/models/PP-OCRv6_rec_small.onnx")
    small = Path("/cache/ocr") / f"{src.stem}-small-print-6f327246f4e24533.onnx"
    assert bench._stage_key(small) == "rec-small"
    assert bench._stage_key(src) == "rec"
    assert bench._stage_key("/x/PP-OCRv6_det_small-int8.onnx") == "det"
    assert bench._stage_key("/x/ch_ppocr_mobile_v2.0_cls_infer.onnx") == "cls"


def test_small_print_calls_within_a_second_reading_get_its_row():
    bench = _bench()
    bench._STAGES.clear()
    bench._WITHIN[0] = "read_both_ways"
    try:
        bench._count_stage("rec-small", np.zeros((2, 3, 48, 100), np.float32), 0.5)
        bench._count_stage("rec", np.zeros((1, 3, 48, 100), np.float32), 0.25)
    finally:
        bench._WITHIN[0] = ""
    assert bench._STAGES["rec-small (read_both_ways)"] == {"cpu_s": 0.5, "calls": 1,
                                                           "pixels": 2 * 48 * 100}
    assert bench._STAGES["rec (read_both_ways)"]["cpu_s"] == 0.25
