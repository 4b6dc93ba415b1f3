"""Round 36: h3's mark and warning helpers reach a reading through the pipeline
(``pipeline._assemble``): a raised footnote "1" comes back "¹" (``marks.footnote_marks``),
accented Greek dropped by the dictionary is said in ``result.warnings`` and as an
``UnreadScriptWarning`` (``script_mix.greek_warning``), and that warning points at the
user's ``skiff.ocr(...)`` line, not into the pipeline (``script_mix.user_stacklevel``).
Oracle: the drawn truth and this file's own line number."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
FONTS = Path("/usr/share/fonts")


def _line(face: str, px: int, text: str, index: int = 0):
    from PIL import Image, ImageDraw, ImageFont

    path = FONTS / face
    if not path.exists():
        pytest.skip(f"{path} not installed")
    font = ImageFont.truetype(str(path), px, index=index)
    width = int(font.getlength(text)) + 60
    im = Image.new("RGB", (width, int(px * 2.2)), "white")
    ImageDraw.Draw(im).text((30, px // 2), text, font=font, fill=0)
    return np.asarray(im)


def test_a_raised_footnote_one_reads_raised(pipe):
    img = _line("truetype/liberation2/LiberationSerif-Regular.ttf", 24, "See the notes¹ below.")
    assert pipe(img).text == "See the notes¹ below."


def test_accented_greek_is_said_in_the_result(pipe):
    img = _line("truetype/dejavu/DejaVuSans.ttf", 30, "Καλημέρα σας")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = pipe(img)
    assert "final sigma" in " ".join(result.warnings)


def test_the_unread_script_warning_names_the_users_line():
    import skiff

    img = _line("opentype/noto/NotoSansCJK-Regular.ttc", 28, "영업시간 안내", index=1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        skiff.ocr(img)
    ours = [w for w in seen if type(w.message).__name__ == "UnreadScriptWarning"]
    assert ours, [str(w.message) for w in seen]
    assert (Path(ours[0].filename).resolve(), ours[0].lineno) == \
        (Path(__file__).resolve(), line)


@pytest.mark.parametrize("text", ["https://example.org/docs/v2/install?lang=en&ref=ab12",
                                  "Travel insurance? Book it now."])
def test_a_word_ending_in_l_keeps_its_l(pipe, text):
    # a raised "?" beside a word's last "l" took the footnote pairing ("instal¹?"): only a
    # "1" read is a footnote's candidate
    img = _line("truetype/dejavu/DejaVuSans.ttf", 22, text)
    got = pipe(img).text
    assert "¹" not in got and got.replace(" ", "") == text.replace(" ", "")
