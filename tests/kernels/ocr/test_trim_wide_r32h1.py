"""An unsure line whose first reading has CJK print (and two characters or more) is read
again from the middle 0.60 of its rows too (``reading.TRIM_WIDE_KEEP``), besides the middle
0.75 every unsure small line gets.

Round 32 (h1): 13-14 px CJK under blur, noise 20-35 and JPEG 20-30 is boxed with about its own
height of margin; at 0.75 of the rows a 13 px Noto Serif CJK Bold line still read as
nothing kept, at 0.60 it reads right. The oracle is the rendered text (round 31's degraded
set, h1's gen31 generator, seed 131 image 22), and for the rule itself a stand-in
recognizer whose readings are known by construction."""

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from skiff.kernels.ocr import reading  # noqa: E402
from skiff.kernels.ocr.synth import char_accuracy  # noqa: E402


def _label(seed=131, i=22):
    """Round 31's degraded Chinese label ``i`` of set ``seed`` (h1's gen31 generator, kept as
    ``benchmarks/bench_ocr_small.render``): RGB pixels, its lines, size, angle and face."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_ocr_small import render

    try:
        rgb, lines, _, size, angle, face = render(seed, i)
    except OSError as exc:   # a face this machine lacks
        pytest.skip(f"font missing: {exc}")
    return rgb, lines, size, angle, face

class _StandIn(reading.LineReading):
    """recognize() over a stand-in recognizer: a crop reads by its height (rows known by
    construction: 40 as cut, 30 at 0.75, 24 at 0.60)."""

    def __init__(self, by_rows):
        self.by_rows, self.calls = by_rows, []
        self.words = True
        self.models = SimpleNamespace(rec_fallback=None, rec_height=48)
        self._small_engine = None  # no adapted small-print recognizer (reading.SMALL_PRINT)

    def _recognize_once(self, crops, fallback):
        self.calls.append([(c[0, 0, 0], c.shape[0]) for c in crops])
        return [self.by_rows[(int(c[0, 0, 0]), c.shape[0])] for c in crops]


def _crop(tag, rows=40):
    c = np.full((rows, 160, 3), 255, np.uint8)
    c[:, :, 0] = tag  # which line it is, seen through every trim
    return c


def test_only_cjk_readings_get_the_tighter_trim():
    by_rows = {(1, 40): ("配送贵", 0.55), (1, 30): ("493", 0.60), (1, 24): ("配送费", 0.80),
               (2, 40): ("Pnce", 0.55), (2, 30): ("Pnce", 0.58),
               (3, 40): ("总计58", 0.60), (3, 30): ("总计 58", 0.75), (3, 24): ("总计 5B", 0.70)}
    r = _StandIn(by_rows)
    items = [SimpleNamespace(timings={})]
    got = r.recognize([_crop(1), _crop(2), _crop(3)], [(0, 0), (0, 1), (0, 2)], items)
    rows = [sorted(rows for _, rows in call) for call in r.calls]
    assert rows == [[40, 40, 40], [30, 30, 30], [24, 24]]  # the Latin line: no 0.60 copy
    assert sorted(tag for tag, _ in r.calls[2]) == [1, 3]
    # the surest trimmed reading wins where TRIM_MARGIN over the first: line 1 at 0.60,
    # line 3 at 0.75 (its 0.60 reading is less sure), line 2 stays as first read
    assert got == [("配送费", 0.80), ("Pnce", 0.55), ("总计 58", 0.75)]


def test_a_lone_wide_character_gets_no_tighter_trim():
    # a rectangle's outline read as one CJK character under min_score: the 0.60 copy read
    # it surely ("日" at 0.70) and made a false line on a text-free picture
    by_rows = {(1, 40): ("口", 0.45), (1, 30): ("口", 0.50), (1, 24): ("日", 0.70),
               (2, 40): ("B2出囗", 0.55), (2, 30): ("B2", 0.50), (2, 24): ("B2出口", 0.75)}
    r = _StandIn(by_rows)
    got = r.recognize([_crop(1), _crop(2)], [(0, 0), (0, 1)], [SimpleNamespace(timings={})])
    assert [sorted(tag for tag, _ in call) for call in r.calls] == [[1, 2], [1, 2], [2]]
    assert got == [("口", 0.45), ("B2出口", 0.75)]


def test_without_the_tighter_trim_as_before(monkeypatch):
    by_rows = {(1, 40): ("配送贵", 0.55), (1, 30): ("493", 0.60), (1, 24): ("配送费", 0.80)}
    monkeypatch.setattr(reading, "TRIM_WIDE_KEEP", None)
    r = _StandIn(by_rows)
    got = r.recognize([_crop(1)], [(0, 0)], [SimpleNamespace(timings={})])
    assert [rows for call in r.calls for _, rows in call] == [40, 30]
    assert got == [("配送贵", 0.55)]


@pytest.mark.slow
def test_small_serif_cjk_label_reads_both_lines(monkeypatch):
    from skiff.kernels.ocr import OcrPipeline

    rgb, lines, size, angle, font = _label()
    want = (["消毒完毕", "图书文具"], 13, -18.9, "NotoSerifCJK-Bold.ttc")
    assert (lines, size, angle, font) == want
    # the rule alone, as measured in round 32: the adapted small-print recognizer (on since
    # round 38) reads both lines even without the 0.60 copy
    monkeypatch.setattr(reading, "SMALL_PRINT", False)
    pipe = OcrPipeline("ch", device="cpu", threads=2, batch_size=8)
    truth = "\n".join(lines)
    got = pipe(rgb).text  # an array is RGB, as PIL gives it
    assert char_accuracy(got.replace(" ", ""), truth) >= 0.75, got  # measured: both lines
    monkeypatch.setattr(reading, "TRIM_WIDE_KEEP", None)
    before = pipe(rgb).text
    assert char_accuracy(before.replace(" ", ""), truth) < 0.6, before  # measured: "图书文具"
