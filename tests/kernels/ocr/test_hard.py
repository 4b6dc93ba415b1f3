"""Hard images (issue 14, items 1 and 4): small, turned, degraded and photographed text,
seven-segment displays, Chinese in columns. Ground truth from the rendered hard set
(``synth_hard``, its own fonts, fixed seed); floors set a little below what was measured."""

from __future__ import annotations

import os

import numpy as np
import pytest

from skiff.kernels.ocr import reading_order
from skiff.kernels.ocr.deskew import boxes_back, level, off_axis, skew_angle
from skiff.kernels.ocr.rec import choose_turns, is_number, looks_turned_segments, reading_angle
from skiff.kernels.ocr.synth import char_accuracy

# measured on these 6 images a tier (seed 0): 0.59 / 1.00 / 0.97 (two of the six degraded
# images, 13-14 px Chinese, are read by no method here); the code before issue 14 read them
# at 0.30 / 1.00 / 0.63 (small images upside down or turned came back empty, and displays
# were turned upside down), before the second round of item 1 at 0.60 / 1.00 / 0.93
FLOORS = {"degraded": 0.55, "photo": 0.97, "segment": 0.93}


@pytest.fixture(scope="module")
def hard_fonts():
    from skiff.kernels.ocr.synth import FontsMissing
    from skiff.kernels.ocr.synth_hard import hard_fonts as find

    try:
        return find()
    except FontsMissing as exc:
        pytest.skip(str(exc))


def _box(x, y, w, h):
    return np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float32)


@pytest.mark.slow
def test_hard_tiers_above_floor(pipe, hard_fonts):
    from skiff.kernels.ocr.synth_hard import make_hard_set

    samples = make_hard_set(6, seed=0, tiers=tuple(FLOORS))
    results = list(pipe.run([s.image for s in samples]))
    acc: dict[str, list[float]] = {}
    for s, r in zip(samples, results, strict=True):
        assert r.error is None
        acc.setdefault(s.category, []).append(char_accuracy(r.text, s.text))
    means = {c: float(np.mean(v)) for c, v in acc.items()}
    for tier, floor in FLOORS.items():
        assert means[tier] >= floor, (tier, means)


def test_vertical_columns_read_down_and_right_to_left(pipe, hard_fonts):
    from skiff.kernels.ocr.synth_hard import make_hard_set

    samples = make_hard_set(4, seed=0, tiers=("vertical",))
    results = list(pipe.run([s.image for s in samples]))
    # measured 1.00 on each; before, every column was read but the columns left to right
    for s, r in zip(samples, results, strict=True):
        assert char_accuracy(r.text, s.text) >= 0.9, (s.lines, r.text)
        xs = [np.mean([p[0] for p in line.box]) for line in r.lines]
        assert xs == sorted(xs, reverse=True)  # the first column is the rightmost


def test_issue_cases_small_sign_and_upside_down_receipt(pipe, hard_fonts):
    """The two images of the issue that came back empty: a 215 x 142 three-line shop sign
    turned 7 degrees with a little blur and noise, and a 300 x 125 receipt line upside down
    and slightly blurred."""
    import random

    from skiff.kernels.ocr.synth_hard import (
        LATIN_FONTS,
        _compose,
        _font,
        _paper,
        _spoil,
        _text_mask,
        _turn,
    )

    rng = random.Random(14)
    sign = ["OPEN 24 HOURS", "Fresh Bread", "Coffee 3.50"]
    mask = _text_mask(sign, _font(LATIN_FONTS[0], 17), 8, 12, rng)
    canvas = np.zeros((142, 215), np.float32)
    canvas[10:10 + mask.shape[0], 30:30 + mask.shape[1]] = mask[:, :185]
    img = _spoil(_turn(_compose(canvas, _paper(142, 215, rng, False), [30] * 3), 7.0), rng,
                 0.8, 12, 60)
    r = pipe(img)
    assert char_accuracy(r.text, "\n".join(sign)) >= 0.9, r.text  # measured 1.00

    line = ["Total 42.80 Cash 50.00"]
    mask = _text_mask(line, _font(LATIN_FONTS[1], 20), 0, 0, rng)
    canvas = np.zeros((125, 300), np.float32)
    canvas[50:50 + mask.shape[0], 20:20 + mask.shape[1]] = mask
    img = _compose(canvas, _paper(125, 300, rng, False), [20] * 3)[::-1, ::-1]
    r = pipe(_spoil(np.ascontiguousarray(img), rng, 0.8, 6, 80))
    assert char_accuracy(r.text, line[0]) >= 0.9, r.text  # measured 1.00


def test_recognizer_overrules_a_sure_wrong_direction(pipe, hard_fonts):
    """A seven-segment "4185.94" the direction model is sure is upside down (seen: it came
    back as "h6581 h"): read both ways, the recognizer's surer reading wins."""
    from skiff.kernels.ocr import OcrPipeline
    from skiff.kernels.ocr.synth_hard import SEGMENT_FONTS, _compose, _font, _text_mask

    class SureDown:
        def __call__(self, batch):
            return np.tile(np.array([[0.01, 0.99]], np.float32), (len(batch), 1))

    mask = _text_mask(["4185.94"], _font(SEGMENT_FONTS[0], 36), 0, 20, _Rng())
    img = _compose(mask, np.full(mask.shape + (3,), 20.0, np.float32), [255, 60, 40])
    stubbed = OcrPipeline(device="cpu", threads=2)
    stubbed._engines = {**pipe._engines, "cls": SureDown()}
    text = stubbed(img).text
    assert not text.startswith("h") and char_accuracy(text, "4185.94") >= 0.85, text


def test_a_sure_turn_is_checked_by_reading_both_ways(pipe, hard_fonts):
    """Displays the direction model is sure are upside down, whose turned reading the
    recognizer is sure of too ("285848" read "8h8582" at 0.997, "9055.67" as "L95506",
    measured before): a turn is always read both ways, and the upright reading wins."""
    from skiff.kernels.ocr.synth_hard import render_hard

    for index in (14, 41):  # "9055.67", "285848" (the decimal point is not read: see docs)
        sample = render_hard("segment", index, seed=1)
        text = pipe(sample.image).text
        assert text.replace(".", "") == sample.text.replace(".", ""), (sample.text, text)


def test_a_displays_dropped_decimal_point_is_put_back(pipe, hard_fonts):
    """Seven-segment readings that lost their point ("-922" for "-92.2": DSEG's point sits
    tight against the digit before it); the recognizer gave the point 0.1-0.5 there."""
    from skiff.kernels.ocr.synth_hard import render_hard

    exact = 0
    for seed, index in ((1, 21), (1, 47), (2, 19), (2, 44)):  # -92.2 -61.2 -67.4 -23.2
        sample = render_hard("segment", index, seed=seed)
        text = pipe(sample.image).text
        assert text.replace(".", "") == sample.text.replace(".", ""), (sample.text, text)
        exact += text == sample.text
    # none of the four had its point before; the point's probability is near the bar on some
    # (an int8 detector built afresh moved two under it)
    assert exact >= 2


def test_a_display_read_without_its_point_is_read_again_wider(pipe, monkeypatch):
    """DSEG's point has no advance of its own: read as drawn, "62.2" came back "622";
    read again 1.3 times as wide the point has columns of its own and is kept where the
    reading is the same digits with one point between two. Integers keep their digits."""
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr import reading

    root = "/usr/share/fonts/truetype/dseg/"
    if not os.path.exists(root + "DSEG7Classic-Regular.ttf"):
        pytest.skip("fonts-dseg is not installed")

    def display(text, face, size):
        font = ImageFont.truetype(root + face, size)
        img = Image.new("RGB", (int(font.getlength(text)) + 40, size * 3), "white")
        ImageDraw.Draw(img).text((20, size), text, font=font, fill="black")
        return np.asarray(img)

    shown = [("62.2", "DSEG7Classic-Regular.ttf", 40), ("756.22", "DSEG7Classic-Regular.ttf", 32),
             ("24.5", "DSEG7Classic-Bold.ttf", 32), ("34.1", "DSEG7Classic-Italic.ttf", 40),
             ("6220", "DSEG7Classic-Regular.ttf", 40), ("75622", "DSEG7Classic-Bold.ttf", 32)]
    images = [display(*d) for d in shown]
    now = [r.text.replace(" ", "") for r in pipe.run(images)]
    monkeypatch.setattr(reading, "POINT_STRETCH", 0.0)
    before = [r.text.replace(" ", "") for r in pipe.run(images)]
    points = [d[0] for d in shown if "." in d[0]]
    assert sum(b == t for b, t in zip(before, points)) <= 1, before  # the point dropped
    assert now[:len(points)] == points
    assert now[len(points):] == [d[0] for d in shown if "." not in d[0]]


def test_a_display_read_with_a_digit_once_is_read_again_wider(pipe, monkeypatch):
    """DSEG's right-set "1"s side by side fall in neighbouring recognizer columns: "1111"
    came back "111", "11:15" "1:15". Read again 1.3 times as wide each has columns of its
    own; a reading that only doubles digits the first had once is kept. Numbers in an
    ordinary font with doubled digits read the same either way."""
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr import reading

    root = "/usr/share/fonts/truetype/dseg/"
    plain = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    if not os.path.exists(root + "DSEG7Classic-Regular.ttf") or not os.path.exists(plain):
        pytest.skip("fonts-dseg or fonts-dejavu-core is not installed")

    def display(text, face, size):
        font = ImageFont.truetype(face if face.startswith("/") else root + face, size)
        x0, y0, x1, y1 = font.getbbox(text)
        pad = size // 2
        img = Image.new("L", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), 235)
        ImageDraw.Draw(img).text((pad - x0, pad - y0), text, font=font, fill=20)
        return np.stack([np.asarray(img)] * 3, -1)

    shown = [("1111", "DSEG7Classic-Regular.ttf", 40), ("1111", "DSEG7Modern-Regular.ttf", 40),
             ("1111", "DSEG7Classic-Bold.ttf", 24), ("1111", "DSEG7Modern-Regular.ttf", 64),
             ("11:15", "DSEG7Classic-Bold.ttf", 40), ("11.173", "DSEG7Classic-Bold.ttf", 40)]
    ordinary = [("1100", plain, 18), ("2200", plain, 24), ("1111", plain, 14), ("330", plain, 30),
                ("11:15", plain, 16), ("1.1", plain, 20)]
    images = [display(*d) for d in shown + ordinary]
    monkeypatch.setattr(reading, "TRIM_KEEP", 1.0)  # the stretch alone (no trimmed re-read)
    now = [r.text.replace(" ", "") for r in pipe.run(images)]
    monkeypatch.setattr(reading, "POINT_STRETCH", 0.0)
    before = [r.text.replace(" ", "") for r in pipe.run(images)]
    assert sum(b == d[0] for b, d in zip(before, shown)) <= 1, before  # a "1" lost
    assert sum(n == d[0] for n, d in zip(now, shown)) >= 5, now
    assert now[len(shown):] == before[len(shown):] == [d[0] for d in ordinary]


def test_a_lone_display_one_is_read_as_it_stands(pipe, monkeypatch):
    """A seven-segment "1" alone is two bars one above the other, boxed taller than wide
    and so read turned a quarter: "--". A column of text is no row of dashes: such a box is
    read again as it stands (columns of text: test_vertical_columns_read_down_and_right_to_left)."""
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr import reading

    root = "/usr/share/fonts/truetype/dseg/"
    if not os.path.exists(root + "DSEG7Classic-Regular.ttf"):
        pytest.skip("fonts-dseg is not installed")

    def display(face, size):
        font = ImageFont.truetype(root + face, size)
        x0, y0, x1, y1 = font.getbbox("1")
        pad = size // 2
        img = Image.new("L", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), 235)
        ImageDraw.Draw(img).text((pad - x0, pad - y0), "1", font=font, fill=20)
        return np.stack([np.asarray(img)] * 3, -1)

    shown = [("DSEG7Classic-Regular.ttf", 20), ("DSEG7Classic-Italic.ttf", 20),
             ("DSEG7Modern-Regular.ttf", 20), ("DSEG7Classic-Bold.ttf", 28)]
    images = [display(*d) for d in shown]
    # a "1" boxed apart after its digit reads after it, as a line across (a tall box read as
    # it stands is no column read down)
    font = ImageFont.truetype(root + "DSEG7Classic-Italic.ttf", 40)
    img = Image.new("L", (105, 80), 235)
    ImageDraw.Draw(img).text((20 - font.getbbox("81")[0], 20 - font.getbbox("81")[1]), "81",
                             font=font, fill=20)
    got = next(iter(pipe.run([np.stack([np.asarray(img)] * 3, -1)])))
    assert got.text.replace(" ", "") == "81", got.text
    now = [r.text.replace(" ", "") for r in pipe.run(images)]
    monkeypatch.setattr(reading, "DASHES", frozenset())
    before = [r.text.replace(" ", "") for r in pipe.run(images)]
    assert sum(b == "1" for b in before) <= 1, before
    assert sum(n == "1" for n in now) >= 3, now


def test_bars_read_as_they_stand_make_no_new_line(pipe, monkeypatch):
    """Bars with no text (rules, ticks, stacked pieces) read as dashes under ``min_score``
    are dropped; read again as they stand they would come back "1" and surer: the rule
    reads again only dash lines that are kept, so it adds no line."""
    import random

    import cv2

    from skiff.kernels.ocr import reading

    rng = random.Random(0)
    images = []
    for i in range(24):
        w, h = rng.randint(200, 700), rng.randint(150, 600)
        img = np.full((h, w, 3), rng.randint(180, 255), np.uint8)
        ink = tuple(rng.randint(0, 90) for _ in range(3))
        for _ in range(rng.randint(1, 8)):
            x, y = rng.randint(5, w - 10), rng.randint(0, h // 2)
            size = rng.randint(10, 30)
            cv2.rectangle(img, (x, y), (x + rng.randint(1, 6), y + size), ink, -1)
            if i % 2:  # a second piece below: a seven-segment "1" without a display
                cv2.rectangle(img, (x, y + size + 3), (x + 4, y + 2 * size + 3), ink, -1)
        if rng.random() < 0.3:
            noise = np.random.default_rng(i).normal(0, 15, img.shape)
            img = np.clip(img + noise, 0, 255).astype(np.uint8)
        images.append(img)
    # the first five of the 24 drawn (two noisy, single and stacked bars): image 3 is the one
    # that gains a line where dash lines under min_score are read again too (round 40,
    # measured: 1 line against 0; no other of the 24 does); the 24 took ~65 CPU s, these ~11
    # (round 46, h2: image 3 alone, the one case that tells, ~1/5 of the five's 6 CPU s; the
    # other four gained no line either way, so the equality below checked nothing on them)
    images = images[3:4]
    with_rule = sum(len(r.lines) for r in pipe.run(images))
    monkeypatch.setattr(reading, "DASHES", frozenset())
    assert sum(len(r.lines) for r in pipe.run(images)) == with_rule


def test_a_grid_of_dashes_is_no_text(pipe, monkeypatch):
    """A form's dashed borders read as rows of spaced dashes ("- - - - -"), lines with no
    text: dropped. A solid run and dashes beside text stay (`rec.is_rule_line`)."""
    import cv2

    from skiff.kernels.ocr import pipeline
    from skiff.kernels.ocr.rec import is_rule_line

    assert is_rule_line("- - - - -") and is_rule_line("— — —") and is_rule_line(". . . .")
    assert is_rule_line("\u2212 - \u2212 - -")  # the minus sign: a grid read so was kept
    assert not is_rule_line("-----") and not is_rule_line("- 3 -") and not is_rule_line("- -")
    assert not is_rule_line("Total - - 3.50")
    images = []
    for step, ink in ((14, 40), (20, 70), (26, 20)):
        img = np.full((300, 420, 3), 240, np.uint8)
        for r in range(10, 290, step):
            for c in range(10, 400, step):
                cv2.line(img, (c, r), (c + step // 2, r), (ink, ink, ink), 1)
        images.append(img)
    # the lines the page's filter drops as rules, counted in the same run (round 43: a second
    # run with the rule off, to count the lines it keeps then, took 9 of the test's 13 s: its
    # 14-px grid read as JPEG grain is read again denoised there)
    dropped = []
    real = pipeline.is_rule_line
    monkeypatch.setattr(pipeline, "is_rule_line",
                        lambda text: real(text) and (dropped.append(text) or True))
    results = list(pipe.run(images))
    now = sum(len(r.lines) for r in results)
    # its rows of unsure dashes, all rules, ask for no denoised second reading (the
    # 14-px grid's pattern reads as JPEG grain: three readings more, 7 s instead of 3)
    assert "denoised" not in results[0].timings and "noise" not in results[0].timings
    assert all(is_rule_line(t) for t in dropped)
    kept = [line.text for r in results for line in r.lines]
    assert not any(is_rule_line(t) for t in kept), kept
    # measured 39 lines without the rule -> 21, -> 7 with U+2212: 32 dropped
    assert len(dropped) >= 10, (now, dropped)


def test_doubled_digits_rule():
    from skiff.kernels.ocr.reading import doubles_digits

    assert doubles_digits("1111", "111") and doubles_digits("1100", "100")
    assert doubles_digits("11:311", "1:31")
    assert doubles_digits("1101", "101") and not doubles_digits("111", "111")
    assert not doubles_digits("1.01", "101") and not doubles_digits("1011", "1101")
    assert not doubles_digits("1200", "100") and not doubles_digits("11", "111")


def test_decimal_point_rules():
    from skiff.kernels.ocr.rec import POINT_P, decimal_point

    a = ["", "1", "2", "3", ".", "-", "a", " "]
    p = np.zeros((9, len(a)))
    p[[0, 4, 8], [5, 1, 2]] = 1.0  # "-", "1", "2" at frames 0, 4, 8; blanks between
    p[[1, 2, 3, 5, 6, 7], 0] = 0.9
    p[6, 4] = POINT_P + 0.01  # the point between "1" and "2"
    p[2, 4] = 0.5  # more probable, but between "-" and "1": not between two digits
    assert decimal_point("-12", p, a) == "-1.2"
    p[6, 4] = POINT_P - 0.01
    assert decimal_point("-12", p, a) == "-12"  # not sure enough
    p[6, 4] = 0.3
    assert decimal_point("-1a", p, a) == "-1a"  # not a number
    assert decimal_point("-1.2", p, a) == "-1.2"  # has its point
    assert decimal_point("-13", p, a) == "-13"  # not what these frames read


def _drawn(text, face, size=30, ink=0, ground=255):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(face, size)
    img = Image.new("L", (int(font.getlength(text)) + 16, size + 12), ground)
    ImageDraw.Draw(img).text((8, 4), text, font=font, fill=ink)
    return np.asarray(img)


def test_cell_spaces_rules(hard_fonts):
    """A display's right-set "1" read as a space and a digit: the space goes where the
    glyphs stand in steady cells (dark on light and light on dark, a clock's colon); a
    real space in ordinary fonts, a display's blank cell, evenly spaced digits and a
    reading short of a digit keep theirs."""
    from skiff.kernels.ocr.spacing import cell_spaces
    from skiff.kernels.ocr.synth import fonts

    seg = "/usr/share/fonts/truetype/dseg/DSEG7Classic-Regular.ttf"
    if not os.path.exists(seg):
        pytest.skip("fonts-dseg is not installed")
    assert cell_spaces("635 143", _drawn("635143", seg)) == "635143"
    assert cell_spaces("969 170", _drawn("969170", seg, 18, 230, 30)) == "969170"
    assert cell_spaces("1 1:31", _drawn("11:31", seg)) == "11:31"
    assert cell_spaces("- 12.5", _drawn("-12.5", seg)) == "-12.5"
    assert cell_spaces("12 34", _drawn("12!34", seg)) == "12 34"  # "!": DSEG's blank cell
    assert cell_spaces("309 .91", _drawn("3091.91", seg)) == "309 .91"  # a digit short
    assert cell_spaces("Lot 143", _drawn("Lot143", seg)) == "Lot 143"  # not a number
    f = fonts()
    mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
    for face in (f["latin"], f["serif"], mono):
        for text in ("7946 1018", "4111 1111 1111", "2026 11 28", "3 1 4", "12:30 1.5"):
            for size in (14, 30):
                assert cell_spaces(text, _drawn(text, face, size)) == text, (face, text)


class _Rng:
    def randint(self, a, b):
        return a


def test_choose_turns_by_page_and_crop():
    kept = [("h6581 h", 0.62), ("Total", 0.95), ("", 0.0)]
    turned = [("4185.94", 0.97), ("lɐʇoꓕ", 0.40), ("Cash", 0.90)]
    # one crop on page 0: the surer reading wins
    assert choose_turns(kept[:1], turned[:1], [100], [0]).tolist() == [True]
    # two on page 1: the wide one stays; the one read as nothing turns even so
    assert choose_turns(kept[1:], turned[1:], [300, 60], [1, 1]).tolist() == [False, True]
    # a small gain on a page that votes the other way is not enough
    assert choose_turns([("ab", 0.80), ("Total", 0.95)], [("qe", 0.85), ("lɐʇoꓕ", 0.40)],
                        [60, 300], [0, 0]).tolist() == [False, False]


def test_choose_turns_leans_upright_for_numbers_only():
    # a display's digits read almost as surely either way: the image's own way up wins
    assert not choose_turns([("-25.8", 0.91)], [("852-", 0.99)], [100], [0],
                            flipped=[False], prior=0.1)[0]
    assert not choose_turns([("找零", 0.80)], [("234", 0.88)], [100], [0],
                            flipped=[False], prior=0.1)[0]
    # words turned upside down read as garble: the surer reading wins, no lean
    assert choose_turns([("6688 5h2 5PM", 0.81)], [("W密码8899", 0.92)], [100], [0],
                        flipped=[False], prior=0.1)[0]
    assert is_number("-25.8") and is_number("12:05") and not is_number("B12")
    assert not is_number("") and not is_number("--")


def test_choose_turns_leans_to_the_number_over_turned_segments():
    """A display the direction model turned reads "h9589E" (3, 4 and 7 upside down read
    as E, h and L) a little more surely than its digits: the number wins, either way up."""
    assert looks_turned_segments("h9589E") and looks_turned_segments("h6581 h")
    assert not looks_turned_segments("3685.64") and not looks_turned_segments("Exit 4")
    assert not looks_turned_segments("HELLO") and not looks_turned_segments("")
    back = ([("h9589E", 0.99)], [("3685.64", 0.92)], [100], [0])
    assert not choose_turns(*back, flipped=[True], prior=0.1)[0]  # the upright lean alone
    assert choose_turns(*back, flipped=[True], prior=0.1, segments=0.1)[0]
    stay = ([("3685.64", 0.83)], [("h9589E", 0.99)], [100], [0])
    assert choose_turns(*stay, flipped=[False], prior=0.1)[0]
    assert not choose_turns(*stay, flipped=[False], prior=0.1, segments=0.1)[0]
    # words are not numbers: no lean either way
    assert choose_turns([("Exit", 0.80)], [("h 12E", 0.90)], [100], [0], flipped=[False],
                        prior=0.1, segments=0.1)[0]


def test_skew_angle_and_level_round_trip(fonts):
    from skiff.kernels.ocr.synth import _rotate, render_page

    page = render_page(["Invoice number 20481", "Total amount 1,284.50", "Thank you"],
                       size=20, seed=1)
    gray = _rotate(page, 23.0).mean(axis=2).astype(np.uint8)  # turned counter-clockwise
    angle, contrast = skew_angle(gray)
    assert abs(angle + 23.0) < 1.0 and contrast > 1.5, (angle, contrast)
    assert off_axis(-23.0) == pytest.approx(23.0) and off_axis(88.0) == pytest.approx(2.0)

    flat, m = level(np.asarray(gray), angle)
    box = _box(flat.shape[1] / 2 - 60, flat.shape[0] / 2 - 10, 120, 20)  # inside the page
    back = boxes_back([(box, 0.9)], m, gray.shape)[0][0]
    ones = np.hstack([back, np.ones((4, 1), np.float32)])
    assert np.allclose(ones @ m.T, box, atol=1e-3)  # the turned image's box again
    assert abs(np.degrees(reading_angle(back, False)) - (-23.0)) < 1.0


def test_reading_order_follows_the_reading_direction():
    columns = [_box(0, 0, 20, 120), _box(100, 0, 20, 120), _box(50, 0, 20, 120)]
    down = [np.pi / 2] * 3  # Chinese columns: read down, the rightmost first
    assert reading_order(columns, angles=down) == [1, 2, 0]
    up = [-np.pi / 2] * 3  # a page turned a quarter counter-clockwise: read up, the leftmost first
    assert reading_order(columns, angles=up) == [0, 2, 1]
    rows = [_box(0, 60, 200, 20), _box(0, 0, 200, 20)]
    assert reading_order(rows, angles=[0.0, 0.0]) == [1, 0]
    assert reading_order(rows, angles=[np.pi, np.pi]) == [0, 1]  # upside down


def test_lines_across_and_columns_down_on_one_page():
    """A page whose lines read two ways: the columns are read together, right to left, after
    the rows across above them; a column is never a cell of a row beside it."""
    from skiff.kernels.ocr.layout import reading_rows

    across, down = 0.0, np.pi / 2
    # a Chinese page in columns: a heading across, three columns, a page number across
    page = [_box(150, 15, 160, 30), _box(340, 80, 30, 300), _box(480, 80, 30, 300),
            _box(410, 80, 30, 300), _box(280, 420, 60, 20)]
    angles = [across, down, down, down, across]
    assert reading_rows(page, angles=angles) == [[0], [2], [3], [1], [4]]
    # a poster: three lines across and a column to their right, level with the second
    poster = [_box(40, 60, 260, 30), _box(40, 120, 260, 30), _box(620, 100, 30, 250),
              _box(40, 180, 260, 30)]
    rows = reading_rows(poster, angles=[across, across, down, across])
    assert rows == [[0], [2], [1], [3]]  # the column joined the second row's cells before
    # a table turned by a quarter: its one-character cells (square boxes) stay in their rows
    turned = [_box(100 - 40 * c, 10 + 60 * r, 20, 50 if c else 20) for r in range(3)
              for c in range(2)]
    rows = reading_rows(turned, angles=[down] * 6)
    assert sorted(len(r) for r in rows) == [3, 3] and all(
        len({turned[i][0, 0] for i in r}) == 1 for r in rows)


def test_a_charts_axis_label_reading_up_is_laid_out_apart_from_its_rows():
    """A bar chart's y-axis label turned to read up: it was neither across nor down, joined
    the lines across and turned their rows a few degrees (the title became a cell of the
    "20" tick's row, each month label a row of its own; round 24, a user's probe)."""
    from skiff.kernels.ocr.layout import reading_rows

    title = _box(250, 10, 250, 28)
    ticks = [_box(55, 410 - 85 * i, 20, 18) for i in range(5)]  # 0, 20, 40, 60, 80
    months = [_box(150 + 120 * i, 430, 34, 18) for i in range(5)]
    label = _box(12, 120, 26, 250)  # "Sales (thousands)", reading up
    boxes = [title, *ticks, *months, label]
    angles = [0.0] * 11 + [-np.pi / 2]
    rows = reading_rows(boxes, angles=angles)
    assert rows[0] == [0]                        # the title first, alone
    assert rows[-2] == [6, 7, 8, 9, 10]          # the months one row, left to right
    assert rows[-1] == [11]                      # the label after the page's rows
    assert all(len(r) == 1 for r in rows[:-2])


def test_a_page_of_columns_with_a_heading_and_a_poster_with_a_column(pipe, hard_fonts):
    """Rendered: the heading first, then the columns right to left (before, the heading
    came last: the page took the columns' direction); the poster's column read on its own
    (before, it was read as the end of the line level with it)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(hard_fonts["cjk"][0][0], 28, index=hard_fonts["cjk"][0][1])
    cols = ["天地玄黄宇宙洪荒", "日月盈昃辰宿列张", "寒来暑往秋收冬藏"]
    img = Image.new("RGB", (600, 470), "white")
    draw = ImageDraw.Draw(img)
    draw.text((150, 15), "第一章开始", font=font, fill="black")
    for c, col in enumerate(cols):
        for i, ch in enumerate(col):
            draw.text((480 - 70 * c, 80 + 40 * i), ch, font=font, fill="black")
    draw.text((280, 420), "第 12 页", font=font, fill="black")
    text = pipe(np.asarray(img)).text.replace(" ", "")
    assert text.split("\n") == ["第一章开始", *cols, "第12页"], text
    lines = ["今日特价商品一览", "全场八折优惠进行中", "营业时间上午九点"]
    img = Image.new("RGB", (700, 420), "white")
    draw = ImageDraw.Draw(img)
    for i, ch in enumerate("春风得意马蹄疾"):
        draw.text((620, 20 + 36 * i), ch, font=font, fill="black")
    for i, line in enumerate(lines):
        draw.text((40, 60 + 60 * i), line, font=font, fill="black")
    text = pipe(np.asarray(img)).text
    assert text.split("\n") == ["春风得意马蹄疾", *lines], text


def test_join_fragments_joins_a_split_row_only():
    from skiff.kernels.ocr.det import join_fragments

    row = (_box(60, 10, 120, 60), 0.8)
    # the "-1" of a seven-segment "-17.5" boxed apart, overlapping the row: one box
    joined = join_fragments([(_box(16, 12, 80, 58), 0.7), row])
    assert len(joined) == 1 and joined[0][1] == 0.8
    assert np.allclose(joined[0][0].min(0), [16, 10]) and np.allclose(joined[0][0].max(0),
                                                                       [180, 70])
    # a lone glyph just before the row, within its height: joined too
    assert len(join_fragments([(_box(25, 30, 25, 15), 0.9), row])) == 1
    # a line's last "." boxed apart, 3 px into the row's end: joined
    assert len(join_fragments([row, (_box(177, 40, 20, 20), 0.9)])) == 1
    # separate lines of a page, a far word, columns and lines turned 4 degrees stay apart
    lines = [(_box(10, 10, 300, 20), 0.9), (_box(10, 36, 300, 20), 0.9)]
    assert len(join_fragments(lines)) == 2
    assert len(join_fragments([(_box(0, 10, 20, 60), 0.9), row])) == 2  # 0.67 heights off
    assert len(join_fragments([row, (_box(220, 10, 60, 60), 0.9)])) == 2
    cols = [(_box(0, 0, 20, 120), 0.9), (_box(24, 0, 20, 120), 0.9)]
    assert len(join_fragments(cols)) == 2
    from skiff.kernels.ocr.det import order_points

    def turned(x, y, w, h, deg):
        import cv2

        return order_points(cv2.boxPoints(((x + w / 2, y + h / 2), (w, h), deg)))

    tilted = [(turned(10, 10, 400, 24, 4.0), 0.9), (turned(10, 40, 400, 24, 4.0), 0.9)]
    assert len(join_fragments(tilted)) == 2
    # a caption inside the box the detector drew round the picture above it: no piece of
    # that box (joined, the caption was read with the picture as one character)
    picture, caption = (_box(0, 0, 640, 472), 0.89), (_box(78, 420, 430, 19), 0.79)
    assert len(join_fragments([caption, picture])) == 2
    assert len(join_fragments([picture, caption])) == 2


def test_noise_sigma_of_grey_levels(fonts):
    from skiff.kernels.ocr.denoise import noise_sigma
    from skiff.kernels.ocr.synth import render_page

    rng = np.random.default_rng(0)
    for sigma in (10.0, 20.0):
        img = np.clip(128 + rng.normal(0, sigma, (200, 300, 3)), 0, 255).astype(np.uint8)
        grey = sigma / np.sqrt(3)  # the mean of three channels' independent noise
        assert abs(noise_sigma(img) - grey) < 0.25 * grey, (sigma, noise_sigma(img))
    page = render_page(["Invoice number 20481", "Total amount 1,284.50"], size=20, seed=1)
    assert noise_sigma(page) < 0.5  # a rendered page: its paper is flat


def test_small_noisy_image_read_again_denoised(pipe, hard_fonts, monkeypatch):
    """A 15 px Chinese line under noise and JPEG blocks: its first reading is unsure and
    wrong in one character ("疏金支付", measured); read again smoothed, it is right."""
    from skiff.kernels.ocr import denoise as module
    from skiff.kernels.ocr.synth_hard import render_hard

    sample = render_hard("degraded", 43, seed=1)  # "现金支付", 15 px serif, turned 125°
    monkeypatch.setattr(pipe, "words", False)  # (words mend "疏金" too: test_words_mend_...)
    r = pipe(sample.image)
    assert r.timings.get("denoised") in ("gauss", "bilateral"), r.timings
    assert char_accuracy(r.text, sample.text) == 1.0, r.text
    monkeypatch.setattr(module, "NOISY", float("inf"))  # no second reading
    monkeypatch.setattr(module, "GRAIN", float("inf"))
    first = pipe(sample.image)
    assert "denoised" not in first.timings
    assert char_accuracy(first.text, sample.text) < 1.0, first.text


def test_blurred_noisy_sign_read_again_sharpened(pipe, hard_fonts, monkeypatch):
    """A 17 px brush-font sign, blurred before its noise and JPEG blocks: smoothed it reads
    "水果提菜" (measured); smoothed and sharpened again, right."""
    from skiff.kernels.ocr import denoise as module
    from skiff.kernels.ocr.synth_hard import render_hard

    sample = render_hard("degraded", 1, seed=2)  # "水果蔬菜", AR PL UKai, turned 3.8°
    monkeypatch.setattr(pipe, "words", False)
    r = pipe(sample.image)
    assert r.timings.get("denoised") == "sharpened", r.timings
    assert char_accuracy(r.text, sample.text) == 1.0, r.text
    twins = module.denoised_twins
    monkeypatch.setattr(module, "denoised_twins", lambda bgr: twins(bgr)[:2])
    smoothed = pipe(sample.image)
    assert smoothed.timings.get("denoised") in ("gauss", "bilateral"), smoothed.timings
    assert char_accuracy(smoothed.text, sample.text) < 1.0, smoothed.text


def test_words_mend_unsure_lines(pipe, hard_fonts, monkeypatch):
    """Small noisy lines the recognizer reads unsurely and wrong in a character or two are
    mended by what text usually says (skiff.kernels.ocr.beam), and read as the recognizer
    gave them with ``words=False`` (measured: "疏金支付", "谢南惠项", "Ext Oudy")."""
    from skiff.kernels.ocr import denoise as module
    from skiff.kernels.ocr import reading
    from skiff.kernels.ocr.synth_hard import render_hard

    monkeypatch.setattr(module, "NOISY", float("inf"))  # no denoised second readings
    monkeypatch.setattr(module, "GRAIN", float("inf"))
    monkeypatch.setattr(reading, "TRIM_KEEP", 1.0)  # nor trimmed ones (round 30): words alone
    samples = [render_hard("degraded", i, seed=1) for i in (43, 31, 6)]
    mended = [pipe(s.image).text for s in samples]
    monkeypatch.setattr(pipe, "words", False)
    as_read = [pipe(s.image).text for s in samples]
    for s, a, b in zip(samples, mended, as_read, strict=True):
        assert char_accuracy(a, s.text) > char_accuracy(b, s.text), (s.text, a, b)


def test_denoised_twins_smooth_then_sharpen():
    from skiff.kernels.ocr.denoise import denoised_twins

    rng = np.random.default_rng(0)
    img = np.full((60, 120, 3), 200, np.uint8)
    img[20:40, 30:90] = 40  # a dark bar
    noisy = np.clip(img + rng.normal(0, 25, img.shape), 0, 255).astype(np.uint8)
    names = [name for name, _ in denoised_twins(noisy)]
    assert names == ["gauss", "bilateral", "sharpened"]
    got = dict(denoised_twins(noisy))
    flat = (slice(2, 15), slice(5, 115))  # paper only
    for name in names:  # each is quieter than the noisy image on plain paper
        assert got[name][flat].std() < 0.7 * noisy[flat].std(), name
    assert got["gauss"][flat].std() < 0.4 * noisy[flat].std()

    def steepest(a):  # the bar's left edge, across its rows' mean
        return np.abs(np.diff(a[22:38, 10:50].astype(float).mean((0, 2)))).max()

    assert steepest(got["sharpened"]) > 1.5 * steepest(got["gauss"])


def test_lines_run_into_a_broad_shape_are_cut_out():
    """Detector maps: three lines, two of them crossed by a broad diagonal band (a pale
    watermark), and one line with a stroke's spur on its end. Each such region was one
    mostly empty rectangle, dropped with its lines; the lines come out level and thin."""
    import cv2

    from skiff.kernels.ocr.det import DetParams, db_boxes

    prob = np.zeros((200, 400), np.float32)
    for y in (40, 90, 140):
        prob[y:y + 7, 20:300] = 0.9
    cv2.line(prob, (150, 190), (380, 20), 0.9, thickness=30)
    boxes = db_boxes(prob, prob.shape, prob.shape, DetParams())
    level = [b for b, _ in boxes if np.ptp(b[:, 1]) < 20 and np.ptp(b[:, 0]) > 150]
    assert len(level) == 3, [b.round().tolist() for b, _ in boxes]
    centres = sorted(float(b[:, 1].mean()) for b in level)
    assert np.allclose(centres, [43, 93, 143], atol=2), centres

    spur = np.zeros((120, 500), np.float32)
    spur[50:57, 20:460] = 0.9
    cv2.line(spur, (455, 53), (470, 10), 0.9, thickness=6)
    boxes = db_boxes(spur, spur.shape, spur.shape, DetParams())
    assert any(np.ptp(b[:, 1]) < 20 and np.ptp(b[:, 0]) > 380 for b, _ in boxes), \
        [b.round().tolist() for b, _ in boxes]


def test_dot_matrix_print_reads_as_lines(pipe, fonts):
    """Print made of separate dots (a receipt from an impact printer, an LED sign) reads as
    its lines: measured 1.000 / 0.943 on the benchmark's two such scenes where RapidOCR,
    whose detector boxes the dots in clusters, reads 0.094 / 0.686."""
    from skiff.kernels.ocr.synth import render_dot_matrix

    receipt = ["SUBTOTAL 39.60", "CASH 50.00"]
    got = pipe(render_dot_matrix(receipt, fonts["latin"])).text
    assert char_accuracy(got, "\n".join(receipt)) >= 0.95, got
    sign = ["NEXT STOP: CENTRAL"]
    got = pipe(render_dot_matrix(sign, fonts["latin"], rows=10, pitch=5, ink=(255, 170, 0),
                                 ground=(14, 14, 14))).text
    assert char_accuracy(got, sign[0]) >= 0.95, got


def _grainy_page():
    """A 1079 px page of eight 15-px lines, blurred, under noise and strong JPEG."""
    import random

    from skiff.kernels.ocr.synth import _degrade, _draw_page, fonts

    lines = ["GPU 显存 80GB 可用", "第 3 章 Neural Networks 简介", "模型 PP-OCR 识别中文和 English",
             "下载 skiff 并运行 make test", "订单号 A1024 已发货", "温度 23.5 度 湿度 40%",
             "联系邮箱 info@example.com", "使用 Python 3.11 运行测试"]
    rng = random.Random(2)
    page = _draw_page(lines, fonts()["cjk"], 15, rng, page_width=1079)
    return _degrade(page, rng), "\n".join(lines)


def test_grain_measures_jpeg_smoothed_noise(fonts):
    from skiff.kernels.ocr.denoise import GRAIN, NOISY, grain_sigma, noise_sigma
    from skiff.kernels.ocr.synth import render_page

    image, _ = _grainy_page()
    assert noise_sigma(image) < NOISY <= grain_sigma(image) * NOISY / GRAIN  # JPEG hid it
    assert grain_sigma(image) >= GRAIN
    page = render_page(["Invoice number 20481", "Total amount 1,284.50"], size=20, seed=1)
    assert grain_sigma(page) < 0.5


def test_a_grainy_page_read_unsurely_is_read_again_denoised(pipe, fonts, monkeypatch):
    """A page over half the detector's side, most of it read unsurely under grain that JPEG
    smoothed (noise_sigma reads it under NOISY): read again from denoised copies (measured:
    0.23 -> 0.45 of its characters; a person reads its Latin and a little of its CJK)."""
    from skiff.kernels.ocr import denoise as module

    image, truth = _grainy_page()
    assert max(image.shape[:2]) > pipe.params.limit / 2
    # the sharpened twin alone, the one the three-twin reading keeps (measured): its choice
    # among the twins is test_blurred_noisy_sign_read_again_sharpened's; the page read twice
    # more cost 5 of this test's 10 CPU s (round 46, h2)
    twins = module.denoised_twins
    monkeypatch.setattr(module, "denoised_twins",
                        lambda bgr: [t for t in twins(bgr) if t[0] == "sharpened"])
    r = pipe(image)
    assert r.timings.get("denoised") == "sharpened", r.timings
    monkeypatch.setattr(module, "GRAIN", float("inf"))
    first = pipe(image)
    assert "denoised" not in first.timings
    assert char_accuracy(r.text, truth) >= char_accuracy(first.text, truth) + 0.1, \
        (r.text, first.text)
    # a page read surely enough on average is not read again: its first reading's lines
    # weighed as _read_denoised weighs them (round 41: no third read of the page, which
    # cost a sixth of this test)
    from skiff.kernels.ocr.item import Item

    kept = [(line.text, line.score) for line in first.lines]
    page = Item(0, "page", image)
    assert pipe._worth_denoising(page, kept)
    monkeypatch.setattr(module, "PAGE_SCORE", 0.3)
    assert not pipe._worth_denoising(page, kept)


def test_grain_alone_reads_no_text_free_image_again(pipe):
    """Grain qualifies an image only when its reading kept lines: read again from denoised
    copies, grainy text-free images made up lines (80 text-free images: 44 -> 49)."""
    import random

    from skiff.kernels.ocr.denoise import GRAIN, NOISY, grain_sigma, noise_sigma
    from skiff.kernels.ocr.synth import _degrade

    image = _degrade(np.full((300, 400, 3), 238, np.uint8), random.Random(1))
    assert noise_sigma(image) < NOISY and grain_sigma(image) >= GRAIN
    r = pipe(image)
    assert not r.lines and "denoise" not in r.timings, r.timings
