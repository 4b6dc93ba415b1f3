"""The tea label of `bench_ocr_user41.py` read through the pipeline: "净含量", not "凈含量"
(`variants.simplified_variants`, wired in `OcrPipeline._assemble`)."""

import sys
from pathlib import Path

import numpy as np


def test_the_tea_label_reads_its_simplified_jing(pipe):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_user41 import bilingual_label

    im, lines = bilingual_label()
    got = pipe(np.asarray(im.convert("RGB"))).text.splitlines()
    assert "净含量：500 mL" in got, got
    assert not any("凈" in t for t in got), got
