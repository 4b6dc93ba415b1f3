"""Round 36: a solid bar (a redaction, a heavy rule, a progress bar) that the recognizer
reads "___" made the unread-script warning say the line had 66-211x more print than it read
(``script_mix.unread_ink``): a bar's box is nearly all ink, a script's strokes leave most of
theirs blank. Oracle: the drawn bar (no print at all) and a drawn Hangul line (print no
shipped dictionary reads), which must still be said."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.ocr.script_mix import SOLID, unread_ink

CJK = Path("/usr/share/fonts/opentype/noto")


@pytest.mark.parametrize("thick", [6, 10, 14])
@pytest.mark.parametrize("height", [20, 30, 48])
def test_a_solid_bar_is_no_unread_print(thick, height):
    crop = np.full((height, 400, 3), 255, np.uint8)
    top = height // 2 - thick // 2
    crop[top:top + thick, 10:390] = 0
    assert unread_ink("___", crop) == 0.0
    # the same bar with every other column blank is no bar: the rule is the fill, not the text
    crop[top:top + thick, 10:390:2] = 255
    assert unread_ink("___", crop) > 0.0


@pytest.mark.parametrize("face", ["NotoSansCJK-Regular.ttc", "NotoSansCJK-Bold.ttc",
                                  "NotoSerifCJK-Bold.ttc"])
def test_hangul_print_is_still_said(face):
    from PIL import Image, ImageDraw, ImageFont

    path = CJK / face
    if not path.exists():
        pytest.skip(f"{path} not installed")
    font = ImageFont.truetype(str(path), 28, index=1)
    text = "영업시간 안내"
    im = Image.new("RGB", (int(font.getlength(text)) + 60, 62), "white")
    ImageDraw.Draw(im).text((30, 14), text, font=font, fill="black")
    crop = np.asarray(im)
    assert unread_ink("Hh", crop) > 2.0
    assert 0.5 < SOLID < 1.0
