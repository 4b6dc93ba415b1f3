"""hOCR of a page with a flat heading over vertical CJK columns (round 35, ``hocr``).

The oracle is the drawn page: each Latin word's own ink box from PIL against the word box
``write_hocr`` gives it, and the columns' reading down (no ``textangle``: CJK characters in
a vertical column stand upright). Before, the page's direction came from the order of all
rows' first lines, the heading's among them, and the heading "Notice for 12 May" was laid
bottom to top, its words cut across its height.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from skiff.kernels.ocr.hocr import write_hocr  # noqa: E402

LATIN = "/usr/share/fonts/truetype/liberation2/LiberationSans-Bold.ttf"
CJK = "/usr/share/fonts/opentype/noto/NotoSerifCJK-Bold.ttc"


def _font(path, size):
    try:
        return ImageFont.truetype(path, size)
    except OSError:
        pytest.skip("fonts not installed")


def _quad(b):
    x0, y0, x1, y1 = b
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def page(heading: str, columns: list[str], tmp_path):
    im = Image.new("RGB", (560, 640), (255, 252, 245))
    d = ImageDraw.Draw(im)
    lf, cf = _font(LATIN, 30), _font(CJK, 34)
    d.text((40, 24), heading, font=lf, fill=0)
    words, x = {}, 40.0
    for m in re.finditer(r"\S+", heading):
        at = 40 + d.textlength(heading[:m.start()], font=lf)
        words[m.group()] = d.textbbox((at, 24), m.group(), font=lf)
    lines = [{"box": _quad(d.textbbox((40, 24), heading, font=lf)), "text": heading,
              "score": 0.99, "row": 0}]
    for j, text in enumerate(columns):
        x = 380 - j * 90
        boxes = []
        for i, ch in enumerate(text):
            d.text((x, 110 + i * 44), ch, font=cf, fill=30)
            boxes.append(d.textbbox((x, 110 + i * 44), ch, font=cf))
        b = np.array(boxes)
        lines.append({"box": _quad([b[:, 0].min(), b[:, 1].min(), b[:, 2].max(),
                                    b[:, 3].max()]), "text": text, "score": 0.98,
                      "row": j + 1})
    path = tmp_path / "notice.png"
    im.save(path)
    return str(path), lines, words


@pytest.mark.parametrize("heading", ["Notice for 12 May", "Closed on Sunday and Monday"])
def test_flat_heading_over_vertical_columns(heading, tmp_path):
    path, lines, words = page(heading, ["本日は休業します", "明日は十時開店"], tmp_path)
    out = write_hocr([{"image": path, "lines": lines}], str(tmp_path / "x.hocr"))
    text = open(out, encoding="utf-8").read()
    got = {w: tuple(map(int, b.split())) for b, w in
           re.findall(r'class="ocrx_word"[^>]*title="bbox ([0-9 ]+);[^"]*">([^<]+)<', text)}
    for word, (x0, y0, x1, y1) in words.items():
        g = got[word]
        # the word's share of the line by characters lies over its own ink, left to right
        overlap = min(x1, g[2]) - max(x0, g[0])
        assert overlap >= 0.5 * (x1 - x0), (word, g, (x0, x1))
        assert g[3] - g[1] >= y1 - y0  # the line's height, not a slice of it
    assert "textangle" not in text  # the heading lies flat, the CJK columns stand upright
