"""Round 37: h3's ``marks.en_dashes`` and ``panels.leader_stubs`` run in the pipeline
(``pipeline._assemble``): a page read with ``skiff.ocr`` gives en dashes where their ink is
an en dash's width ("Mon - Fri 8:00 -18:30" before), and no leader's first dot on its dish
("Orange juice. 4.50" before). Oracle: the text the benchmark scenes drew."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]


def _scene(module: str, name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    mod = __import__(module)
    try:
        return getattr(mod, name)()
    except OSError as exc:
        pytest.skip(f"fonts not installed: {exc}")


def _read(im) -> list[str]:
    import skiff

    return skiff.ocr(np.asarray(im.convert("RGB"))).text.split("\n")


def test_opening_hours_read_with_their_en_dashes():
    im, truth = _scene("bench_ocr_user36", "pharmacy_hours")
    assert "Mon – Fri 8:00 – 18:30" in truth
    assert _read(im) == truth


def test_a_menu_leader_leaves_no_dot_on_its_dish():
    im, truth = _scene("bench_ocr_probes", "receipt_with_leaders")
    assert "Orange juice 4.50" in truth
    assert _read(im) == truth


@pytest.mark.parametrize("text, px", [("    x--;", 15), ("i--", 15), ("    x--;", 17)])
def test_doubled_hyphens_stay_hyphens(text, px):
    """C's decrement in Liberation Mono at 15-17 px: each hyphen spans more than EN_DASH of
    the digit height, so it was written "––" (the brace-listing test in test_tall_glyphs
    read "x––;")."""
    from skiff.kernels.ocr.marks import en_dashes

    sys.path.insert(0, str(Path(__file__).parent))
    from test_dashes_leaders_r37h3 import line_crop

    mono = "/usr/share/fonts/truetype/liberation2/LiberationMono-Regular.ttf"
    assert en_dashes(text, line_crop(text, mono, px)) == text
