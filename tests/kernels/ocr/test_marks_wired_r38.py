"""Round 38 (h3's marks, wired into ``pipeline._assemble`` by the coordinator): a timetable
cell holding only "–" (a train that does not stop) was read "一", CJK one, on a page of no
CJK print; a Chinese form's "Tel：021-5555" (a full-width colon after Latin print) was read
"Tel:021-5555". The oracle: the rendered page's own text."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

import skiff

CJK = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"


def test_a_timetable_cell_of_one_dash_reads_as_a_dash():
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_user38 import timetable_no_stop

    img, truth = timetable_no_stop()
    got = skiff.ocr(np.asarray(img.convert("RGB"))).text.split("\n")
    assert "Preetz 06:19 – 06:57" in truth
    assert "Preetz 06:19 – 06:57" in got, got


@pytest.mark.skipif(not Path(CJK).exists(), reason="Noto Sans CJK (make system-deps)")
def test_a_chinese_forms_full_width_colon_after_latin_print():
    font = ImageFont.truetype(CJK, 18)
    img = Image.new("RGB", (400, 120), "white")
    draw = ImageDraw.Draw(img)
    draw.text((20, 20), "联系人：李四", font=font, fill=0)
    draw.text((20, 60), "Tel：021-5555", font=font, fill=0)
    got = skiff.ocr(np.asarray(img)).text.split("\n")
    assert got == ["联系人：李四", "Tel：021-5555"], got
