"""Round 41 (h3's `arrows.row_arrows`, wired into ``pipeline._assemble``): a boarding
pass's "HAM → LHR", its arrow unboxed by the detector. The oracle: the rendered page's own
text."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


def test_boarding_pass_reads_its_arrow(pipe):
    from bench_ocr_user41 import boarding_pass

    img, truth = boarding_pass()
    (r,) = list(pipe.run([np.asarray(img.convert("RGB"))]))
    got = [" ".join(t.split()) for t in r.text.splitlines()]
    assert "HAM \u2192 LHR" in got, got
    assert got == truth
