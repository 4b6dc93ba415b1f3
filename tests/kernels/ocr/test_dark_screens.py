"""Light print on a dark screen (a terminal, a dark-mode editor): the text height is measured
on the light glyphs, so the detector sees the print at its target size.

On a terminal of 14-px DejaVu Sans Mono (light grey on near-black, a line every 1.45
sizes) the dark side of the local threshold held only a few shapes of the ground between
lines and words, and its height (34 px) was taken: the page was shrunk to 7-px print and
the end of a line ("--n 5") was not boxed. The oracle is the text rendered."""

from __future__ import annotations

import os

import numpy as np
import pytest

from skiff.kernels.ocr.det import estimate_text_height
from skiff.kernels.ocr.synth import char_accuracy

TERMINAL = ["user@host:~/proj$ ls -la",
            "total 24",
            "drwxr-xr-x 3 user user 4096 Dec  4 10:12 .",
            "-rw-r--r-- 1 user user  812 Dec  4 10:11 main.py",
            "user@host:~/proj$ python3 main.py --n 5",
            "Traceback (most recent call last):",
            "ValueError: n must be <= 4"]


def _terminal(fonts, size=14, ground=(12, 12, 12), ink=(200, 200, 200)):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(os.path.join(os.path.dirname(fonts["latin"]),
                                           "DejaVuSansMono.ttf"), size)
    pitch = size * 1.45
    width = int(max(face.getlength(line) for line in TERMINAL)) + 40
    img = Image.new("RGB", (width, int(pitch * len(TERMINAL)) + 40), ground)
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(TERMINAL):
        draw.text((20, 20 + i * pitch), line, font=face, fill=ink)
    # the glyphs' own height, from the font: capitals and digits, as the estimate counts them
    top, bottom = face.getbbox("Hd0")[1], face.getbbox("Hd0")[3]
    return np.asarray(img), bottom - top


@pytest.mark.parametrize("ground, ink", [((12, 12, 12), (200, 200, 200)),
                                         ((0, 20, 0), (80, 230, 80)),
                                         ((30, 30, 30), (212, 212, 212))])
def test_text_height_of_light_print_on_a_dark_screen(fonts, ground, ink):
    img, glyph = _terminal(fonts, ground=ground, ink=ink)
    grey = np.ascontiguousarray(img.mean(axis=2).astype(np.uint8))
    height = estimate_text_height(grey)
    assert height is not None and 0.7 * glyph <= height <= 1.5 * glyph, (height, glyph)
    # the same print dark on light paper measures alike
    paper = np.ascontiguousarray(255 - grey)
    assert abs(estimate_text_height(paper) - height) <= 0.35 * glyph


def test_a_terminal_is_read_to_the_ends_of_its_lines(pipe, fonts):
    img, _ = _terminal(fonts)
    (r,) = list(pipe.run([img]))
    truth = "\n".join(" ".join(line.split()) for line in TERMINAL)
    got = "\n".join(" ".join(line.split()) for line in r.text.splitlines())
    assert char_accuracy(got, truth) >= 0.98, r.text
    assert "--n 5" in r.text, r.text


C_CODE = ["int main(void) {", "    for (int i = 0; i < n; i++) {", "        if (a[i] != 0) {",
          "            s += a[i];", "        }", "    }", "    while (x) {", "        x--;",
          "    }", "    return s;", "}"]


def test_a_closing_brace_alone_on_its_line(pipe, fonts):
    """A "}" alone on its line is boxed taller than wide (1.5 x), read turned as a vertical
    line ("子", or "1" at 0.09 and dropped) and is read as it stands since it is one glyph
    high: on a dark editor at 17 px, one of the five braces came back before."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(os.path.join(os.path.dirname(fonts["latin"]),
                                           "DejaVuSansMono.ttf"), 17)
    pitch = int(17 * 1.5)
    img = Image.new("RGB", (460, 30 + pitch * len(C_CODE)), (30, 30, 30))
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(C_CODE):
        draw.text((20, 15 + i * pitch), line, font=face, fill=(220, 220, 220))
    (r,) = list(pipe.run([np.asarray(img)]))
    got = [line.strip() for line in r.text.splitlines()]
    assert got.count("}") >= 4, r.text
    assert char_accuracy("".join("".join(got).split()),
                         "".join("".join(C_CODE).split())) >= 0.98, r.text


def _liberation_mono(fonts):
    import glob

    found = glob.glob("/usr/share/fonts/truetype/liberation*/LiberationMono-Regular.ttf")
    if not found:
        pytest.skip("Liberation Mono is not installed (fonts-liberation2)")
    return found[0]


@pytest.mark.parametrize("size, dark", [(13, False), (17, True)])
def test_code_keeps_its_indentation_beside_a_lone_brace(pipe, fonts, size, dark):
    """A box of one narrow glyph ("}") is boxed about half a cell wider on its left than a
    line's first letter: taken as the page's left edge, it put every other row off the
    character grid (0.51 of a cell) and the code lost its indentation; and a "}" read
    turned (down its box) made the page count as turned. The grid's phase now comes from
    the rows led by boxes of three characters or more."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(_liberation_mono(fonts), size)
    pitch = int(size * 1.5)
    img = Image.new("RGB", (int(40 + 0.62 * size * 40), 30 + pitch * len(C_CODE)),
                    (30, 30, 30) if dark else "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(C_CODE):
        draw.text((20, 15 + i * pitch), line, font=face,
                  fill=(220, 220, 220) if dark else (20, 20, 20))
    (r,) = list(pipe.run([np.asarray(img)]))
    got = {line.strip(): len(line) - len(line.lstrip()) for line in r.text.splitlines()}
    want = {line.strip(): len(line) - len(line.lstrip())
            for line in C_CODE if len(line.strip()) >= 3}
    found = [t for t in want if t in got]
    assert len(found) >= len(want) - 1, r.text
    assert {t: got[t] for t in found} == {t: want[t] for t in found}, r.text


def test_a_faint_lone_brace_is_looked_at_again_enlarged(pipe, fonts):
    """DejaVu Sans Mono 15 on (30, 30, 30): the detector's map peaks at 0.55-0.66 over a
    "}" alone on its line and its box scores ~0.3, under box_thresh, so 4 of the 5 braces
    were never boxed (RapidOCR, enlarging the page, boxes them). Such a glyph-sized faint
    region is detected again in a window enlarged twice. The oracle is the code rendered,
    indentation included."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(os.path.join(os.path.dirname(fonts["latin"]),
                                           "DejaVuSansMono.ttf"), 15)
    pitch = int(15 * 1.5)
    img = Image.new("RGB", (int(40 + 0.62 * 15 * 40), 30 + pitch * len(C_CODE)), (30, 30, 30))
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(C_CODE):
        draw.text((20, 15 + i * pitch), line, font=face, fill=(220, 220, 220))
    (r,) = list(pipe.run([np.asarray(img)]))
    got = [line.rstrip() for line in r.text.splitlines() if line.strip()]
    assert [line.strip() for line in got].count("}") == \
        sum(line.strip() == "}" for line in C_CODE) == 4, r.text
    assert r.timings.get("faint", 0) >= 1
    assert got == [line for line in C_CODE if line.strip()], r.text
