"""The small-print opinion agreeing with a line's reading up to spaces (round 48, h1): the
line keeps its own score, with the second opinion's spaces. Before, "珍柔 15分钟" (the shipped
recognizer, 0.80, a garbled copy of "外卖 15 分钟") read again as "珍柔 15 分钟" at 0.91 by the
adapted model counted as a new reading and took the surer score, so that copy outweighed the
two copies that read the label right (0.77, 0.83: the unseen-face set's seed 131 label 59
with round 47's candidate delta, docs/ocr.md "Round 47 (h1)" and "Round 48 (h1)")."""

from __future__ import annotations

from skiff.kernels.ocr.synth import char_accuracy

from .test_small_print_r38h1 import _read

# readings by rows (40 as cut, 30 and 24 the middle rows): 1 the set's 131/59 (round 47, the
# bilateral copy, measured); 2 the set's 631/19 first line (round 48: 0.957 and 0.970
# measured, the line's other rows stand-ins); 3 a second opinion that reads other characters
# (the hard tier's "安全出口" kind); the truth as drawn
SHIPPED = {(1, 40): ("珍柔 15分钟", 0.80), (1, 30): ("珍柔 15分钟", 0.70),
           (1, 24): ("珍柔15分", 0.50),
           (2, 40): ("会员价6元", 0.60), (2, 30): ("会员价68元", 0.957),
           (2, 24): ("会员价68元", 0.90),
           (3, 40): ("安全图日", 0.40), (3, 30): ("安全图日", 0.45), (3, 24): ("安全", 0.30)}
ADAPTED = {(1, 40): ("珍柔 15 分钟", 0.91),
           (2, 40): ("会员价 68 元", 0.970),
           (3, 40): ("安全出口", 0.70)}
TRUTH = ["外卖 15 分钟", "会员价 68 元", "安全出口"]
RIGHT_COPY = 0.83  # the surer of the two other copies that read 131/59 right


def test_agreeing_up_to_spaces_keeps_the_lines_score():
    got = _read(SHIPPED, ADAPTED)
    # a garbled line is no surer for being read again the same way with one more space: it
    # keeps the score the copy choice weighs, under the copy that read the label right
    assert got[0] == ("珍柔 15 分钟", 0.80)
    assert got[0][1] < RIGHT_COPY and char_accuracy(got[0][0], TRUTH[0]) < 1.0
    # the second opinion's spaces are kept (the truth's, here), the score the line's own
    assert got[1] == (TRUTH[1], 0.957)
    # a second opinion that reads other characters still replaces reading and score
    assert got[2] == (TRUTH[2], 0.70)
