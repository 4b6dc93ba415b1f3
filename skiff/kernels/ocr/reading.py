"""Reading the boxes of :class:`.pipeline.OcrPipeline`: crops cut and turned upright, the
direction model with each page's majority, crops read both ways when the direction is
unsure, recognition in batches of like width, and second readings (on a colour axis, from
denoised copies of small noisy images, of a number without its point stretched wider). A
mixin: it uses the pipeline's ``engine``, ``alphabet``, ``models``, ``device``, ``xp``, batch
sizes and ``detect``."""

from __future__ import annotations

import itertools
import re
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import denoise
from .beam import fluency, reread
from .item import Item
from .lexicon import lexicon
from .rec import (
    TALL,
    box_size,
    choose_turns,
    cls_input,
    colour_grey,
    crop_box,
    ctc_columns,
    ctc_decode,
    decimal_point,
    half_width,
    is_flipped,
    is_plain_number,
    is_rule_line,
    one_way,
    plan_batches,
    reads_turned,
    rec_input,
    sideways_page,
    thousands_commas,
    trim_rows,
    wide_share,
)
from .script_mix import latin_letters
from .spacing import _cjk_char, cjk_spaces, missed_spaces, separator_spaces, spurious_spaces
from .twins import STAGES, charge_time, lines_by_image, read_twins

# a crop's direction is checked by reading it both ways unless its page settles it, or
# the direction model is this sure it is upright and the recognizer reads it at least this
# well (on clean pages of one to three lines, checking every crop cost 45% more CPU time;
# the seven-segment "4185.94" the direction model turned read "h6581 h" at 0.91). 0.9 and
# 0.98 read the hard tiers (two seeds) and the clean set the same; 0.9 reads 12% fewer
# columns twice on the mixed set (0.8 changed two degraded lines)
SURE_CLS, SURE_REC = 0.9, 0.97
# how a crop's direction was settled (:meth:`OcrPipeline.directions`): not at all, by the
# direction model (upright and sure: a poor reading is still checked), by its page
UNSETTLED, BY_MODEL, BY_PAGE = 0, 1, 2
# the direction model reads a page's crops widest first, in steps of PAGE_STEP crops, and
# stops once PAGE_SURE of them are sure and none is sure of the other way: the page then
# settles the rest, as it would have (a page of 40 lines: 8-16 crops seen, not 40)
PAGE_STEP, PAGE_SURE = 8, 8
# a long crop's first window this sure either way is its direction model's whole reading
# (LineReading._cls_probs)
CLS_ONE_VIEW = 0.9999
# a box taller than wide (read turned, as a vertical line) at most this many times its
# page's text height holds one glyph or two: it is read as it stands too, and the surer
# reading kept (LineReading.read_bars_upright)
GLYPH_TALL = 2.0
# a squat crop (use_det=False) read as at most this many characters is read turned too
SQUAT_CHARS = 2
# a crop read both ways as a number leans to the image's own way up by this much score
# (rec.choose_turns; words and CJK do not lean: four degraded seeds +0.0 / +2.1 / +1.4 /
# +0.5 points, the segment tier the same)
UPRIGHT_PRIOR = 0.1
# and a crop read as a number one way and as seven-segment digits upside down ("h9589E")
# the other leans to the number by this much more, whichever way up it is (the direction
# model turned such displays, and 0.1 alone could not bring them back; a lean of 0.2 for
# every number cost upside-down degraded signs 0.4 points)
SEGMENT_LEAN = 0.1
# a crop read as one number without a point is read again this many times as wide
# (read_points): 300 DSEG displays 211 -> 235 exact, one false point in 800 integers (1.6,
# tried on whole images: two more points of 100, and a false one among 60 display integers);
# its doubled digits kept too: 144 DSEG displays rich in "1"s 127 -> 134 exact, none of 800
# numbers in ordinary fonts changed (a crop tightened to its ink band instead of stretched
# read 130; both, a third reading of every number, 133)
POINT_STRETCH = 1.3
# what the recognizers read a bar as when it is turned a quarter (read_bars_upright): a
# DSEG "1" alone, boxed taller than wide, came back "--" (300 random displays: 4 more exact,
# the vertical, degraded, photo and segment tiers the same texts; 60 text-free images the
# same 36 false lines, 40 when dash lines under min_score were read again too)
DASHES = frozenset("-\u4e00\u2014\u2013_~=\u30fc\u2015\u2010")
# a set with a fallback recognizer (ch-tiny) reads again with it the lines its own reads under
# this score: on the mixed set, the hard set and 30 dense pages, 0.9 sent 21% of lines back
# and read the noisy pages 0.940 -> 0.986, the degraded tier 0.72 -> 0.85 (ch: 0.99 / 0.87),
# dense pages the same; 0.95 sent 28% for less than half a point more
FALLBACK_SCORE = 0.9
# and a crop read the other way up (read_both_ways) is read again with it only where that
# reading scores within this of the first: ch-tiny's mixed folder 1.355 -> 1.24 s in-process
# (CPU 2.30 -> 2.11 s; medians of six alternating rounds), the same texts there, on dense
# pages and the photo, segment and vertical tiers; degraded over four seeds 0.874 / 0.816 /
# 0.837 / 0.816 -> 0.874 / 0.816 / 0.838 / 0.811 (0.3: 0.813 on the second; never again:
# 0.857 / 0.736)
FALLBACK_TURNED = 0.5
# a line read under TRIM_UNSURE is read again from its crop with the rows trimmed to the
# middle TRIM_KEEP of its height, and the surer reading kept (rec.trim_rows): the detector's
# box grows a 13-17 px line by about its own height, so under noise and blur the print fills
# little of the recognizer's 48 rows and CJK reads as digits ("配送费" -> "493"). Round 30,
# 224 small degraded labels over four seeds: 0.837 -> 0.847 (each seed +0.4 to +1.7 points;
# 14 labels better, 4 worse); q8's degraded tier 0.8956 -> 0.9206. Over two of the seeds
# 0.60 of the height read 0.869 against 0.873, a sharpened crop instead 0.848 (no margin,
# below). Clean pages: at most 4 of 326 crops read again (pipe.py's 38 pages, same texts)
TRIM_UNSURE, TRIM_KEEP = 0.9, 0.75
# and the trimmed reading replaces the first only where it scores TRIM_MARGIN more (the
# first may have been mended with words: q8's "现金支付" at 0.64 against a trimmed "瑞金支付"
# at 0.70; with no margin the labels read 0.857 but q8's degraded tier 0.9068). Not for
# a line read as a dashed rule (dropped whatever it reads), nor under a set with a fallback
# recognizer (ch-tiny: its unsure lines go to the fallback), nor with
# ``words=False``, which reads each crop once, as the recognizer gives it
TRIM_MARGIN = 0.1
# a crop read both ways: its turned reading is looked at again (trimmed rows, the small-print
# recognizer) only where its first reading comes within this of the upright reading's score
# (a right-way-up line read upside down is garbage, and its second looks were ~2/3 of
# read_both_ways' CPU on the speed folder, round 43)
TURNED_LOOK = 0.3
# and a line whose first reading has CJK print in it is read once more from the middle
# TRIM_WIDE_KEEP of its rows, the surest trimmed reading kept (still by TRIM_MARGIN over the
# first): 13-14 px CJK boxed with its own height of margin reads as garble at 0.75 too
# (round 32: see docs/ocr.md "Round 32, small degraded print"); None reads no such copy
TRIM_WIDE_KEEP: float | None = 0.6
# ... where that reading has at least TRIM_WIDE_CHARS characters: a lone CJK character is
# what an outline reads as ("日" for a rectangle, at 0.70 from the 0.60 copy, under
# min_score before); two wide ones asked for lost a mixed line's gain ("电话 021-6688")
TRIM_WIDE_CHARS = 2
# such a line is also read from the middle TRIM_WIDE_MORE of its rows, and its readings
# (the first, the trimmed ones) are weighed by score plus FLUENCY times their characters'
# mean pair bonus (beam.fluency: garble draws characters seldom seen together, "综客登记"
# for "访客登记"), the first given TRIM_WIDE_MARGIN: the heaviest kept. Round 33: see
# docs/ocr.md "Round 33, small degraded print"; FLUENCY = 0 and TRIM_WIDE_MORE = () with
# TRIM_WIDE_MARGIN = TRIM_MARGIN is round 32's rule (the surest by the margin)
TRIM_WIDE_MORE: tuple[float, ...] = ()
FLUENCY = 0.1
TRIM_WIDE_MARGIN = 0.1
# such a line is read again by the recognizer adapted to small degraded print
# (:mod:`.small_print`: the shipped ``ch`` recognizer's last stage and neck fine-tuned on
# 13-18 px lines under blur, noise and JPEG), from the crop as cut and from each of
# SMALL_PRINT_KEEPS of its middle rows, its readings weighed as the trimmed ones are, plus
# SMALL_PRINT_LEAN; only where the pipeline's recognizer is the one the adapted model was
# trained from (round 35: docs/ocr.md "Round 35, small degraded print"); False reads none.
# On since round 38 (round 37's delta, with the two rules below): the unseen-font set
# 0.8671 -> 0.8720 with no label worse, the hard tiers' images that reach it none worse
SMALL_PRINT = True
SMALL_PRINT_KEEPS: tuple[float, ...] = (1.0, 0.75)
SMALL_PRINT_LEAN = 0.0
# and only a reading at least this much CJK by print width, not a dashed rule: on text-free
# images (a ruler's ticks) it read "三ll：llllll：" where the shipped model gave nothing
SMALL_PRINT_WIDE = 0.5
# Its reading replaces the line's only where, holding as many CJK characters as the reading
# it replaces, it is at most SMALL_PRINT_FLUENT_DROP less fluent (beam.fluency, a mean over
# pairs: comparable between readings of as many CJK characters, not between "81支付" and
# "用卡支付"): the adapted model trades a real word for a worse one surely ("安全出门" at 0.51
# -> "安全图门" at 0.69, fluency 0.63 -> 0.07; "注意安全" -> "注意双全"): of its 95 swaps
# on the set and hard tiers, the 8 this stops (0.46-0.76 less fluent) were 4 worse, 1
# better, 3 neither; the right ones lost at most 0.06 ("请客登记" -> "访客登记"). A
# reading it agrees with keeps the shipped model's score: a surer score for the same text
# made a denoised copy's wrong line win over another copy's right one ("新封面包" 0.81 ->
# 0.93 against "新鲜面包" 0.82).
# Round 38: docs/ocr.md "Round 38, small degraded print"
SMALL_PRINT_FLUENT_DROP = 0.3
# and it reads such a line once more from each of SMALL_PRINT_CONFIRM of its middle rows,
# but those readings only vote: one counts (weighed as the copies above, by the same two
# rules) where its text is one the line already read (the first reading, a trimmed copy or
# the adapted model's), and then the line takes that text with the score it was first read
# at: a copy that may not bring a new text cannot invent one ("安全出门" -> "专全西门" from
# the 0.67 copy as a free reading, a hard-tier image 0.75 -> 0.25), while two readings of
# the adapted model that agree on the right text outweigh the first's garble ("消款美甲" ->
# "消毒完毕", "订4寄存" -> "行李寄存"). Round 39: docs/ocr.md "Round 39 (h1), small
# degraded print"; () reads none
SMALL_PRINT_CONFIRM: tuple[float, ...] = (0.67, 0.6)
# small print only: a crop no taller than the recognizer's input (48 rows), which reading
# enlarges: the trimmed crop is read larger still. Crops of larger print (shrunk to read)
# were not measured and are left to the other second readings (a 40-px seven-segment "1111"
# read "111" also comes back trimmed, but that is read_points' work, tested there)


# the lines of one small label (an image up to half params.limit whose boxes run one way
# within LABEL_SPREAD degrees) are turned together by their width-weighted vote
# (rec.choose_turns' ``together``): a label is printed one way up, but under noise a
# turned line's digits or Latin garble read surer than its right way up, and lines of
# one upside-down label came back half turned ("200-120 17 3", "09 28" turned, "通助手关门"
# not: round 31, h1's set)
LABEL_ONE_WAY = True
LABEL_SPREAD = 12.0
# and a crop read both ways leans to the reading with more wide (CJK) print by this much
# score per its share of the print width (rec.choose_turns' ``script``, rec.wide_share):
# CJK print turned around reads as Latin or digit garble the recognizer can be surer of
# ("XENE" at 0.68 against the right way's "牙和冰发" at 0.50, "EVEN" 0.51 against
# "如名北平" 0.21), while Latin print turned around reads as Latin garble, not CJK
SCRIPT_LEAN = 0.3


# a number with a point or colon in it ("1.173", "1:15")
_MARKED_NUMBER = re.compile(r"-?\d+(?:[.:]\d+)+")


def doubles_digits(again: str, first: str) -> bool:
    """Whether ``again`` is ``first`` with one or more of its characters doubled ("1111"
    for "111", "1100" for "100"): the same runs of like characters, none shorter and one
    longer. CTC reads two like characters as one when no blank column falls between."""
    if len(again) <= len(first):
        return False
    runs = [(ch, len(list(g))) for ch, g in itertools.groupby(again)]
    once = [(ch, len(list(g))) for ch, g in itertools.groupby(first)]
    return [ch for ch, _ in runs] == [ch for ch, _ in once] and \
        all(n >= m for (_, n), (_, m) in zip(runs, once, strict=True))


def _box_place(box) -> tuple[float, float]:
    """A ``(quad, score)`` box's middle height and left edge (its corners' mean y, least x)."""
    pts = np.asarray(box[0], float).reshape(-1, 2)
    return float(pts[:, 1].mean()), float(pts[:, 0].min())


def _standing(boxes, b: int, sideways: bool = False) -> bool:
    """Whether box ``b`` of ``boxes`` is read turned a quarter (:func:`.rec.reading_angle`):
    a column, or a line turned by 90 degrees (False where there are no boxes); ``sideways``:
    the page is (:func:`.rec.sideways_page`)."""
    if not boxes:
        return False
    return reads_turned(boxes[b][0], sideways)


def print_width(text: str) -> int:
    """How wide ``text`` prints, in half-width cells: a wide or full-width character (CJK,
    kana, hangul, full-width forms: East Asian width W or F) two, any other one.

    >>> print_width("配送费"), print_width("493"), print_width("总计 58")
    (6, 3, 7)
    """
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _wide_chars(text: str) -> int:
    """How many of ``text``'s characters are wide (East Asian width W or F: CJK, kana,
    hangul, full-width forms)."""
    return sum(unicodedata.east_asian_width(ch) in "WF" for ch in text)


# a CJK line of the chosen denoised copy that both other copies read alike, at its place
# within VOTE_PX pixels, takes their text (round 48, h18; :meth:`LineReading._vote_lines`)
LINE_VOTE = True
VOTE_PX = 8.0
FLOOD = 0.6  # a twin's only box over this share of the image is a flood, not a line
LINE_ASPECT = 2.0  # a box this many times longer than high is a line


def _quad_sides(quad) -> tuple[float, float, float]:
    """(area, longer side, shorter side) of a box's four corners (shoelace area)."""
    q = np.asarray(quad, float).reshape(-1, 2)
    x, y = q[:, 0], q[:, 1]
    area = 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
    sides = np.linalg.norm(q - np.roll(q, -1, axis=0), axis=1)
    a, b = (sides[0] + sides[2]) / 2, (sides[1] + sides[3]) / 2
    return area, float(max(a, b)), float(min(a, b))


def flooded(twin_boxes, first_boxes, shape) -> bool:
    """Whether a denoised twin's reading is a flood that must not replace the first one's:
    its only box covers over ``FLOOD`` of the image while the first reading boxed a real line
    (longer than ``LINE_ASPECT`` times its height). Round 31 (h19): a 13 px italic line
    turned -126 degrees under noise was boxed along the line and read "3omg"; a twin's single
    box over most of the image, read "t", replaced it by its confident characters."""
    if len(twin_boxes) != 1:
        return False
    area, _, _ = _quad_sides(twin_boxes[0][0])
    if area <= FLOOD * shape[0] * shape[1]:
        return False
    for quad, _ in first_boxes:
        _, long, short = _quad_sides(quad)
        if long > LINE_ASPECT * max(short, 1.0):
            return True
    return False


def _confident_chars(lines: list[tuple[str, float]]) -> float:
    """Print width (:func:`print_width`) weighted by each line's score: how much of a
    reading is confident. Width, not characters: the same print read as digits or Latin
    garble gives more characters than it gives as CJK ("地下停车场" read "9961.9"), so
    counting characters chose a denoised copy's garble over another's CJK (round 30: small
    Chinese labels under noise 20-35 and JPEG 20-30, two seeds of h1's set, 0.696 -> 0.731)."""
    return sum(score * print_width(text) for text, score in lines)


class LineReading:
    """Crops, directions and texts of a batch's boxes."""

    def read_tall_as_they_are(self, crops, owners, items, texts) -> None:
        """Without the detector (``use_det=False``), a crop taller than wide was read
        turned a quarter, as a vertical line; read it as it stands too and keep the surer
        reading: a tight crop of one character ("I", "7") is as tall. ``crops`` and
        ``texts`` are updated in place."""
        idx = [k for k, (pos, _) in enumerate(owners)
               if items[pos].bgr.shape[0] >= TALL * items[pos].bgr.shape[1]]
        self._keep_surer(idx, [np.ascontiguousarray(items[owners[k][0]].bgr) for k in idx],
                         crops, owners, items, texts)

    def read_squat_turned(self, crops, owners, items, texts) -> None:
        """Without the detector (``use_det=False``), a crop at least as tall as wide but under
        ``TALL`` times its width was read as it stands; where that reading is short (at most
        ``SQUAT_CHARS`` characters) or unsure (under ``SURE_REC``), read it turned a quarter
        too (as :func:`.rec.crop_box` turns a vertical line) and keep the turned reading where
        it is surer, or where it reads more characters at ``SURE_REC`` or more. Two stacked
        CJK characters of a drawer label are 1.35-1.45 times as tall as wide: as they stood
        they read "红花" as "張", "人参" as "人", "桂枝" as nothing (round 40, h13); a lone
        "7" or "A" reads the same both ways and stays. ``crops`` and ``texts`` are updated
        in place."""
        idx, twins = [], []
        for k, (pos, _) in enumerate(owners):
            h, w = items[pos].bgr.shape[:2]
            text, score = texts[k]
            if not w <= h < TALL * w:
                continue
            if len(text.replace(" ", "")) <= SQUAT_CHARS or score < SURE_REC:
                idx.append(k)
                twins.append(np.ascontiguousarray(np.rot90(items[pos].bgr)))
        if not idx:
            return
        again = self.recognize(twins, [owners[k] for k in idx], items)
        for k, twin, (text, score) in zip(idx, twins, again, strict=True):
            first, sure = texts[k]
            more = len(text.replace(" ", "")) > len(first.replace(" ", "")) and score >= SURE_REC
            if text and (not first or score > sure or more):
                crops[k], texts[k] = twin, (text, score)

    def read_squat_columns(self, crops, owners, items, texts) -> None:
        """A detected box at least as tall as wide but under ``TALL`` times its width, on a
        page that is not sideways, was read as it stands; where that reading is nothing or
        at most ``SQUAT_CHARS`` CJK characters, read it turned a quarter too and keep the
        turned reading where it is two or more characters, every one CJK, and more of them
        than the first at ``SURE_REC`` or more, or surer than the first at ``SURE_CLS`` or
        more ("桂枝" at 0.92 turned, "嶲" at 0.17 as it stood): a drawer label's two
        characters one above the other, boxed whole (78 x 109 px), read "花" as it stood
        (round 40, h13). Only CJK: a digit or a letter turned reads as marks, not as two
        sure ideographs. ``crops`` and ``texts`` are updated in place."""
        idx, twins = [], []
        side: dict[int, bool] = {}
        for k, (pos, b) in enumerate(owners):
            boxes = items[pos].boxes
            w, h = box_size(boxes[b][0])
            text = texts[k][0].replace(" ", "")
            if not w <= h < TALL * w or len(text) > SQUAT_CHARS or \
                    not all(_cjk_char(c) for c in text):
                continue
            if pos not in side:
                side[pos] = sideways_page(boxes)
            if not side[pos]:  # (a sideways page's are read turned already)
                idx.append(k)
                twins.append(np.ascontiguousarray(np.rot90(crops[k])))
        if not idx:
            return
        again = self.recognize(twins, [owners[k] for k in idx], items)
        for k, twin, (text, score) in zip(idx, twins, again, strict=True):
            chars = text.replace(" ", "")
            if len(chars) < 2 or not all(_cjk_char(c) for c in chars):
                continue
            first, sure = texts[k]
            more = score >= SURE_REC and len(chars) > len(first.replace(" ", ""))
            if more or (score >= SURE_CLS and score > sure):
                crops[k], texts[k] = twin, (text, score)

    def read_bars_upright(self, crops, owners, items, texts) -> None:
        """Read a box taller than wide (read turned a quarter, as a vertical line) again as
        it stands when its reading is only dashes ("--", "一", kept at ``min_score`` or
        more), or when the box is no taller than ``GLYPH_TALL`` times its page's text height
        and read as at most two characters, and keep that reading where it has something
        other than dashes at ``min_score`` or more (for the short box: where it is also
        surer than the turned one). A column of text is no row of dashes, but a lone "1"
        of a seven-segment display (two bars one above the other) is such a box; and so is
        one narrow glyph of a line: a code editor's closing "}" alone on its line (ink 6 x
        14 px, boxed 15 x 23) read turned as "子" at 0.91, or as "1" at 0.09 and dropped.
        ``crops`` and ``texts`` are updated in place."""
        idx, twins, glyph = [], [], []
        for k, (text, score) in enumerate(texts):
            chars = set(text.replace(" ", ""))
            bars = bool(chars) and chars <= DASHES and score >= self.min_score
            pos, b = owners[k]
            w, h = box_size(items[pos].boxes[b][0])
            if h < TALL * w:
                continue
            height = items[pos].timings.get("text_height")
            short = len(text.replace(" ", "")) <= 2 and bool(height) and \
                h <= GLYPH_TALL * height
            if bars or short:  # (a dash line dropped anyway stays dropped: no new line)
                idx.append(k)
                twins.append(np.ascontiguousarray(np.rot90(crops[k], -1)))
                glyph.append(not bars)
        if not idx:
            return
        again = self.recognize(twins, [owners[k] for k in idx], items)
        for k, twin, (text, score), short in zip(idx, twins, again, glyph, strict=True):
            if score >= self.min_score and not set(text.replace(" ", "")) <= DASHES and \
                    (not short or not texts[k][0] or score > texts[k][1]):
                crops[k], texts[k] = twin, (text, score)

    def read_sideways_upright(self, crops, owners, items, texts) -> None:
        """On a page stored sideways (:func:`.rec.sideways_page`) a box at least as tall as
        wide but under ``TALL`` times its width was read turned a quarter (a sideways
        table's "Q1", which read "2" as it stood); read it as it stands too and keep the
        surer reading, for a square glyph of a vertical column (one CJK character) is as
        tall. ``crops`` and ``texts`` are updated in place."""
        idx, twins = [], []
        side: dict[int, bool] = {}
        for k, (pos, b) in enumerate(owners):
            boxes = items[pos].boxes
            w, h = box_size(boxes[b][0])
            if not w <= h < TALL * w:
                continue
            if pos not in side:
                side[pos] = sideways_page(boxes)
            if side[pos]:
                idx.append(k)
                twins.append(np.ascontiguousarray(np.rot90(crops[k], -1)))
        self._keep_surer(idx, twins, crops, owners, items, texts)

    def read_colour_axis(self, crops, owners, items, texts) -> None:
        """Read the crops read unsurely (under ``SURE_REC``) whose colours vary along an
        axis their grey does not follow (:func:`.rec.colour_grey`: print differing from
        its ground in hue, not lightness) again on that axis, and keep the surer reading
        with its crop. ``crops`` and ``texts`` are updated in place."""
        idx, twins = [], []
        for k, (text, score) in enumerate(texts):
            if text and score >= SURE_REC:
                continue
            twin = colour_grey(crops[k])
            if twin is not None:
                idx.append(k)
                twins.append(twin)
        self._keep_surer(idx, twins, crops, owners, items, texts)

    def read_points(self, crops, owners, items, texts) -> None:
        """Read the crops read as one number without a point again ``POINT_STRETCH`` times
        as wide, and keep that reading where it is the same number with a decimal point
        put in between two digits, or with a digit doubled that the first reading had once
        (:func:`doubles_digits`), or both. A seven-segment display's point has no advance
        of its own (it sits across two digit cells) and the recognizer often drops it; two
        right-set "1"s side by side fall in neighbouring columns, which CTC reads as one
        ("1111" -> "111"); given more columns it reads both. A number with a point or a
        colon already ("1:15", a clock's "11:15") is read again only when it has a "1",
        for a doubled digit alone. ``texts`` is updated in place."""
        if not POINT_STRETCH:
            return
        idx = [k for k, (text, _) in enumerate(texts)
               if is_plain_number(text) or ("1" in text and _MARKED_NUMBER.fullmatch(text))]
        if not idx:
            return
        import cv2  # noqa: PLC0415 (as rec does: only where an image is read)

        wide = [cv2.resize(crops[k], (round(crops[k].shape[1] * POINT_STRETCH), crops[k].shape[0]),
                           interpolation=cv2.INTER_CUBIC) for k in idx]
        again = self.recognize(wide, [owners[k] for k in idx], items)
        for k, (text, score) in zip(idx, again, strict=True):
            first = texts[k][0]
            digits = text
            if text.count(".") == 1 and re.search(r"\d\.\d", text):
                digits = text.replace(".", "")
            if not is_plain_number(first):  # marked already: only a doubled digit
                digits = text
            if (digits == first and digits != text) or doubles_digits(digits, first):
                texts[k] = (text, score)

    def _keep_surer(self, idx, twins, crops, owners, items, texts) -> None:
        """Read ``twins`` (other pixels of crops ``idx``) and keep each reading, with its
        twin as the crop, where it is surer than the first (or the first read nothing)."""
        if not idx:
            return
        again = self.recognize(twins, [owners[k] for k in idx], items)
        for k, twin, (text, score) in zip(idx, twins, again, strict=True):
            if text and (not texts[k][0] or score > texts[k][1]):
                crops[k], texts[k] = twin, (text, score)

    def _read_denoised(self, good, crops, owners, texts, flipped):
        """Read noisy images again from denoised pixels when the first reading is unsure,
        and keep the surer reading.

        An image qualifies when a line of its reading scores under ``SURE_REC`` (or none was
        found), its size allows (:meth:`_worth_denoising`), and its noise (:func:`noise_sigma`)
        is at least ``NOISY``, or, when it kept lines, its JPEG-smoothed grain
        (:func:`grain_sigma`) at least ``GRAIN``. It is then read whole (detection, direction,
        recognition) three times more (four for faint print), from :func:`denoised_twins`. Of
        those, the reading with the most confident characters (sum of score x characters over
        the lines kept) replaces the first; measured on the degraded tier, the noisy original's
        reading, even when surer, was the worse more often than not (13-17 px text under noise
        of sigma 20-35 and JPEG blocks reads as confident wrong digits). Crops still come from
        each reading's own pixels. Images over ``SIDE``, clean images and sure readings are
        untouched; lines read as dashed rules (dropped anyway) count for neither; a twin
        whose only box floods the image competes only where the first boxed no line
        (:func:`flooded`).
        """
        if not good:
            return crops, owners, texts, flipped
        lines = lines_by_image(owners)
        twins, whose = [], []
        for pos, it in enumerate(good):
            mine = lines.get(pos, [])
            # a dashed rule is dropped whatever it reads: it neither asks for a second
            # reading nor is one kept (a form's dash grid, its noise 0, read its 14 unsure
            # rows of "- - -" as JPEG grain, three times more: 7 s for 420 x 300 pixels)
            rules = {k for k in mine if is_rule_line(texts[k][0])}
            if rules and len(rules) == len(mine):
                continue
            mine = [k for k in mine if k not in rules]
            sure = bool(mine) and all(texts[k][0] and texts[k][1] >= SURE_REC for k in mine)
            kept = self._kept(mine, texts)
            if sure or not self._worth_denoising(it, kept):
                continue
            t0 = time.perf_counter()
            sigma = denoise.noise_sigma(it.bgr)
            it.timings["noise"] = round(sigma, 2)
            if sigma < denoise.NOISY and (not kept or denoise.grain_sigma(it.bgr) < denoise.GRAIN):
                continue
            for name, image in denoise.denoised_twins(it.bgr):
                twins.append(Item(-1 - len(twins), it.label, image, timings={"denoise": 0.0}))
                whose.append((pos, name))
            twins[-1].timings["denoise"] = time.perf_counter() - t0
        if not twins:
            return crops, owners, texts, flipped
        t_crops, t_owners, t_texts, t_flipped, t_lines = read_twins(self, twins)
        best: dict[int, tuple[float, int]] = {}
        for j, (pos, _) in enumerate(whose):
            got = _confident_chars(self._kept(t_lines.get(j, []), t_texts))
            it = good[pos]
            if got > best.get(pos, (0.0, -1))[0] and not flooded(twins[j].boxes, it.boxes,
                                                                  it.bgr.shape):
                best[pos] = (got, j)
            charge_time(it, twins[j], (*STAGES, "denoise"))
        owners, flipped = list(owners), list(flipped)
        for pos, (_, j) in best.items():
            others = [i for i, (p, _) in enumerate(whose) if p == pos and i != j]
            self._vote_lines(j, others, twins, t_owners, t_texts, t_lines)
            it = good[pos]
            it.boxes = twins[j].boxes
            it.timings["denoised"] = whose[j][1]
            for k in lines.get(pos, []):
                owners[k] = (-1, owners[k][1])  # the first reading's lines are dropped
            for k in t_lines.get(j, []):
                crops.append(t_crops[k])
                owners.append((pos, t_owners[k][1]))
                texts.append(t_texts[k])
                flipped.append(t_flipped[k])
        return crops, owners, texts, np.array(flipped, bool)

    def _vote_lines(self, j, others, twins, t_owners, t_texts, t_lines) -> None:
        """A CJK line the chosen denoised copy ``j`` keeps takes the text that both other
        copies read alike at its place (their first line within ``VOTE_PX`` of its box's
        middle height and left edge), where it read another (round 48, h18: the hard tier's
        2/43 "现金支付" read right by two copies, "现金支行" by the chosen one). Only with
        three copies (as measured); Latin lines keep their reading (voted too, the hard
        tier fell), and so does a line they read with other spaces only (the characters are
        voted; spaces stay the copy's), and a column (:func:`_standing`: the hard set's
        vertical tier, seed 2, image 6, "处处闻啼鸟" read right by the chosen copy alone).
        The line keeps its score, or the lesser of the two voters' if surer."""
        if not LINE_VOTE or len(others) != 2:
            return
        places = [[(_box_place(twins[i].boxes[t_owners[k][1]]), t_texts[k])
                   for k in t_lines.get(i, [])] for i in others]
        for k in t_lines.get(j, []):
            text, score = t_texts[k]
            if (not text or score < self.min_score or not any(ord(c) > 0x2E80 for c in text)
                    or _standing(twins[j].boxes, t_owners[k][1])):
                continue
            y, x = _box_place(twins[j].boxes[t_owners[k][1]])
            votes = [next((got for (yy, xx), got in lines
                           if abs(yy - y) <= VOTE_PX and abs(xx - x) <= VOTE_PX), None)
                     for lines in places]
            if (all(votes) and votes[0][0] and votes[0][0] == votes[1][0]
                    and votes[0][0].replace(" ", "") != text.replace(" ", "")):
                t_texts[k] = (votes[0][0], max(score, min(votes[0][1], votes[1][1])))

    def _worth_denoising(self, it: Item, kept: list[tuple[str, float]]) -> bool:
        """Whether an unsure reading of ``it`` (its ``kept`` lines) may be read again from
        denoised copies, by size: an image up to half ``params.limit`` always; one up to
        ``denoise.SIDE`` when it kept lines whose characters score under
        ``denoise.PAGE_SCORE`` on average (grainy 1000-1700 px pages of 14-16 px print,
        read 0.04-0.60, scored 0.58-0.65; pages read 0.93-1.0 under lighter noise, 0.89-1.0);
        larger ones never (a 12-MP photo read three times more costs seconds)."""
        side = max(it.bgr.shape[:2])
        if side <= self.params.limit / 2:
            return True
        if side > denoise.SIDE or not kept:
            return False
        return _confident_chars(kept) < denoise.PAGE_SCORE * sum(print_width(t) for t, _ in kept)

    def _kept(self, ks, texts) -> list[tuple[str, float]]:
        """The readings ``texts[k]`` (k in ``ks``) a result keeps: text at ``min_score``."""
        return [texts[k] for k in ks if texts[k][0] and texts[k][1] >= self.min_score]

    def crop(self, items: list[Item]) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
        """Upright crops of every box, with ``(item position, box index)`` owners."""
        crops, owners = [], []
        for pos, it in enumerate(items):
            sideways = sideways_page(it.boxes)
            for b, (box, _) in enumerate(it.boxes):
                crops.append(crop_box(it.bgr, box, sideways))
                owners.append((pos, b))
        return crops, owners

    def orient(self, crops, owners, items) -> np.ndarray:
        """Turn crops that are upside down by the direction model alone; returns the flags
        (:meth:`directions` says how they are decided)."""
        flags, _ = self.directions(crops, owners, items)
        self._turn(crops, flags)
        return flags

    @staticmethod
    def _turn(crops, flags) -> None:
        for k in np.flatnonzero(flags):
            crops[k] = np.ascontiguousarray(crops[k][::-1, ::-1])

    def directions(self, crops, owners, items) -> tuple[np.ndarray, np.ndarray]:
        """Which crops the direction model reads as upside down, and which of those
        decisions are settled by their page.

        When at least three crops of a page are sure (p > 0.9) and at least 80% of their
        width agrees, every crop of the page follows that majority (a page is seldom printed
        both ways; the model now and then is "sure" of a wrong turn): those are settled
        ``BY_PAGE``. Otherwise a sure crop follows the model and an unsure one its page's
        majority (by width) of sure crops; a crop the model is at least ``SURE_CLS`` sure is
        upright is settled ``BY_MODEL``, and :meth:`read_both_ways` has the last word.
        On the CPU the model reads a page's crops widest first, ``PAGE_STEP`` at a time, and
        stops once ``PAGE_SURE`` are sure one way and none the other: the page settles the
        crops it did not see (only a page more than a fifth of it turned the other way, seen
        among its narrower lines, would have come out otherwise).
        """
        flags = np.zeros(len(crops), bool)
        settled = np.full(len(crops), UNSETTLED, np.int8)
        if not self.use_cls or not crops or self.models.cls is None:
            return flags, settled + BY_MODEL
        t0 = time.perf_counter()
        widths = np.array([c.shape[1] for c in crops], np.float64)
        pos = np.array([p for p, _ in owners])
        # crops the model did not see (their page settled before them) keep NaN: neither
        # sure way, and their page's rule below turns them with it
        probs = np.full((len(crops), 2), np.nan, np.float32)
        pages, counts = np.unique(pos, return_counts=True)
        # pages of at most a step's crops are seen whole anyway: read them in one call (a
        # folder of one-line images, crops read with use_det=False: one call, not one each)
        few = pages[counts <= PAGE_STEP] if self.device == "cpu" else pages
        together = np.flatnonzero(np.isin(pos, few))
        if len(together):
            probs[together] = self._cls_probs([crops[k] for k in together])
        for page in np.setdiff1d(pages, few):
            order = np.flatnonzero(pos == page)
            order = order[np.argsort(-widths[order], kind="stable")]
            n = PAGE_STEP if self.device == "cpu" else len(order)  # a GPU takes them at once
            for start in range(0, len(order), n):
                step = order[start:start + n]
                probs[step] = self._cls_probs([crops[k] for k in step])
                seen = probs[order[:start + len(step)]]
                up, down = int(is_flipped(seen[:, ::-1]).sum()), int(is_flipped(seen).sum())
                if min(up, down) == 0 and max(up, down) >= PAGE_SURE:
                    break
        sure_up, sure_down = is_flipped(probs[:, ::-1]), is_flipped(probs)
        # a page's columns (boxes standing, read turned a quarter) and its lines settle
        # apart: a margin stamp that reads upwards is upside down once turned, whatever the
        # page's lines say (an arXiv stamp on a page of print read "ar0] 004:.C]")
        side = {p: sideways_page(getattr(items[p], "boxes", None) or []) for p in set(pos.tolist())}
        standing = np.array([_standing(getattr(items[p], "boxes", None), b, side[p])
                             for p, b in owners], bool)
        for page, stands in {(p, s) for p, s in zip(pos.tolist(), standing.tolist())}:
            mine = (pos == page) & (standing == stands)
            w_down, w_up = widths[mine & sure_down].sum(), widths[mine & sure_up].sum()
            sure = int((mine & (sure_down | sure_up)).sum())
            if sure >= 3 and max(w_down, w_up) >= 4 * min(w_down, w_up):
                # a page the model reads one way (>= 80% of the sure width): a lone crop it
                # is "sure" goes the other way is a misreading (seen on 6-pt PDF lines)
                flags[mine] = w_down > w_up
                settled[mine] = BY_PAGE
            else:
                flags[mine] = np.where(sure_down[mine] | sure_up[mine], sure_down[mine],
                                       w_down > w_up)
                # very sure the crop is upright: the recognizer is asked only if it reads
                # the crop poorly (read_both_ways); a turn is always checked by reading the
                # crop both ways (most crops are upright, so this costs little, and the model
                # is now and then sure of a wrong turn on seven-segment digits, which read
                # almost as surely upside down: "424581" as "185h2h" at 0.98)
                settled[mine] = np.where((probs[mine].max(1) >= SURE_CLS) & ~flags[mine],
                                         BY_MODEL, UNSETTLED)
        self._share(items, owners, "cls", time.perf_counter() - t0)
        return flags, settled

    def _cls_probs(self, crops) -> np.ndarray:
        """The direction model's (upright, turned) probabilities for each crop. It sees 48 x
        192: a long line squeezed into it is often misread (a 10-pt PDF page came out upside
        down), so a long crop is seen as up to three windows of that shape, averaged. Its
        first window is read first and the others only where that one is under
        ``CLS_ONE_VIEW`` sure either way (a window that sure is seldom outvoted: round 34, the
        same turns and settlings on the mixed, hard, text-free and document sets, 42% fewer
        views on the mixed folder)."""
        cls = self.engine("cls")

        def read(views):
            seen = np.zeros((len(views), 2), np.float32)
            for start in range(0, len(views), self.cls_batch):
                part = views[start:start + self.cls_batch]
                seen[start:start + len(part)] = cls(cls_input(part, self.xp))
            return seen

        plan = []
        for c in crops:
            h, w = c.shape[:2]
            win = 4 * max(h, 1)
            plan.append((win, [0] if w <= 1.25 * win else
                         np.linspace(0, w - win, min(3, -(-w // win))).astype(int).tolist()))
        first = read([c if len(s) == 1 else c[:, s[0]:s[0] + win]
                      for c, (win, s) in zip(crops, plan, strict=True)])
        probs = first.astype(np.float64)
        rest = [k for k, (_, s) in enumerate(plan)
                if len(s) > 1 and first[k].max() < CLS_ONE_VIEW]
        views = [crops[k][:, s:s + plan[k][0]] for k in rest for s in plan[k][1][1:]]
        if views:
            seen, at = read(views), 0
            for k in rest:  # summed in the windows' order, as before
                n, total = len(plan[k][1]), first[k].copy()
                for j in range(n - 1):
                    total += seen[at + j]
                probs[k] = total / n
                at += n - 1
        return probs

    def read_both_ways(self, crops, owners, items, flags, settled, texts) -> None:
        """Read the crops whose direction is not settled (by their page, or by a direction
        model at least ``SURE_CLS`` sure whose reading scores at least ``SURE_REC``) the
        other way up too, and keep the reading the recognizer is surer of
        (:func:`choose_turns`). A crop its page settled is not read again even when its
        reading is poor: the page's sure crops outvote it (on the mixed set such crops were
        30% of the columns read twice, and none turned).

        The direction model sees a 48 x 192 thumbnail and is sometimes sure of the wrong
        turn on small, blurred or unusual print (a seven-segment "4185.94" read as
        "h6581 h"); the recognizer's confidence over the whole line is the better judge.
        ``crops``, ``flags`` and ``texts`` are updated in place.
        """
        if not self.use_cls:
            return
        poor = np.array([not t or score < SURE_REC for t, score in texts], bool)
        settled = np.asarray(settled)
        idx = np.flatnonzero((settled == UNSETTLED) | (poor & (settled != BY_PAGE)))
        if not len(idx):
            return
        turned = [np.ascontiguousarray(crops[k][::-1, ::-1]) for k in idx]
        # a set with a fallback recognizer reads a turned crop again with it only where the
        # turned reading comes within FALLBACK_TURNED of the first: a right-way-up line
        # read upside down is garbage either way
        other = self.recognize(turned, [owners[k] for k in idx], items, fallback=False,
                               rival=[texts[k][1] if texts[k][0] else 0.0 for k in idx])
        near = [j for j, k in enumerate(idx) if other[j][1] < FALLBACK_SCORE
                and other[j][1] >= texts[k][1] - FALLBACK_TURNED]
        if near and self.models.rec_fallback is not None:
            better = self._read_with("rec-fallback", self._fallback_alphabet(),
                                     [turned[j] for j in near])
            for j, (text, score) in zip(near, better, strict=True):
                if text and score > other[j][1]:
                    other[j] = (text, score)
        widths = [crops[k].shape[1] for k in idx]
        pages = [owners[k][0] for k in idx]
        turn = choose_turns([texts[k] for k in idx], other, widths, pages,
                            flipped=flags[idx], prior=UPRIGHT_PRIOR, segments=SEGMENT_LEAN,
                            together=self._one_label(idx, owners, items), script=SCRIPT_LEAN)
        for j in np.flatnonzero(turn):
            k = idx[j]
            crops[k], texts[k], flags[k] = turned[j], other[j], not flags[k]

    def _one_label(self, idx, owners, items) -> np.ndarray | None:
        """Which crops ``idx`` are lines of one small label (``LABEL_ONE_WAY``): an image no
        larger than half ``params.limit``, whose boxes all run one way within
        ``LABEL_SPREAD`` degrees (:func:`.rec.one_way`) and at least two of whose lines are
        read both ways. Such lines are turned together (:func:`.rec.choose_turns`)."""
        if not LABEL_ONE_WAY or len(idx) < 2:
            return None
        pos = np.array([owners[k][0] for k in idx])
        out = np.zeros(len(idx), bool)
        for p, n in zip(*np.unique(pos, return_counts=True), strict=True):
            it = items[p]
            boxes = getattr(it, "boxes", None) or []
            bgr = getattr(it, "bgr", None)
            if n < 2 or not boxes or bgr is None or \
                    max(bgr.shape[:2]) > self.params.limit / 2:
                continue
            if one_way([boxes[owners[k][1]][0] for k in np.asarray(idx)[pos == p]],
                       LABEL_SPREAD):
                out[pos == p] = True
        return out if out.any() else None

    def recognize(self, crops, owners, items, fallback: bool = True,
                  rival=None) -> list[tuple[str, float]]:
        """Text and score of every crop, in batches of similar width. A set with a fallback
        recognizer (``ch-tiny``) reads the crops its own recognizer reads under
        ``FALLBACK_SCORE`` again with it (unless not ``fallback``), and keeps the surer
        reading. A line of small print (a crop no taller than the recognizer's input) read under
        ``TRIM_UNSURE`` is read again from the middle ``TRIM_KEEP`` of its rows
        (:func:`.rec.trim_rows`), one whose reading has CJK print also from the middle
        ``TRIM_WIDE_KEEP`` (and ``TRIM_WIDE_MORE``), and the surest of those readings kept
        where ``TRIM_MARGIN`` surer than the first; for a line with CJK print, the heaviest by
        score plus ``FLUENCY`` times its :func:`.beam.fluency`, the first given
        ``TRIM_WIDE_MARGIN`` (with words, under sets without a fallback recognizer; not for
        dashed rules). Such a line is also read by the small-print recognizer
        (``SMALL_PRINT_KEEPS``), and from ``SMALL_PRINT_CONFIRM`` of its rows as votes for
        texts it already read.

        ``rival`` (a score for each crop: :meth:`read_both_ways`' upright readings for the
        crops turned) leaves out of those second looks a crop whose first reading is more
        than ``TURNED_LOOK`` under its rival's."""
        if not crops:
            return []
        t0 = time.perf_counter()
        out = self._recognize_once(crops, fallback)
        if TRIM_KEEP < 1 and self.words and self.models.rec_fallback is None:  # middle rows
            idx = [i for i, (text, score) in enumerate(out)
                   if text and score < TRIM_UNSURE and not is_rule_line(text)
                   and crops[i].shape[0] <= self.models.rec_height
                   and (rival is None or score >= rival[i] - TURNED_LOOK)]
            first = list(out)
            wide = [i for i in idx if _wide_chars(first[i][0]) > 0
                    and len(first[i][0].replace(" ", "")) >= TRIM_WIDE_CHARS]
            lex = lexicon() if wide and FLUENCY else None
            weight = {i: first[i][1] + FLUENCY * fluency(first[i][0], lex) + TRIM_WIDE_MARGIN
                      for i in wide}
            read = {i: {first[i][0]: first[i][1]} for i in wide}  # each text the line read
            keeps = [(TRIM_KEEP, idx)] + [(k, wide) for k in (TRIM_WIDE_KEEP, *TRIM_WIDE_MORE)]
            for keep, mine in keeps:
                if not keep or keep >= 1 or not mine:
                    continue
                trimmed = {i: trim_rows(crops[i], keep) for i in mine}
                mine = [i for i in mine if trimmed[i] is not crops[i]]  # too low: as read
                again = self._recognize_once([trimmed[i] for i in mine], fallback) \
                    if mine else []
                for i, (text, score) in zip(mine, again, strict=True):
                    if not text:
                        continue
                    if i in weight:  # CJK print: weighed with its fluency
                        read[i].setdefault(text, score)
                        w = score + FLUENCY * fluency(text, lex)
                        if w > weight[i]:
                            weight[i], out[i] = w, (text, score)
                    elif score > first[i][1] + TRIM_MARGIN and score > out[i][1]:
                        out[i] = (text, score)
            # lines of labels, noisy images and denoised copies only (_small_print_page)
            asked = [i for i in wide if self._small_print_page(items[owners[i][0]])] \
                if SMALL_PRINT else []
            small = self._small_print_engine() if asked else None
            for keep in SMALL_PRINT_KEEPS if small is not None else ():
                copies = {i: crops[i] if keep >= 1 else trim_rows(crops[i], keep) for i in asked}
                mine = [i for i in asked if keep >= 1 or copies[i] is not crops[i]]
                again = self._read_with("rec-small", self.alphabet,
                                        [copies[i] for i in mine]) if mine else []
                for i, (text, score) in zip(mine, again, strict=True):
                    if text:
                        read[i].setdefault(text, score)
                    if not text or len(text.replace(" ", "")) < TRIM_WIDE_CHARS or \
                            wide_share(text) < SMALL_PRINT_WIDE or is_rule_line(text):
                        continue
                    fl = fluency(text, lex)
                    if text != out[i][0] and _wide_chars(text) == _wide_chars(out[i][0]) \
                            and fl < fluency(out[i][0], lex) - SMALL_PRINT_FLUENT_DROP:
                        continue  # CJK traded for less fluent CJK ("安全出门" -> "安全图门")
                    w = score + FLUENCY * fl + SMALL_PRINT_LEAN
                    if w > weight[i]:
                        weight[i] = w
                        # agreeing, the line keeps its own score; agreeing up to spaces
                        # too ("珍柔 15分钟" read again as "珍柔 15 分钟" is no surer a
                        # reading, round 48), with the second opinion's spaces
                        same = text.replace(" ", "") == out[i][0].replace(" ", "")
                        out[i] = (text, out[i][1] if same else score)
            for keep in SMALL_PRINT_CONFIRM if small is not None else ():
                copies = {i: trim_rows(crops[i], keep) for i in asked}
                mine = [i for i in asked if copies[i] is not crops[i]]
                again = self._read_with("rec-small", self.alphabet,
                                        [copies[i] for i in mine]) if mine else []
                for i, (text, score) in zip(mine, again, strict=True):
                    if text not in read[i] or len(text.replace(" ", "")) < TRIM_WIDE_CHARS \
                            or wide_share(text) < SMALL_PRINT_WIDE or is_rule_line(text):
                        continue  # a vote for a text the line read already, never a new one
                    fl = fluency(text, lex)
                    if text != out[i][0] and _wide_chars(text) == _wide_chars(out[i][0]) \
                            and fl < fluency(out[i][0], lex) - SMALL_PRINT_FLUENT_DROP:
                        continue
                    w = score + FLUENCY * fl + SMALL_PRINT_LEAN
                    if w > weight[i]:
                        weight[i] = w
                        if text != out[i][0]:  # the text as the line read it first
                            out[i] = (text, read[i][text])
        self._share(items, owners, "rec", time.perf_counter() - t0)
        return out

    def _recognize_once(self, crops, fallback: bool) -> list[tuple[str, float]]:
        """:meth:`recognize` of ``crops`` as they are (no second look at unsure lines)."""
        if not crops:
            return []
        # a line the fallback may read again is mended with words after that reading, not
        # before (one it does not read again is a turned reading far below the first: it
        # loses the turn, mended or not)
        has = self.models.rec_fallback is not None
        out = self._read_with("rec", self.alphabet, crops, FALLBACK_SCORE if has else 0.0)
        if fallback and has:
            idx = [i for i, (text, score) in enumerate(out) if not text or score < FALLBACK_SCORE]
            if idx:
                again = self._read_with("rec-fallback", self._fallback_alphabet(),
                                        [crops[i] for i in idx])
                for i, (text, score) in zip(idx, again, strict=True):
                    if text and score > out[i][1]:
                        out[i] = (text, score)
        return out

    def _read_with(self, which: str, alphabet: list[str], crops,
                   mend_from: float = 0.0) -> list[tuple[str, float]]:
        """Text and score of ``crops`` read by the engine ``which``; an unsure line scored
        at least ``min_score`` and ``mend_from`` is read again with words (:mod:`.beam`)."""
        out: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        mend = max(self.min_score, mend_from)
        rec = self._small_print_engine() if which == "rec-small" else self.engine(which)
        height = self.models.rec_height
        widths = [int(np.ceil(height * c.shape[1] / max(1, c.shape[0]))) for c in crops]
        # a crop is read at its own input width (rec.input_width): buckets on a GPU, whose
        # shapes that repeat matter to cuDNN; on the CPU its step, less padding
        bucket = True if self.device != "cpu" else "step"

        space = alphabet.index(" ") if " " in alphabet else None

        def read(idx):
            x = rec_input([crops[i] for i in idx], height, self.xp, bucket=bucket)
            probs = rec(x)
            frame_width = x.shape[-1] / probs.shape[1]
            columns = ctc_columns(probs, np)
            decoded = ctc_decode(probs, alphabet, np, columns)
            words = lexicon if self.words else None

            def finish(j, text, score):
                # an unsure line read again with what text usually says (a line under
                # min_score is dropped: not worth it); then, unless that changed more than
                # its spaces, the word gaps its ink shows and the reading missed (and
                # field gaps between Chinese characters), the spaces read after a number's
                # separator that it does not show; a display's dropped point last
                again = reread(text, probs[j], alphabet, words, (columns[0][j], columns[1][j])) \
                    if score >= mend else text
                if again and "".join(again.split()) == "".join(text.split()):
                    p = None if space is None else probs[j][:, space]
                    p = p.get() if hasattr(p, "get") else np.asarray(p)
                    again = spurious_spaces(again, columns[0][j], p, alphabet, crops[idx[j]],
                                            frame_width, height) or again
                    again = missed_spaces(again, columns[0][j], p, alphabet, crops[idx[j]],
                                          frame_width, height) or again
                    again = cjk_spaces(again, columns[0][j], alphabet, crops[idx[j]],
                                       frame_width, height) or again
                    again = separator_spaces(again, columns[0][j], alphabet, crops[idx[j]],
                                             frame_width, height) or again
                again = latin_letters(again, probs[j], alphabet)
                again = decimal_point(again, probs[j], alphabet)
                # an amount's commas a photo's blur read as points ("(3.250.00)")
                return half_width(thousands_commas(again, probs[j], alphabet))

            return idx, [(finish(j, text, score), score)
                         for j, (text, score) in enumerate(decoded)]

        batches = plan_batches(widths, self.rec_batch, self.rec_columns, bucket=bucket)
        pool = self._rec_pool() if len(batches) > 1 else None
        for idx, decoded in (pool.map(read, batches) if pool else map(read, batches)):
            for i, d in zip(idx, decoded, strict=True):
                out[i] = d
        return out

    def _small_print_page(self, it) -> bool:
        """Whether the small-print opinion reads ``it``'s unsure small CJK lines: an image no
        larger than half the detector's ``limit`` (a label: the images it was trained and
        measured on, every hard-tier and unseen-face image), a noisy one (pixel noise at least
        ``denoise.NOISY``) or a denoised copy; not a large clean page (round 39, h2: on the
        speed folder it read one turned line of a clean 1017-px page, changing nothing, for
        ~0.2-0.5 CPU s and +37-48 MiB RSS)."""
        bgr = getattr(it, "bgr", None)
        if bgr is None or getattr(it, "index", 0) < 0:
            return True
        return max(bgr.shape[:2]) <= self.params.limit / 2 or it.noise() >= denoise.NOISY

    def _small_print_engine(self):
        """The engine of :func:`.small_print.small_print_model` for this pipeline's
        recognizer, made on first use; None where there is none (another recognizer than
        the one its delta was trained from, or a build that failed: said once)."""
        made = self.__dict__.get("_small_engine", False)
        if made is not False:
            return made
        with self._lock:
            if "_small_engine" in self.__dict__:
                return self._small_engine
            engine = None
            try:
                from .engine import OnnxEngine
                from .small_print import small_print_model

                path = None if self.models.rec_fallback is not None else \
                    small_print_model(self.models.path("rec"))
                if path is not None:
                    threads = self.threads
                    if self.device == "cpu" and self.rec_workers > 1:
                        threads = max(1, (self.threads or 2) // self.rec_workers)
                    # its optimized graph kept in skiff's cache as the other engines'
                    # (round 39, h2: session 0.078 -> 0.042 CPU s, RSS +48 -> +37 MiB)
                    engine = OnnxEngine(path, self.device, threads=threads, gate=self.gate,
                                        arena=True, graph_cache=True)
            except Exception as exc:  # a read-only cache, a broken delta: read as before
                import sys

                print(f"skiff: the small-print recognizer is not used ({exc})", file=sys.stderr)
            self._small_engine = engine
            return engine

    def _rec_pool(self) -> ThreadPoolExecutor | None:
        """On the CPU, recognition batches run ``rec_workers`` at a time (each on a session
        of one intra-op thread: small batches split poorly across threads, whole batches
        side by side keep the cores busy); None on a GPU."""
        if self.device != "cpu" or self.rec_workers < 2:
            return None
        with self._lock:
            if getattr(self, "_rec_executor", None) is None:
                self._rec_executor = ThreadPoolExecutor(self.rec_workers,
                                                        thread_name_prefix="skiff-ocr-rec")
            return self._rec_executor

    @staticmethod
    def _share(items, owners, stage, seconds):
        if not owners:
            return
        for pos, _ in owners:
            items[pos].timings[stage] = items[pos].timings.get(stage, 0.0) + seconds / len(owners)
