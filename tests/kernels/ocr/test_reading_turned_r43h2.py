"""Round 43 (h2): a crop read both ways looks again at its turned reading (trimmed rows, the
small-print recognizer) only where that reading comes within ``TURNED_LOOK`` of the
upright one's score: a right-way-up line read upside down is garbage, and its second looks
were ~2/3 of ``read_both_ways``' CPU on the speed folder, changing no text."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from skiff.kernels.ocr import OcrPipeline
from skiff.kernels.ocr import reading as R


@pytest.fixture(scope="module")
def line():
    from PIL import Image, ImageDraw

    from skiff.kernels.ocr.synth import FontsMissing, _font, fonts

    try:
        font = _font(fonts()["cjk"], 22)
    except FontsMissing as exc:
        pytest.skip(str(exc))
    im = Image.new("RGB", (300, 44), "white")
    ImageDraw.Draw(im).text((8, 8), "请保持安静谢谢合作", font=font, fill="black")
    bgr = np.asarray(im)[..., ::-1]
    ink = bgr.min(2) < 128
    rows, cols = np.flatnonzero(ink.any(1)), np.flatnonzero(ink.any(0))
    return np.ascontiguousarray(bgr[rows[0] - 4:rows[-1] + 5, cols[0] - 4:cols[-1] + 5])


@pytest.fixture(scope="module")
def pipe():
    p = OcrPipeline("ch", device="cpu", threads=1)
    p.rec_workers = 1
    return p


def _read_both_ways(pipe, crop, kept):
    """``read_both_ways`` of one unsettled crop read upright as ``kept``: the turned crops'
    first readings (one ``_recognize_once`` call each look) and the outcome."""
    looks = []
    once = type(pipe)._recognize_once

    def counted(crops, fallback):
        out = once(pipe, crops, fallback)
        looks.append(out)
        return out

    pipe._recognize_once = counted
    try:
        item = SimpleNamespace(timings={}, bgr=np.full((600, 800, 3), 255, np.uint8),
                               boxes=[], index=0, noise=lambda: 0.0)
        flags, texts = np.zeros(1, bool), [kept]
        pipe.read_both_ways([crop], [(0, 0)], [item], flags,
                            np.array([R.UNSETTLED], np.int8), texts)
    finally:
        del pipe._recognize_once
    return looks, flags, texts


def test_a_garbage_turned_reading_is_not_looked_at_again(pipe, line):
    upright = pipe.recognize([line], [(0, 0)], [SimpleNamespace(
        timings={}, bgr=np.full((600, 800, 3), 255, np.uint8), index=0, noise=lambda: 0.0)])[0]
    assert upright[0] == "请保持安静谢谢合作"
    kept = (upright[0], 0.96)  # unsure enough to be read both ways, as on the speed folder
    looks, flags, texts = _read_both_ways(pipe, line, kept)
    first = looks[0][0]
    assert first[1] < TURNED_FLOOR  # upside down it reads as garbage ...
    assert first[1] < R.TRIM_UNSURE and line.shape[0] <= pipe.models.rec_height
    assert len(looks) == 1  # ... and is read once, not again from its middle rows
    assert not flags[0] and texts == [kept]


def test_a_turned_reading_near_the_upright_one_is_still_looked_at(pipe, line):
    looks, flags, texts = _read_both_ways(pipe, line, ("", 0.0))  # read as nothing upright
    assert looks[0][0][0] and looks[0][0][1] < R.TRIM_UNSURE
    assert len(looks) >= 2  # its middle rows read too, as before round 43


TURNED_FLOOR = 0.66  # 0.96 less TURNED_LOOK (0.3)
