"""A form's options side by side, each with its check box inside the line.

Round 32 (h10, `benchmarks/bench_ocr_office.py`, the bilingual form): "性别 Sex: ☐ 男 Male
☑ 女 Female" was one detected line; the recognizer read the ticked box as "☑" stuck to its
label and the empty boxes as nothing ("性别 Sex: ☑男 Male  女 Female"), and
``checkboxes.checkbox_text`` looked only at a box that is the line's first ink. The boxes
standing inside a line are now found in the pixels and written as their states before the
words they stand before (``checkboxes.inline_frames``). The oracle is what was drawn."""

from __future__ import annotations

import os

import numpy as np
import pytest

from skiff.kernels.ocr.checkboxes import EMPTY, TICKED, checkbox_text, inline_frames

CJK = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def _font(path, size, index=0):
    from PIL import ImageFont

    if not os.path.exists(path):
        pytest.skip(f"{path} is not installed")
    return ImageFont.truetype(path, size, index=index)


def _row(label, options, tick, size, path=CJK, index=2):
    """A line as the pipeline crops it: the label, then each option's box and words; returns
    the crop and the drawn truth."""
    from PIL import Image, ImageDraw

    f = _font(path, size, index)
    b = round(size * 0.92)
    width = int(f.getlength(label) + sum(f.getlength(o) + 3 * size for o in options)) + 20
    img = Image.new("RGB", (width, int(size * 1.45)), "white")
    d = ImageDraw.Draw(img)
    d.text((4, 2), label, font=f, fill=0)
    x, y = 4 + f.getlength(label) + 1.2 * size, 2 + (size * 1.25 - b) / 2
    truth = [label]
    for i, o in enumerate(options):
        d.rectangle([x, y, x + b, y + b], outline=0, width=2)
        if i == tick:
            d.line([(x + b * 0.18, y + b * 0.5), (x + b * 0.42, y + b * 0.8),
                    (x + b * 0.8, y + b * 0.25)], fill=0, width=max(2, size // 10))
        d.text((x + b + 0.4 * size, 2), o, font=f, fill=0)
        truth.append((TICKED if i == tick else EMPTY) + " " + o)
        x += b + 0.4 * size + f.getlength(o) + 1.6 * size
    return np.asarray(img), " ".join(truth)


@pytest.mark.parametrize("size", [20, 24, 32])
@pytest.mark.parametrize("tick", [0, 1, 2])
def test_boxes_inside_a_line_read_as_their_states(size, tick):
    crop, truth = _row("入境目的 Purpose:", ["旅游 Tourism", "商务 Business", "学习 Study"],
                       tick, size)
    # what the recognizer gave: the ticked box read "☑" stuck to its label, the empty
    # ones as nothing
    words = ["入境目的 Purpose:"] + [("☑" if i == tick else "") + o for i, o in
                                    enumerate(["旅游 Tourism", "商务 Business", "学习 Study"])]
    assert checkbox_text(" ".join(words), crop) == truth
    # and as nothing at all
    plain = "入境目的 Purpose: 旅游 Tourism 商务 Business 学习 Study"
    assert checkbox_text(plain, crop) == truth


@pytest.mark.parametrize("size", [20, 26])
def test_latin_options_with_a_tick_read_as_a_letter(size):
    crop, truth = _row("Sex:", ["Male", "Female", "Other"], 1, size, SANS, 0)
    assert truth == "Sex: ☐ Male ☑ Female ☐ Other"
    assert checkbox_text("Sex: Male V Female Other", crop) == truth


def test_frames_are_found_where_they_were_drawn():
    crop, _ = _row("性别 Sex:", ["男 Male", "女 Female"], 0, 24)
    from skiff.kernels.ocr.checkboxes import faint_ink
    from skiff.kernels.ocr.spacing import ink_mask

    found = inline_frames(np.pad(faint_ink(crop), 1), np.pad(ink_mask(crop), 1))
    assert [s for _, _, s in found] == [TICKED, EMPTY]


def test_a_square_glyph_in_chinese_words_is_no_box():
    """"口" drawn alone between words is a frame in the pixels: it stays a character."""
    from PIL import Image, ImageDraw

    f = _font(CJK, 24, 2)
    text = "出口 口 入口 通道"
    img = Image.new("RGB", (int(f.getlength(text)) + 20, 36), "white")
    ImageDraw.Draw(img).text((6, 3), text, font=f, fill=0)
    assert checkbox_text(text, np.asarray(img)) == text


def test_a_line_without_boxes_is_left_as_read():
    from PIL import Image, ImageDraw

    f = _font(SANS, 20)
    text = "Total  GBP 1,234.00"
    img = Image.new("RGB", (int(f.getlength(text)) + 20, 30), "white")
    ImageDraw.Draw(img).text((6, 3), text, font=f, fill=0)
    assert checkbox_text(text, np.asarray(img)) == text


def test_the_bilingual_form_reads_each_box(pipe):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_office import form

    img, truth, _ = form(np.random.default_rng(0))
    got = pipe(np.asarray(img)).text.splitlines()
    for line in truth[4:6]:  # the two rows of options: each box's state before its label
        label = line.split(":")[0]
        read = [g for g in got if g.startswith(label)]
        assert len(read) == 1
        # the recognizer may leave out a space between a CJK word and a Latin one
        assert read[0].replace(" ", "") == line.replace(" ", "")


def test_the_form_as_a_phone_shot_keeps_each_state(pipe):
    """Turned 1.2 degrees, blurred, shrunk to 0.8 and saved as JPEG 55: the tick blurs into
    its frame and the frame's inside says no state; the "☑" the recognizer read before
    that label is then the box's state (before, the row lost it or its empty boxes)."""
    import io
    import sys
    from pathlib import Path

    from PIL import Image, ImageFilter

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_office import form

    img, truth, _ = form(np.random.default_rng(0))
    shot = img.rotate(1.2, resample=Image.BICUBIC, expand=True, fillcolor="white")
    shot = shot.filter(ImageFilter.GaussianBlur(0.8))
    shot = shot.resize((int(img.width * 0.8), int(img.height * 0.8)))
    buf = io.BytesIO()
    shot.save(buf, "JPEG", quality=55)
    got = pipe(np.asarray(Image.open(buf).convert("RGB"))).text.splitlines()
    for line in truth[4:6]:
        label = line.split(":")[0].replace(" ", "")
        read = [g for g in got if g.replace(" ", "").startswith(label)]
        assert len(read) == 1
        assert read[0].replace(" ", "") == line.replace(" ", "")
