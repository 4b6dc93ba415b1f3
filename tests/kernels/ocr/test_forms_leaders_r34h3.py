"""A menu's leader taken for a bullet, and a form's check box cut by its line's box.

Round 34 (h3, ``benchmarks/bench_ocr_user34.py``): on a menu set in Liberation Serif Bold
Italic the detector boxed each price apart from its dotted leader, and the leader's last
dot, round and solid by the x-height, was taken for a drawn bullet left out of the box
(``checkboxes._dot_before``): "Crème brûlée • 8.00" for "Crème brûlée 8.00", three prices
of four (RapidOCR 3.10 reads the leader's dots, "Lemon tart ."). A dot with another of its
size just before it, level with it, ends a leader (``checkboxes._in_leader``).

And a form's empty box "☐ No" was boxed from the frame's right side on, read "1 No"
(RapidOCR: "□No"): ``checkboxes.cut_frame_stub`` drops a first token read from a "]"
at the crop's left edge, and ``checkboxes.box_before`` looks past the box's left edge while
the ink it cuts goes on (``_cut_end``), so the frame is found whole: "☐ No". The oracle is
what was drawn."""

from __future__ import annotations

import os

import numpy as np
import pytest

from skiff.kernels.ocr.checkboxes import EMPTY, TICKED, box_before, cut_frame_stub

FONTS = "/usr/share/fonts/truetype/"
BOLD_ITALIC = FONTS + "liberation2/LiberationSerif-BoldItalic.ttf"
SERIF = FONTS + "liberation2/LiberationSerif-Regular.ttf"
SANS = FONTS + "liberation2/LiberationSans-Regular.ttf"
DEJAVU = FONTS + "dejavu/DejaVuSans.ttf"


def _font(path, size):
    from PIL import ImageFont

    if not os.path.exists(path):
        pytest.skip(f"{path} is not installed")
    return ImageFont.truetype(path, size)


def _box(l, t, r, b, pad):
    return np.array([[l - pad, t - pad], [r + pad, t - pad], [r + pad, b + pad],
                     [l - pad, b + pad]], np.float32)


def _menu_line(path, size, name="Cr\u00e8me br\u00fbl\u00e9e", price="8.00", leader=True):
    """A menu line with a dotted leader (or a gap) before its price; the price's box as the
    detector gives it when it boxes the price apart."""
    from PIL import Image, ImageDraw

    f = _font(path, size)
    img = Image.new("RGB", (int(f.getlength(name)) + 24 * size, 3 * size), (255, 250, 240))
    d = ImageDraw.Draw(img)
    y = size
    d.text((20, y), name, font=f, fill=0)
    x0 = 20 + f.getlength(name) + 0.4 * size
    x1 = img.width - 20 - f.getlength(price)
    if leader:
        d.text((x0, y), "." * int((x1 - x0 - 0.4 * size) / f.getlength(".")), font=f, fill=0)
    d.text((x1, y), price, font=f, fill=0)
    l, t, r, b = d.textbbox((x1, y), price, font=f)
    box = _box(l, t, r, b, 0.19 * size)  # as the detector pads digits: the box 1.08 em high
    box[[0, 3], 0] = l - 0.12 * size
    return np.asarray(img)[..., ::-1].copy(), box


@pytest.mark.parametrize("path", [BOLD_ITALIC, SERIF, DEJAVU])
@pytest.mark.parametrize("size", [18, 24, 28, 32])
def test_a_leaders_last_dot_is_no_bullet(path, size):
    image, box = _menu_line(path, size)
    found = box_before(image, box)
    assert found is None or found[0] != "\u2022"


@pytest.mark.parametrize("size", [20, 28])
def test_a_bullet_after_a_gap_is_still_found(size):
    """A drawn bullet with nothing level before it is still a bullet: the leader rule
    looks at dots of its size just before it only."""
    from PIL import Image, ImageDraw

    f = _font(SANS, size)
    img = Image.new("RGB", (40 * size, 3 * size), "white")
    d = ImageDraw.Draw(img)
    d.text((20, size), "Lunch", font=f, fill=0)      # a word far before, then a bullet
    tx, ty = 20 * size, size
    d.text((tx, ty), "Soup of the day", font=f, fill=0)
    top, bottom = f.getbbox("x", anchor="ls")[1], 0
    cy = ty + f.getmetrics()[0] + (top + bottom) / 2
    r = round(0.22 * size)
    cx = tx - 0.6 * size - r
    d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=0)
    l, t, rr, b = d.textbbox((tx, ty), "Soup of the day", font=f)
    found = box_before(np.asarray(img)[..., ::-1].copy(), _box(l, t, rr, b, 0.15 * (b - t)))
    assert found is not None and found[0] == "\u2022"


def _option(size, cut, ticked=False, label="No"):
    """A form's option: a square frame, then its label; the label's box as the detector
    gives it when it begins ``cut`` px inside the frame's right side (None: after it)."""
    from PIL import Image, ImageDraw

    f = _font(SANS, size)
    img = Image.new("RGB", (12 * size, 3 * size), "white")
    d = ImageDraw.Draw(img)
    side = round(size * 1.0)
    x, y = 3 * size, size
    d.rectangle((x, y, x + side, y + side), outline=0, width=2)
    if ticked:
        d.line((x + 5, y + side // 2, x + side // 2 - 1, y + side - 5), fill=0, width=2)
        d.line((x + side // 2 - 1, y + side - 5, x + side - 5, y + 5), fill=0, width=2)
    tx = x + side + round(0.5 * size)
    d.text((tx, y - 1), label, font=f, fill=0)
    l, t, r, b = d.textbbox((tx, y - 1), label, font=f)
    pad = 0.15 * (b - t)
    box = _box(l, t, r, b, pad)
    if cut is not None:
        box[[0, 3], 0] = x + side - cut
        box[[0, 1], 1] = min(box[0, 1], y - 2)
        box[[2, 3], 1] = max(box[2, 1], y + side + 2)
    return np.asarray(img)[..., ::-1].copy(), box, (x, y, x + side + 1, y + side + 1)


def _crop(image, box):
    (x0, y0), (x1, y1) = box.min(0), box.max(0)
    return image[int(round(y0)):int(round(y1)), int(round(x0)):int(round(x1))]


@pytest.mark.parametrize("size", [16, 20, 26])
@pytest.mark.parametrize("cut", [2, 3, 5])
@pytest.mark.parametrize("ticked", [False, True])
def test_a_frame_cut_by_the_box_is_found_whole(size, cut, ticked):
    image, box, (a, b, c, d) = _option(size, cut, ticked)
    found = box_before(image, box)
    assert found is not None and found[0] == (TICKED if ticked else EMPTY)
    x0, y0, x1, y1 = found[1]
    assert abs(x0 - a) <= 1 and abs(x1 - c) <= 1 and abs(y0 - b) <= 1 and abs(y1 - d) <= 1
    assert cut_frame_stub("1 No", _crop(image, box)) == "No"


@pytest.mark.parametrize("size", [16, 26])
def test_a_frame_outside_the_box_is_found_as_before(size):
    image, box, _ = _option(size, None)
    found = box_before(image, box)
    assert found is not None and found[0] == EMPTY


@pytest.mark.parametrize("text", ["1 No", "l 2 3", "I am here", "| a | b |", "1 Main Street"])
@pytest.mark.parametrize("size", [16, 24])
def test_a_line_that_begins_with_a_one_keeps_it(text, size):
    """A "1", "l", "I" or "|" drawn as the line's first character, boxed tight at it or
    with a margin, is no frame's stub."""
    from PIL import Image, ImageDraw

    for path in (SANS, SERIF, DEJAVU):
        f = _font(path, size)
        img = Image.new("RGB", (int(f.getlength(text)) + 40, 2 * size), "white")
        d = ImageDraw.Draw(img)
        d.text((20, size // 2), text, font=f, fill=0)
        l, t, r, b = d.textbbox((20, size // 2), text, font=f)
        arr = np.asarray(img)
        for left in (l, l + 1, l - 3):   # cut into the "1", tight, with a margin
            crop = arr[max(0, t - 3):b + 3, left:r + 3]
            assert cut_frame_stub(text, crop) == text, (path, left)


@pytest.fixture(scope="module")
def form_read(pipe):
    """bench_ocr_user34's form and its truth, read once by the pipeline (round 43: the two
    tests below each read it; one read shared)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_user34 import form_underlines_and_boxes

    img, truth = form_underlines_and_boxes()
    return pipe(np.asarray(img.convert("RGB"))), truth


def test_the_form_reads_its_options(form_read):
    """End to end on bench_ocr_user34's form (before: "Member: ☑ Yes 1 No")."""
    res, truth = form_read
    got = res.text.split("\n")
    assert got[-1] == truth[-1] == "Member: \u2611 Yes \u2610 No"


def test_the_menu_reads_no_bullets(pipe):
    """End to end on bench_ocr_user34's menu (before: three "• " before prices)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_user34 import menu_dotted_leaders_italic

    img, truth = menu_dotted_leaders_italic()
    got = pipe(np.asarray(img.convert("RGB"))).text
    assert "\u2022" not in got
    assert got.split("\n") == truth


def test_a_colon_read_twice_across_overlapping_boxes_is_dropped():
    """``layout.overlap_repeats`` on the boxes the detector gave bench_ocr_user34's form
    (the value's box begins 12 px inside the label's: "Date of birth:" | ": 14.03.1988")."""
    from skiff.kernels.ocr.layout import overlap_repeats

    def box(x0, y0, x1, y1):
        return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)

    boxes = [box(37, 90, 161, 114), box(149, 89, 314, 114), box(36, 30, 151, 54),
             box(158, 29, 307, 53), box(40, 150, 100, 170), box(100, 150, 160, 170)]
    texts = ["Date of birth:", ": 14.03.1988", "Full name:", ": see below", "Hall:", ":-)"]
    got = overlap_repeats([[0, 1], [2, 3], [4, 5]], boxes, texts)
    # the first pair overlaps; the second stands apart (a colon read there is drawn); the
    # third touches end to start only
    assert got == ["Date of birth:", "14.03.1988", "Full name:", ": see below", "Hall:", ":-)"]
    # a letter or a digit is never dropped, nor a turned page's stacked boxes
    assert overlap_repeats([[0, 1]], boxes[:2], ["Date of birth1", "1 4.03"]) == \
        ["Date of birth1", "1 4.03"]
    tall = [box(37, 90, 61, 300), box(37, 280, 61, 500)]
    assert overlap_repeats([[0, 1]], tall, ["Total:", ": 12"]) == ["Total:", ": 12"]


def test_the_form_reads_its_date_once(form_read):
    """End to end with the detector's boxes and readings of bench_ocr_user34's form: its
    rows joined after ``layout.overlap_repeats`` read as drawn (the pipeline joins them so
    once it calls the function; before: "Date of birth: : 14.03.1988")."""
    from skiff.kernels.ocr.layout import overlap_repeats

    res, truth = form_read
    rows: dict[int, list[int]] = {}
    for i, line in enumerate(res.lines):
        rows.setdefault(line.row, []).append(i)
    order = [rows[r] for r in sorted(rows)]
    texts = overlap_repeats(order, [np.asarray(line.box) for line in res.lines],
                            [line.text for line in res.lines])
    got = [" ".join(texts[i] for i in row) for row in order]
    assert got[:3] == truth[:3]


def _heavy_tick(size, blur):
    """A ticked box whose heavy tick touches the frame's left side and its top right corner
    (as a pen or a phone photo's blur leaves it), then "Yes"; the line's crop."""
    from PIL import Image, ImageDraw, ImageFilter

    f = _font(SANS, size)
    img = Image.new("RGB", (8 * size, 2 * size), "white")
    d = ImageDraw.Draw(img)
    side = size
    x, y = 6, size // 2
    d.rectangle((x, y, x + side, y + side), outline=0, width=2)
    w = max(3, round(size / 7))
    d.line((x + 1, y + side // 2, x + side // 2 - 1, y + side - 4), fill=0, width=w)
    d.line((x + side // 2 - 1, y + side - 4, x + side - 1, y + 1), fill=0, width=w)
    d.text((x + side + size // 2, y - 1), "Yes", font=f, fill=0)
    if blur:
        img = img.filter(ImageFilter.GaussianBlur(blur))
    return np.asarray(img)[..., ::-1].copy()


@pytest.mark.parametrize(("size", "blur"), [(18, 0), (22, 0), (28, 0), (22, 0.8), (28, 0.8)])
def test_a_heavy_tick_joined_to_its_frame_is_a_tick(size, blur):
    from skiff.kernels.ocr.checkboxes import checkbox_text

    assert checkbox_text("Yes", _heavy_tick(size, blur)) == TICKED + " Yes"


@pytest.mark.parametrize("letter", ["K", "Z", "4", "E", "T", "1", "H", "L", "7"])
@pytest.mark.parametrize("size", [18, 26])
def test_a_keycap_letter_is_still_no_tick(letter, size):
    """A letter in a frame (a keycap, "K Keep going") stays no box state."""
    from PIL import Image, ImageDraw

    from skiff.kernels.ocr.checkboxes import SIGNS, checkbox_text

    for path in (SANS, DEJAVU):
        f = _font(path, round(size * 0.8))
        img = Image.new("RGB", (8 * size, 2 * size), "white")
        d = ImageDraw.Draw(img)
        x, y = 6, size // 2
        d.rectangle((x, y, x + size, y + size), outline=0, width=2)
        d.text((x + size / 2, y + size / 2), letter, font=f, fill=0, anchor="mm")
        d.text((x + size * 1.5, y), "Keep going", font=_font(SANS, size), fill=0)
        got = checkbox_text("Keep going", np.asarray(img)[..., ::-1].copy())
        assert got[:1] not in SIGNS, (path, got)


def test_the_phone_photo_of_the_form_keeps_its_tick(pipe):
    """End to end on bench_ocr_user34's form as a phone photo (``--degrade phone``):
    before, "Member: Yes ☐ No" (the blurred tick joined its frame's left side)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import bench_ocr_user34 as bench
    from bench_ocr_probes import degrade

    k = [s.__name__ for s in bench.SCENES].index("form_underlines_and_boxes")
    img, truth = bench.form_underlines_and_boxes()
    got = pipe(np.asarray(degrade(img, "phone", k).convert("RGB"))).text.split("\n")
    assert got[-1] == truth[-1]
