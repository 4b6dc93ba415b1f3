"""A closing "}" alone on its line, in a face whose braces reach well below the baseline.

Liberation Mono's "}" spans ascender to descender: at 17 px its box is 24 px high against
the page's text height of 14.2 (1.69 times), over the 1.6 that let a box taller than wide
be read as it stands as one glyph. Read only turned a quarter (as a vertical line), it came
back "了" (0.73) or "子" (0.50, dropped). The oracle is the code rendered: every brace is
read "}" and nothing else is read in its place."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from skiff.kernels.ocr.synth import char_accuracy

CODE = ["int main(void) {", "    for (int i = 0; i < n; i++) {", "        if (a[i] != 0) {",
        "            s += a[i];", "        }", "    }", "    while (x) {", "        x--;",
        "    }", "    return s;", "}", "", "void f() {", "    g(1, [2, 3]);", "}"]


def _mono():
    found = glob.glob("/usr/share/fonts/truetype/liberation*/LiberationMono-Regular.ttf")
    if not found:
        pytest.skip("Liberation Mono is not installed (fonts-liberation2)")
    return found[0]


def _page(size, ground, ink, frame):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(_mono(), size)
    pitch = int(size * 1.5)
    img = Image.new("RGB", (int(40 + 0.62 * size * 40), 30 + pitch * len(CODE)), ground)
    draw = ImageDraw.Draw(img)
    if frame:  # the code in a box, as a document or a slide shows a listing
        draw.rectangle([6, 6, img.width - 7, img.height - 7], outline=(128, 128, 128), width=2)
    for i, line in enumerate(CODE):
        draw.text((20, 15 + i * pitch), line, font=face, fill=ink)
    return np.asarray(img)


@pytest.mark.parametrize("size, ground, ink, frame", [
    (17, (30, 30, 30), (220, 220, 220), False),
    (17, (30, 30, 30), (220, 220, 220), True),
    (15, (250, 250, 245), (30, 30, 30), True)])
def test_every_lone_brace_is_read_as_a_brace(pipe, size, ground, ink, frame):
    (r,) = list(pipe.run([_page(size, ground, ink, frame)]))
    got = [line.strip() for line in r.text.splitlines() if line.strip()]
    want = [line.strip() for line in CODE if line.strip()]
    lone = [t for t in got if len(t) <= 2]
    assert lone == ["}"] * sum(t == "}" for t in want), r.text
    assert char_accuracy("".join("".join(got).split()), "".join("".join(want).split())) >= 0.98, \
        r.text
