"""Round 39 (h3's steps, wired into ``pipeline._assemble`` by the coordinator): a
spreadsheet's "–" cell the detector never boxed, a weather card's "7º" and "12°℃", a
shortcut sheet's keycaps "ctrl + c". The oracle: the rendered page's own text."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import skiff

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


def test_spreadsheet_weather_and_keycaps_read_as_drawn():
    from bench_ocr_user39 import shortcut_sheet, spreadsheet_screenshot, weather_card

    scenes = (spreadsheet_screenshot, weather_card, shortcut_sheet)
    drawn = [scene() for scene in scenes]  # read in one batch, as a user's list of pages
    results = skiff.ocr([np.asarray(img.convert("RGB")) for img, _ in drawn])
    for scene, (_, truth), r in zip(scenes, drawn, results, strict=True):
        got = r.text.split("\n")
        assert got == truth, (scene.__name__, got)
