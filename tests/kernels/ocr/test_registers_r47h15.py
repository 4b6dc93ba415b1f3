"""Round 47 (h15): a register's digits one to a filled cell read as one number
(`registers.join_registers`). A utility meter's register "045273" white on black read
"0 4 5 2 3" (its "7" unboxed by the detector); as a thumbnail "45273" (its "0" lost). The
oracle is the renderer: the register drawn with Pillow, each digit's ink box grown as the
detector grows its regions (`det._unclip`), a box left out where the pipeline lost one, and
the unboxed cell's glyph named by correlation with Pillow's own digits (no model)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.det import DetParams, _unclip, order_points
from skiff.kernels.ocr.registers import join_registers

LIB_BOLD = "/usr/share/fonts/truetype/liberation2/LiberationSans-Bold.ttf"
LIB = "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf"


def _face(path, px):
    try:
        return ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"font {path} missing")


def _box(x0, y0, x1, y1):
    ink = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)
    grown = _unclip(ink, DetParams().unclip_ratio)
    return order_points(cv2.boxPoints(cv2.minAreaRect(grown))).astype(np.float32)


def _meter(scale, digits="045273"):
    """The meter face of `bench_ocr_user47.utility_meter` at ``scale``: the image and each
    digit's (and "kWh"'s) grown ink box."""
    s = scale
    im = Image.new("RGB", (int(640 * s), int(300 * s)), (236, 236, 230))
    d = ImageDraw.Draw(im)
    fr, fk = _face(LIB_BOLD, round(46 * s)), _face(LIB_BOLD, round(30 * s))
    d.text((60 * s, 40 * s), "ELSTRA", font=_face(LIB_BOLD, round(22 * s)), fill=(40, 40, 40))
    boxes = []
    for k, ch in enumerate(digits):
        x = (120 + k * 56) * s
        d.rectangle((x, 110 * s, x + 48 * s, 176 * s),
                    fill=(170, 20, 20) if k == len(digits) - 1 else (20, 20, 20))
        tx = x + (48 * s - d.textlength(ch, font=fr)) / 2
        d.text((tx, 116 * s), ch, font=fr, fill=(255, 255, 255))
        boxes.append(_box(*d.textbbox((tx, 116 * s), ch, font=fr)))
    d.text((470 * s, 128 * s), "kWh", font=fk, fill=(20, 20, 20))
    boxes.append(_box(*d.textbbox((470 * s, 128 * s), "kWh", font=fk)))
    return np.asarray(im), boxes


def _reader(px):
    """Names a cell's crop by its best correlation with Pillow's digits drawn dark on light
    at the register's size (the crop comes as print: dark ink on light)."""
    face = _face(LIB_BOLD, px)
    refs = {}
    for ch in "0123456789":
        t = Image.new("L", (px, px + px // 2), 255)
        ImageDraw.Draw(t).text((px // 8, px // 8), ch, font=face, fill=0)
        a = np.asarray(t)
        ys, xs = np.nonzero(a < 128)
        refs[ch] = a[ys.min():ys.max() + 1, xs.min():xs.max() + 1].astype(np.float32)
    seen = []

    def read(crops):
        out = []
        for c in crops:
            g = c.astype(np.float32).mean(2)
            ys, xs = np.nonzero(g < 128)
            g = g[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
            best = max(refs, key=lambda ch: np.corrcoef(
                cv2.resize(g, refs[ch].shape[::-1]).ravel(), refs[ch].ravel())[0, 1])
            out.append(best)
        seen.extend(out)
        return out
    return read, seen


@pytest.mark.parametrize("scale", [0.5, 1.0])
def test_a_register_reads_as_one_number_its_unboxed_cell_read(scale):
    image, boxes = _meter(scale)
    # the detector's boxes: each digit but the "7", and "kWh"
    keep = [0, 1, 2, 3, 5, 6]
    texts = [list("045273")[i] if i < 6 else "kWh" for i in keep]
    read, seen = _reader(round(46 * scale))
    got, joined = join_registers([list(range(len(keep)))], [boxes[i] for i in keep], texts,
                                 image, read=read)
    assert [t for t in got if t] == ["045273", "kWh"], got
    assert seen == ["7"], seen
    # the joined box spans the register's cells, "kWh" beside it untouched
    assert joined[0][:, 0].min() <= 120 * scale + 1 and joined[0][:, 0].max() >= 400 * scale


def test_a_thumbnails_lost_first_digit_is_read_from_its_cell():
    image, boxes = _meter(0.5)
    # "45273" boxed as one piece, the "0" lost
    pts = np.concatenate(boxes[1:6])
    (x0, y0), (x1, y1) = pts.min(0), pts.max(0)
    piece = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)
    read, seen = _reader(23)
    got, _ = join_registers([[0, 1]], [piece, boxes[6]], ["45273", "kWh"], image, read=read)
    assert got == ["045273", "kWh"], got
    assert seen == ["0"]


def test_digits_without_filled_cells_stay_apart():
    """A calendar's row in a ruled table (thin rules, white cells) and a row of single
    digits on plain paper: no register, read as drawn."""
    f = _face(LIB, 20)
    im = Image.new("RGB", (420, 160), (255, 255, 255))
    d = ImageDraw.Draw(im)
    boxes, texts = [], []
    for k in range(7):
        x = 20 + k * 54
        d.rectangle((x, 40, x + 54, 94), outline=(0, 0, 0), width=1)
        ch = str(k + 1)
        tx = x + (54 - d.textlength(ch, font=f)) / 2
        d.text((tx, 56), ch, font=f, fill=(0, 0, 0))
        boxes.append(_box(*d.textbbox((tx, 56), ch, font=f)))
        texts.append(ch)
    calls = []
    got, _ = join_registers([list(range(7))], boxes, texts, np.asarray(im),
                            read=lambda cs: calls.append(cs) or ["9"] * len(cs))
    assert got == texts and not calls
    plain = Image.new("RGB", (420, 100), (250, 250, 245))
    d = ImageDraw.Draw(plain)
    boxes = []
    for k, ch in enumerate("3 8 1 5".split()):
        d.text((40 + k * 50, 40), ch, font=f, fill=(0, 0, 0))
        boxes.append(_box(*d.textbbox((40 + k * 50, 40), ch, font=f)))
    got, _ = join_registers([[0, 1, 2, 3]], boxes, list("3815"), np.asarray(plain),
                            read=lambda cs: ["9"] * len(cs))
    assert got == list("3815")
