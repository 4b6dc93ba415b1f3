"""Japanese sets a space between a word of kana or kanji and a Latin word or a number
("ノート A5", "USB メモリ 32GB"); the recognizer reads most of those as nothing (round 43:
a receipt's "ノート A5" read "ノートA5"). In a line holding kana the ink's gap decides
(`spacing.cjk_spaces`, ``KANA_GAP``). The oracle is the renderer: the page is drawn in Noto
Serif CJK JP with the spaces it must read with, and lines set tight beside them."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

SERIF = "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc"
SPACED = ["ノート A5", "Tシャツ Mサイズ", "USB メモリ 32GB"]
TIGHT = ["7月1日から", "LINEで送る", "3月のライオン"]


def test_a_japanese_page_reads_its_spaces_beside_latin_and_digits(pipe):
    try:
        face = ImageFont.truetype(SERIF, 22)
    except OSError:
        pytest.skip("Noto Serif CJK missing")
    lines = [t for pair in zip(SPACED, TIGHT) for t in pair]
    im = Image.new("RGB", (300, 40 + 44 * len(lines)), "white")
    d = ImageDraw.Draw(im)
    for i, t in enumerate(lines):
        d.text((24, 20 + 44 * i), t, font=face, fill="black")
    got = pipe(np.asarray(im)).text.splitlines()
    assert got == lines
