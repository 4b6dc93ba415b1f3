"""Detection within bounded memory: tiles of at most the budget that cover the page with
the overlap asked, blank tiles, the ink box around a page's text, and the gate that lets
detection and recognition overlap only while their working memory fits."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from skiff.kernels.ocr.det import (
    DetParams,
    is_blank,
    one_pass_scale,
    text_extent,
    tile_grid,
    tile_spans,
)
from skiff.kernels.ocr.engine import MemoryGate


@pytest.mark.parametrize("length,tile,overlap", [(10000, 2000, 300), (1840, 1000, 96),
                                                  (707, 706, 96), (5000, 611, 96)])
def test_tile_spans_cover_with_equal_tiles(length, tile, overlap):
    spans = tile_spans(length, tile, overlap)
    assert spans[0][0] == 0 and spans[-1][1] == length
    sizes = {b - a for a, b in spans}
    assert len(sizes) == 1 and max(sizes) <= tile  # one size, within the bound
    assert all(a[1] - b[0] >= overlap for a, b in zip(spans, spans[1:]))
    # no more tiles than needed: one fewer could not cover the length with that overlap
    n = len(spans)
    assert n == 1 or (n - 1) * tile - (n - 2) * overlap < length


@pytest.mark.parametrize("h,w,scale", [(8000, 8000, 1.0), (487, 1840, 1.0), (13000, 400, 0.5),
                                       (3000, 2000, 2.0)])
def test_tile_grid_stays_within_the_pixel_budget(h, w, scale):
    p = DetParams()
    th, tw, overlap = tile_grid(h, w, scale, p)
    ys, xs = tile_spans(h, th, overlap), tile_spans(w, tw, overlap)
    for y0, y1 in ys:
        for x0, x1 in xs:
            assert (y1 - y0) * (x1 - x0) * scale ** 2 <= p.tile_pixels * 1.01
    assert overlap * scale >= p.tile_overlap - 1


def test_a_page_just_over_one_tile_is_shrunk_to_one_pass_only_when_its_print_stays_large():
    p = DetParams()
    # 1093 x 473 at 17.8-px print: 2% smaller fits one pass
    s = one_pass_scale(473, 1093, 1.0, 17.8, p.tile_pixels, p)
    assert s < 1.0 and 473 * 1093 * s * s <= p.tile_pixels * 1.0001
    assert 17.8 * s >= p.one_pass_text
    # small print (14 px would become 11) and a page of many tiles keep their scale (tiles)
    assert one_pass_scale(800, 1300, 1.0, 14.0, p.tile_pixels, p) == 1.0
    assert one_pass_scale(3000, 4000, 0.5, 30.0, p.tile_pixels, p) == 0.5
    # under one tile, or print of unknown height: as chosen
    assert one_pass_scale(400, 1000, 1.0, 20.0, p.tile_pixels, p) == 1.0
    assert one_pass_scale(473, 1093, 1.0, None, p.tile_pixels, p) == 1.0


def test_a_noisy_page_just_over_one_tile_keeps_its_lines_whole(pipe):
    """The detector's map is weak where a line begins at a tile's edge: this noisy page,
    cut into two tiles, lost the second half of three of its four lines (0.32)."""
    from skiff.kernels.ocr.synth import char_accuracy, render_sample

    sample = render_sample("noisy", 3, seed=0)
    h, w = sample.image.shape[:2]
    assert h * w > DetParams().tile_pixels  # at its own scale: two tiles
    result = pipe(sample.image)
    assert not result.timings.get("tiles")
    assert char_accuracy(result.text, sample.text) >= 0.9


def test_blank_tiles_and_the_ink_box(fonts):
    from skiff.kernels.ocr.synth import render_page

    page = np.full((1200, 1600), 250, np.uint8)
    assert is_blank(page) and is_blank(np.dstack([page] * 3))
    noise = np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8)
    assert not is_blank(noise)
    patch = render_page(["Invoice 4185.94 total due"], size=14)[..., 1]
    page[700:700 + patch.shape[0], 300:300 + patch.shape[1]] = patch
    height, ink = text_extent(page)
    assert height is not None and 6 <= height <= 20
    y0, y1, x0, x1 = ink
    dark = np.argwhere(page < 128)
    assert y0 <= dark[:, 0].min() and y1 > dark[:, 0].max()  # all the text inside
    assert x0 <= dark[:, 1].min() and x1 > dark[:, 1].max()
    assert (y1 - y0) * (x1 - x0) < 0.2 * page.size  # and little of the margin


WORDS = ("File Edit View Selection Terminal Help Explorer Search Source Control Run Debug "
         "main.py README.md Output Ports UTF-8").split()


def _screen(fonts, dark: bool) -> tuple[np.ndarray, list[str]]:
    """A 500 x 900 screenshot and its lines: twelve lines of 11-px text staggered over its
    upper left, light on a dark ground (a dark theme) or dark on white."""
    import random

    from PIL import Image, ImageDraw, ImageFont

    ground, ink = ((30, 30, 30), (212, 212, 212)) if dark else ((255, 255, 255), (40, 40, 40))
    im = Image.new("RGB", (900, 500), ground)
    d = ImageDraw.Draw(im)
    font = ImageFont.truetype(fonts["latin"], 11)
    rng = random.Random(11)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))) for _ in range(12)]
    for k, line in enumerate(lines):
        d.text((10 + 20 * (k % 3), 10 + 25 * k), line, font=font, fill=ink)
    return np.asarray(im.convert("L")), lines


@pytest.mark.parametrize("dark", [True, False])
def test_the_ink_box_holds_light_print_on_a_dark_ground(fonts, dark):
    """Light print counts as ink: a dark theme's lines (the box from the dark side alone
    cut them short and lost the last two) are all inside, as a light theme's are."""
    page, _ = _screen(fonts, dark)
    height, ink = text_extent(page)
    assert height is not None and 6 <= height <= 20
    y0, y1, x0, x1 = ink
    text = np.argwhere(np.abs(page.astype(int) - int(page[0, 0])) > 60)  # off the ground
    assert y0 <= text[:, 0].min() and y1 > text[:, 0].max()
    assert x0 <= text[:, 1].min() and x1 > text[:, 1].max()
    assert (y1 - y0) * (x1 - x0) < 0.6 * page.size


def test_a_dark_theme_screenshot_reads_whole(fonts, pipe):
    page, lines = _screen(fonts, dark=True)
    assert pipe(np.dstack([page] * 3)).text.split("\n") == lines


def test_red_print_on_blue_is_not_blank(fonts, pipe):
    """Red on blue: the same green channel and the same mean grey as the ground. A page
    large enough to be detected in tiles read nothing when a tile's blankness was judged
    by its green channel alone."""
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", (1000, 600), (0, 0, 255))
    d = ImageDraw.Draw(im)
    font = ImageFont.truetype(fonts["latin"], 24)
    lines = ["Invoice 4185.94 total due", "Shipping to Berlin 2026", "Order number 5521"]
    for k, line in enumerate(lines):
        d.text((40, 60 + 60 * k), line, font=font, fill=(255, 0, 0))
    rgb = np.asarray(im)
    assert not is_blank(rgb[40:200, 20:600]) and is_blank(rgb[400:, 600:])
    assert pipe(rgb).text.split("\n") == lines


def test_memory_gate_lets_calls_overlap_only_while_they_fit():
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryGate(0)
    gate = MemoryGate(100)
    gate.acquire(70)
    order = []

    def second():
        gate.acquire(40)  # 70 + 40 > 100: waits for the first
        order.append("second in")
        gate.release(40)

    t = threading.Thread(target=second)
    t.start()
    deadline = time.monotonic() + 10
    while gate.waits == 0 and time.monotonic() < deadline:  # until the second is waiting
        time.sleep(0.01)
    assert order == [] and gate.waits == 1
    order.append("first out")
    gate.release(70)
    t.join(5)
    assert order == ["first out", "second in"]
    gate.acquire(500)  # alone, a call larger than the bound still runs
    gate.release(500)
    assert gate.held == 0 and gate.peak == 500


def test_the_ink_box_holds_white_print_on_a_mid_grey_ground(fonts, pipe):
    """White print on a banner's colour gradient whose grey is 116-131 under the line: the
    box from light print on a dark ground (grey under 100) alone took only the edges the
    dark side sees, cut the line at both ends, and it read "Up to 50% off everyth"."""
    from PIL import Image, ImageDraw, ImageFont

    h, w = 260, 800
    x, y = np.linspace(0, 1, w)[None, :, None], np.linspace(0, 1, h)[:, None, None]
    zero = 0 * x + 0 * y
    ground = np.concatenate([40 + 150 * x + zero, 80 + 100 * y + zero, 160 - 60 * x + zero],
                            axis=2).astype(np.uint8)
    im = Image.fromarray(ground)
    ImageDraw.Draw(im).text((40, 150), "Up to 50% off everything",
                            font=ImageFont.truetype(fonts["latin"], 26), fill=(255, 255, 240))
    page = np.asarray(im.convert("L"))
    text = np.argwhere(page.astype(int) - np.asarray(Image.fromarray(ground).convert("L")) > 30)
    _, ink = text_extent(page)
    assert ink is not None
    y0, y1, x0, x1 = ink
    assert x0 <= text[:, 1].min() and x1 > text[:, 1].max()
    assert y0 <= text[:, 0].min() and y1 > text[:, 0].max()
    assert pipe(np.asarray(im)).text == "Up to 50% off everything"
