"""Crops read without detection (``use_det=False``) that stand 1.0-1.5 times as tall as
wide: a drawer label of two CJK characters one above the other.

Under ``rec.TALL`` (1.5) such a crop was read only as it stands: "红花" came back "張",
"人参" as "人", "桂枝" as nothing (round 40, h4's medicine-drawer labels). The oracle is the
label rendered: both characters are read, in order; a lone glyph of the same shape ("7",
"A", "中") still reads as itself. The trainer turns the same crops (``data.as_read``)."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from skiff.kernels.ocr.pipeline import OcrPipeline
from skiff.kernels.ocr.rec import TALL
from skiff.kernels.ocr_train.data import as_read


def _cjk_face():
    found = glob.glob("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc") + \
        glob.glob("/usr/share/fonts/**/NotoSansCJK*.tt?", recursive=True)
    if not found:
        pytest.skip("Noto Sans CJK is not installed (fonts-noto-cjk)")
    return found[0]


def _stacked(text, size, ground, ink, pad_x, pad_y):
    """``text`` written one character above the other, cut with the given margins."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(_cjk_face(), size)
    w = size + 2 * pad_x
    h = int(len(text) * size * 1.02) + 2 * pad_y
    img = Image.new("RGB", (w, h), ground)
    draw = ImageDraw.Draw(img)
    for i, ch in enumerate(text):
        draw.text((pad_x, pad_y + int(i * size * 1.02)), ch, font=face, fill=ink)
    return np.ascontiguousarray(np.asarray(img)[:, :, ::-1])


LABELS = [("红花", 30, (40, 90, 170), (20, 20, 20), 10, 2),
          ("人参", 26, (200, 110, 100), (120, 20, 20), 8, 1),
          ("桂枝", 32, (235, 215, 235), (150, 40, 90), 10, 2),
          ("黄连", 28, (60, 120, 190), (10, 10, 10), 9, 3)]


@pytest.fixture(scope="module")
def nodet():
    return OcrPipeline(use_det=False)


def test_two_stacked_characters_under_tall_are_read_both(nodet):
    crops = [_stacked(*row) for row in LABELS]
    for c in crops:
        h, w = c.shape[:2]
        assert w <= h < TALL * w, (w, h)  # the case: squat, under TALL
    got = [r.text for r in nodet.run(crops)]
    assert got == [row[0] for row in LABELS], got


def test_a_lone_glyph_as_tall_reads_as_itself(nodet):
    from PIL import Image, ImageDraw, ImageFont

    crops, want = [], []
    for ch, face in (("7", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
                     ("A", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
                     ("中", _cjk_face())):
        f = ImageFont.truetype(face, 28)
        x0, y0, x1, y1 = f.getbbox(ch)
        img = Image.new("RGB", (x1 - x0 + 2, y1 - y0 + 2), (255, 255, 255))
        ImageDraw.Draw(img).text((1 - x0, 1 - y0), ch, font=f, fill=(0, 0, 0))
        crops.append(np.ascontiguousarray(np.asarray(img)))
        want.append(ch)
    assert [r.text for r in nodet.run(crops)] == want


def test_trainer_turns_the_crops_the_pipeline_reads_turned():
    label = _stacked("红花", 30, (40, 90, 170), (20, 20, 20), 10, 2)
    turned = as_read(label, "红花")
    assert turned.shape[:2] == label.shape[:2][::-1]
    assert np.array_equal(turned, np.rot90(label))  # as rec.crop_box turns a column
    glyph = np.zeros((40, 30, 3), np.uint8)
    assert as_read(glyph, "7") is glyph  # one character stands
    wide_word = np.zeros((36, 30, 3), np.uint8)
    assert as_read(wide_word, "il") is wide_word  # two Latin letters: no stacked label


@pytest.mark.parametrize("row", [LABELS[0], LABELS[2], LABELS[3]], ids=lambda r: r[0])
def test_a_detected_squat_label_is_read_as_a_column(pipe, row):
    """With the detector: the label is boxed whole (55-61 x 74-77 px) and was read as
    nothing ("红花"; "桂枝" as "嶲" at 0.17 and "黄连" as "黄" at 0.46, both dropped)."""
    import cv2

    label = _stacked(*row)
    page = cv2.copyMakeBorder(label, 30, 30, 30, 30, cv2.BORDER_CONSTANT, value=(255, 255, 255))
    (r,) = list(pipe.run([page]))
    assert r.text == row[0], [(ln.text, ln.score) for ln in r.lines]
