"""Round 38 (h3): round 36's "Tel: 021" for "Tel：021" (a full-width colon after Latin print
on a Chinese form), against rendered ground truth: the drawn colon is the oracle, the
readings given are the recognizer's on these crops (`/work/round37/h3`'s fw.py set)."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr.marks import full_width_colons

from .test_dashes_leaders_r37h3 import line_crop

NOTO = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
NOTO_SERIF = "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc"
ZENHEI = "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"


@pytest.mark.parametrize(("drawn", "read", "path", "px"), [
    ("Tel：021-5555", "Tel:021-5555", NOTO, 18),
    ("Email：li@abc.cn", "Email: li@abc.cn", NOTO_SERIF, 18),
    ("Tel：021-5555", "Tel :021-5555", ZENHEI, 40),
    ("No.：20573", "No.: 20573", NOTO, 28)])
def test_a_full_width_colon_after_latin_print(drawn, read, path, px):
    crop = line_crop(drawn, path, px)
    assert full_width_colons(read, crop, cjk_page=True) == drawn
    assert full_width_colons(read, crop, cjk_page=False) == read  # no CJK print on the page


@pytest.mark.parametrize("path", [NOTO, NOTO_SERIF, ZENHEI])
@pytest.mark.parametrize("px", [18, 28, 40])
def test_half_width_colons_stay(path, px):
    """A half-width colon stands 0.13-0.31 of the digit height from its word: it stays,
    and so do the colons of a time."""
    for text in ("Total: 12.50", "Tel: 021-5555", "Open 08:30-17:00"):
        assert full_width_colons(text, line_crop(text, path, px), cjk_page=True) == text


def test_a_colon_read_spaced_both_sides_stays():
    """"Tel : 021" as French sets it looks as a full-width colon does; read so, it stays."""
    crop = line_crop("Tel : 021-5555", ZENHEI, 28)
    assert full_width_colons("Tel : 021-5555", crop, cjk_page=True) == "Tel : 021-5555"
