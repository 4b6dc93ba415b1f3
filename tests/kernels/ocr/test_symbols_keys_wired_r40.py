"""Round 40 (h3's steps, wired into ``pipeline._assemble`` by the coordinator): a heart inside
a line on a page that reads a symbol elsewhere ("Rating ♥ 4 of 5" read "Rating 4 of 5" in
DejaVu Sans and "Rating ◆ 4 of 5" in DejaVu Serif), and the keycaps a phone photo's detector
never boxed after a "+" ("Ctrl + C", "Win + L" read "Ctrl +", "Win +"). The oracle: the
rendered page's own text."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import skiff

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


@pytest.mark.parametrize("face", ["sans", "serif"])
def test_a_symbol_inside_a_line_is_read(face):
    from bench_ocr_probes import canvas, lines_at

    im, d = canvas(520, 150, (255, 255, 255))
    truth = lines_at(d, ["\u2605 Favourites", "Rating \u2665 4 of 5"], face, 24, 20, 20, 60,
                     (20, 20, 20))
    got = skiff.ocr(np.asarray(im.convert("RGB"))).text.split("\n")
    assert got[-1] == truth[-1], got


def test_a_photographed_sheets_unboxed_keycaps_are_read():
    from bench_ocr_probes import degrade
    from bench_ocr_user39 import SCENES, shortcut_sheet

    im, truth = shortcut_sheet()
    k = [s.__name__ for s in SCENES].index("shortcut_sheet")  # the bench's photo of it
    got = skiff.ocr(np.asarray(degrade(im, "phone", k).convert("RGB"))).text.split("\n")
    for line in ("Ctrl + C Copy", "Win + L Lock screen"):
        assert line in truth and line in got, got
