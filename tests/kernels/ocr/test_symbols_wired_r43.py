"""The contact card of `bench_ocr_user43.py` read through the pipeline: the telephone, the
envelope and the heavy checks the recognizer drops are put back
(`symbol_shapes.dropped_symbols`, wired in `OcrPipeline._assemble`). The oracle is the
renderer's text of each line."""

import sys
from pathlib import Path

import numpy as np


def test_the_contact_card_keeps_its_symbols(pipe):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_user43 import contact_card_and_todo

    im, lines = contact_card_and_todo()
    got = pipe(np.asarray(im.convert("RGB"))).text.splitlines()
    for want in ("☎ 030 2345 6789", "✉ lena.fischer@example.de", "✔ Send the invitations"):
        assert want in got, got
