"""The adapted small-print recognizer's extra copies only vote (``reading.SMALL_PRINT_CONFIRM``,
round 39): an unsure small CJK line is read by it once more from the middle 0.67 and 0.60 of
its rows, and such a reading counts only where its text is one the line already read.

The readings below are the recognizers' own, measured on the unseen-face set
(``benchmarks/bench_ocr_small.py``: seed 131 label 22 "消毒完毕", seed 631 label 42 "行李寄存",
seed 631 label 31 "楼梯口"), the truth what was drawn; a stand-in recognizer gives them by the
crop's rows (40 as cut, 30 at the middle 0.75, 26 at 0.67, 24 at 0.60)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from skiff.kernels.ocr import reading
from skiff.kernels.ocr.synth import char_accuracy


class _StandIn(reading.LineReading):
    def __init__(self, shipped, adapted):
        self.shipped, self.adapted = shipped, adapted
        self.words, self.alphabet = True, None
        self.models = SimpleNamespace(rec_fallback=None, rec_height=48)
        self._small_engine = object()  # the adapted model, as built
        self.rows = []

    def _recognize_once(self, crops, fallback):
        return [self.shipped[(int(c[0, 0, 0]), c.shape[0])] for c in crops]

    def _read_with(self, which, alphabet, crops, mend_from=0.0):
        assert which == "rec-small"
        self.rows.append(sorted({c.shape[0] for c in crops}))
        return [self.adapted.get((int(c[0, 0, 0]), c.shape[0]), ("", 0.0)) for c in crops]


def _read(shipped, adapted):
    crops = []
    for tag in sorted({t for t, _ in shipped}):
        c = np.full((40, 160, 3), 255, np.uint8)
        c[:, :, 0] = tag  # which line it is, seen through every trim
        crops.append(c)
    r = _StandIn(shipped, adapted)
    got = r.recognize(crops, [(0, k) for k in range(len(crops))], [SimpleNamespace(timings={})])
    return got, r.rows


SHIPPED = {(1, 40): ("消泰定年", 0.327), (1, 30): ("消康定甲", 0.417), (1, 24): ("消款美甲", 0.657),
           (2, 40): ("打車寄存", 0.289), (2, 30): ("行4寄存", 0.474), (2, 24): ("订4寄存", 0.548),
           (3, 40): ("楼611", 0.318), (3, 30): ("楼梯", 0.626), (3, 24): ("机相1", 0.490)}
ADAPTED = {(1, 40): ("消命定华", 0.337), (1, 30): ("消毒完毕", 0.516), (1, 26): ("消毒完毕", 0.630),
           (1, 24): ("消毒完毕", 0.545),
           (2, 40): ("打杀寄存", 0.324), (2, 30): ("行李寄存", 0.451), (2, 26): ("行李寄存", 0.564),
           (2, 24): ("订李寄存", 0.438),
           (3, 40): ("楼梯汇", 0.311), (3, 30): ("楼梯口", 0.642), (3, 26): ("楼梯门", 0.694),
           (3, 24): ("想相工1", 0.408)}
TRUTH = ["消毒完毕", "行李寄存", "楼梯口"]


def _accuracy(got):
    return [char_accuracy(t, truth) for (t, _), truth in zip(got, TRUTH, strict=True)]


def test_agreeing_copies_outweigh_the_first_garble():
    got, rows = _read(SHIPPED, ADAPTED)
    assert rows == [[40], [30], [26], [24]]  # as cut, 0.75, then the two voting copies
    # the right words, each with the score the line first read it at (the adapted model's
    # 0.75 copy), not the voting copy's
    assert got == [("消毒完毕", 0.516), ("行李寄存", 0.451), ("楼梯口", 0.642)]
    assert _accuracy(got) == [1.0, 1.0, 1.0]


def test_without_the_votes_the_garble_was_kept(monkeypatch):
    monkeypatch.setattr(reading, "SMALL_PRINT_CONFIRM", ())
    got, rows = _read(SHIPPED, ADAPTED)
    assert rows == [[40], [30]]
    assert [t for t, _ in got] == ["消款美甲", "订4寄存", "楼梯口"]
    assert _accuracy(got)[:2] == [0.25, 0.5]


def test_a_voting_copy_brings_no_new_text():
    # "楼梯门" (0.67 copy) would outweigh "楼梯口" as a reading of its own:
    # 0.694 + 0.1 x fluency against 0.642 + 0.1 x fluency; as a vote it has no text to back
    lex = reading.lexicon()
    new = 0.694 + reading.FLUENCY * reading.fluency("楼梯门", lex)
    kept = 0.642 + reading.FLUENCY * reading.fluency("楼梯口", lex)
    assert new > kept
    got, _ = _read(SHIPPED, ADAPTED)
    assert got[2][0] == "楼梯口"
    # and "订李寄存" (0.60 copy), read by no other copy, is no candidate either
    assert got[1][0] == "行李寄存"
