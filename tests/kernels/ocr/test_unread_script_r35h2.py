"""A line of a script the model set does not read gives a one-line warning in the result
(round 35; round 34: "영업시간 안내" read "Hh Y品", Cyrillic read as its punctuation and
digits, ", !  120", at 0.92-0.98, both with no word). The oracle: the rendered text's
script against the sets' dictionaries (no Hangul, no Cyrillic in any)."""
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

import skiff
from skiff.kernels.ocr import OcrPipeline
from skiff.kernels.ocr.pipeline import UnreadScriptWarning
from skiff.kernels.ocr.script_mix import unread_ink

CJK = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
DV = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _line(text, font, index, size=28):
    if not font.exists():
        pytest.skip(f"{font} not installed")
    f = ImageFont.truetype(str(font), size, index=index)
    im = Image.new("RGB", (int(f.getlength(text)) + 60, int(size * 2.2)), "white")
    ImageDraw.Draw(im).text((30, size * 0.5), text, font=f, fill="black")
    return im


def test_the_shipped_dictionaries_hold_no_hangul_or_cyrillic():
    for name in ("ch", "ch-tiny"):
        chars = "".join(c for c in OcrPipeline(name).alphabet if len(c) == 1)
        assert not any(0xAC00 <= ord(c) <= 0xD7A3 or 0x0400 <= ord(c) <= 0x04FF
                       for c in chars), name
    assert "ア" in OcrPipeline("ch").alphabet and "α" in OcrPipeline("ch").alphabet


@pytest.mark.parametrize("text, font, index", [
    ("Привет, мир! Цена 120 руб.", DV, 0), ("영업시간 안내", CJK, 1)])
def test_a_line_of_an_unread_script_says_so(text, font, index):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = skiff.ocr(_line(text, font, index))
    assert len(result.warnings) == 1, (result.text, result.warnings)
    said = result.warnings[0]
    assert "\n" not in said and "does not read" in said and "%train ocr-rec" in said
    assert any(issubclass(w.category, UnreadScriptWarning) for w in caught)


@pytest.mark.parametrize("text, font, index", [
    ("营业时间说明 09:00-18:00", CJK, 2), ("お問い合わせはこちら", CJK, 0),
    ("GRAND OPENING", DV, 0), ("Angles αβ and δε", DV, 0), ("Menu ........ 3.20", DV, 0)])
def test_scripts_the_set_reads_give_no_warning(text, font, index):
    result = skiff.ocr(_line(text, font, index))
    assert result.warnings == [], (result.text, result.warnings)


def test_unread_ink_small_crops_and_blank():
    assert unread_ink("abc", np.zeros((4, 40, 3), np.uint8)) == 0.0
    assert unread_ink("", np.full((30, 200, 3), 255, np.uint8)) == 0.0
