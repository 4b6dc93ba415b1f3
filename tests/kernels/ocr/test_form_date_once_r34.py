"""Round 34: the pipeline drops a mark read twice across two overlapping boxes of a row
(``layout.overlap_repeats`` called in ``pipeline._assemble``). Oracle: the text drawn into
bench_ocr_user34's form ("Date of birth: 14.03.1988"; before: "Date of birth: : 14.03.1988")."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")


def test_the_pipelines_text_has_the_date_once(pipe):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_user34 import form_underlines_and_boxes

    img, truth = form_underlines_and_boxes()
    got = pipe(np.asarray(img.convert("RGB"))).text.split("\n")
    assert got[:3] == truth[:3]
    assert got[1] == "Date of birth: 14.03.1988"
