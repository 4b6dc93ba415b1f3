"""A form's check boxes read as their state: "☐", "☑" or "☒" before the label.

The recognizer reads a ticked box as "☑", "✓", "V" or nothing, an empty one as "□", "口"
or nothing, and the detector often boxes the label alone (a box at 14-16 px is no text to
it): a user reading a form wants each box's state, the same sign each time, before its
label. The box is found in the pixels: a square frame (each side's line at least
:data:`SIDE_RUN` of its side in one straight run, hollow) as the line's first
ink, or just before the line's box, between 0.6 and 2 times the line's height; what lies
inside it says its state (nothing: empty; a tick's arms rising unlike: ticked; else
crossed). A crossed box read as a letter is :func:`.marks.box_marks`'s."""

from __future__ import annotations

import re

import numpy as np

from .marks import BOX_ASPECT, BULLET, BULLET_SIDE, bullet_mark, is_round_dot
from .spacing import ink_mask

__all__ = ["EMPTY", "TICKED", "CROSSED", "frame_state", "box_before", "checkbox_text",
           "inline_frames"]

EMPTY, TICKED, CROSSED = "\u2610", "\u2611", "\u2612"
SIGNS = (EMPTY, TICKED, CROSSED)
# a box's first word as the recognizer reads it: empty ("□", "口", "☐") or ticked ("✓", "√",
# "V", "☑", "✔"); read with the frame as the line's first ink, it is the box
_EMPTY_READ = re.compile(r"^[\u25a1\u53e3\u2610](?= |$)")
_TICK_READ = re.compile(r"^[\u2713\u2714\u221aVv\u2611](?= |$)")
# or as one character that is no letter or digit of a word ("ș Share my data": "I agree"
# keeps its "I")
_ONE_READ = re.compile(r"^[^\sA-Za-z0-9](?= |$)")
_CJK = re.compile(r"^[\u3400-\u9fff\uf900-\ufaff]")
# a mark filling more than this share of its own extent is solid (an icon's square), no
# tick or cross: the frame is no check box
SOLID = 0.75
# a mark with a straight run of ink over this share of its height or width is a letter's
# stem or bar
STEM = 0.75
# a frame's side is a run of ink along at least this share of the side
SIDE_RUN = 0.8
# ink inside a frame reaching across less than this share of its inside is no mark
MARK = 0.35
# a box's frame is at least this much of the line's height high (DejaVu's "☐" at 14 px:
# 0.55 of its label's box)
LOWEST = 0.45
# a frame's thin side drawn grey (a box glyph at 14 px: one pixel antialiased) is ink where
# it is darker than this share of the way from the region's ink to its paper
FAINT = 0.65
# the frame before a line lies within this many of the line's heights left of its box
REACH = 3.5


def frame_state(bw: np.ndarray, rows: tuple[float, float], strict: np.ndarray | None = None,
                first: bool = False, parts: list | None = None):
    """A square frame in the 0/1 ink mask ``bw`` (faint strokes included) whose height lies
    within ``rows`` (lowest, highest) and which touches no edge of ``bw``: the rightmost,
    or with ``first`` the leftmost where no ink lies before it. Returns ``(state, (x0, y0,
    x1, y1))`` with the state of what ``strict`` (the firmer ink mask, ``bw`` if None; or a
    :class:`_OnUse` making it) holds inside the frame, or None where there is no frame.
    ``parts``: :func:`_frame_parts` of ``bw`` made at a lowest of at most ``rows[0]``
    (shared with :func:`inline_frames`: the same frames, found once)."""
    best = None
    H, W = bw.shape
    for framed in _frame_parts(bw, rows[0]) if parts is None else parts:
        x, y, w, h, part, tall = framed
        if not (rows[0] <= tall and h <= rows[1]) or x == 0 or y == 0 or x + w >= W or \
                y + h >= H:
            continue
        if best is None or (x < best[0] if first else x > best[0]):
            best = (x, y, w, h, part)
    if best is None:
        return None
    x, y, w, h, part = best
    if first and bw[:, :x].any(0).sum() > 1:
        return None
    firm = bw if strict is None else strict
    state = _state(firm[y:y + h, x:x + w], _thickness(part))
    return None if state is None else (state, (x, y, x + w, y + h))


# a hand's tick drawn past the frame (its long arm out over the top side): the frame is the
# rectangle of the component's longest rows and columns where the ink beyond it is at most
# OVERSHOOT of the frame's side out and TICK_SHARE of the frame's own ink
OVERSHOOT, TICK_SHARE = 0.6, 0.5


def _frame_parts(bw: np.ndarray, lowest: float) -> list[tuple]:
    """:func:`_frame_part` of each component of ``bw`` at least ``lowest`` high that is a
    frame, in label order. A caller asking a higher lowest drops those under it by their
    ``tall`` (what :func:`_frame_part` would have done: ``lowest`` only cuts by height)."""
    import cv2

    n, labels, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    found = []
    for k in _sized(stats, lowest):
        framed = _frame_part(labels, stats, k, lowest)
        if framed is not None:
            found.append(framed)
    return found


class _OnUse:
    """A mask made on first use: a line's firm ink (:func:`.spacing.ink_mask`, padded) is
    read only inside a frame, and most lines have none (round 43: 87 lines of the speed
    folder made it for ~0.04 CPU s)."""

    def __init__(self, make):
        self._make, self._mask = make, None

    def __getitem__(self, key):
        if self._mask is None:
            self._mask = self._make()
        return self._mask[key]


def _sized(stats: np.ndarray, lowest: float) -> list[int]:
    """The components 7 px or more each way and ``lowest`` high or more (a frame's least)."""
    w, h = stats[1:, 2], stats[1:, 3]
    return [int(k) + 1 for k in np.flatnonzero((w >= 7) & (h >= 7) & (h >= lowest))]


def _frame_part(labels: np.ndarray, stats: np.ndarray, k: int, lowest: float = 0.0):
    """Component ``k`` as a square frame ``(x, y, w, h, part, tall)`` (its mask over its box;
    ``tall`` the component's height, the tick's overshoot in it, that grew the line's box),
    or the frame inside it where a tick runs out over its sides (:func:`_overshot`), or
    None (``lowest``: no lower component is looked at)."""
    import cv2

    x, y, w, h = (int(stats[k, i]) for i in (cv2.CC_STAT_LEFT, cv2.CC_STAT_TOP,
                                              cv2.CC_STAT_WIDTH, cv2.CC_STAT_HEIGHT))
    if w < 7 or h < 7 or h < lowest:
        return None
    part = labels[y:y + h, x:x + w] == k
    plain = max(w, h) <= BOX_ASPECT * min(w, h) and _is_frame(part)
    cut = _overshot(part) if plain or stats[k, cv2.CC_STAT_AREA] >= 2 * (w + h) else None
    if cut is None or max(cut[0], h - cut[1], cut[2], w - cut[3]) < 2:
        return (x, y, w, h, part, h) if plain else None
    y0, y1, x0, x1 = cut
    return x + x0, y + y0, x1 - x0, y1 - y0, part[y0:y1, x0:x1], h


def _overshot(part: np.ndarray):
    """``(y0, y1, x0, x1)`` of the frame a tick overshoots inside ``part``: the rows whose
    longest run of ink reaches 0.8 of the longest row's (the top and bottom sides) and the
    columns whose run reaches 0.8 of the height between them (left and right), a square
    frame (:func:`_is_frame`) the ink outside which is small (:data:`OVERSHOOT`,
    :data:`TICK_SHARE`) and whose inside holds a tick or a cross; else None."""
    h, w = part.shape
    counts = part.sum(1)  # cheap first: two rows of ink 7 rows apart or more, as a frame's
    full = np.flatnonzero(counts >= max(7, SIDE_RUN * counts.max()))  # top and bottom
    if len(full) < 2 or full[-1] - full[0] < 6:
        return None
    runs_r, runs_c = _runs(part), _runs(part.T)
    wide, tall = int(runs_r.max()), int(runs_c.max())
    if wide < 7 or tall < 7:
        return None
    rows = np.flatnonzero(runs_r >= SIDE_RUN * wide)
    y0, y1 = int(rows[0]), int(rows[-1]) + 1  # the sides' columns span the frame's height
    # (a tick joined to the right side, reaching higher, makes that column the tallest)
    cols = np.flatnonzero(runs_c >= SIDE_RUN * min(tall, y1 - y0))
    x0, x1 = int(cols[0]), int(cols[-1]) + 1
    fh, fw = y1 - y0, x1 - x0
    if (y0, y1, x0, x1) == (0, h, 0, w) or fh < 7 or fw < 7 or \
            max(fh, fw) > BOX_ASPECT * min(fh, fw):
        return None
    if max(y0, h - y1, x0, w - x1) > OVERSHOOT * min(fh, fw):
        return None
    inner = part[y0:y1, x0:x1]
    if not _is_frame(inner) or part.sum() - inner.sum() > TICK_SHARE * inner.sum():
        return None
    # the ink beyond is a mark's that crosses the frame: the inside holds a tick or a cross
    # (a blurred monospaced "d": its bowl a frame, its stem running on above, nothing inside)
    if _state(inner.view(np.uint8), _thickness(inner)) not in (TICKED, CROSSED):
        return None
    return y0, y1, x0, x1


def _is_frame(part: np.ndarray) -> bool:
    h, w = part.shape
    band = max(1, min(w, h) // 6)
    # each side is a straight line: one row (column) of its band holds a run of ink over
    # SIDE_RUN of the side (an "H"'s serifs, a "G"'s arc and an "O" do not)
    sides = [_longest(part[:band]), _longest(part[-band:]), _longest(part[:, :band].T),
             _longest(part[:, -band:].T)]
    if min(sides[:2]) < SIDE_RUN * w or min(sides[2:]) < SIDE_RUN * h:
        return False
    inner = part[band:h - band, band:w - band]
    return inner.size > 0 and inner.mean() < 0.5


def _runs(lines: np.ndarray) -> np.ndarray:
    """The longest run of ink along each of ``lines``' rows (as :func:`_longest`)."""
    lines = np.asarray(lines, dtype=bool)
    idx = np.arange(1, lines.shape[1] + 1)
    last_blank = np.maximum.accumulate(np.where(lines, 0, idx), axis=1)
    return (idx - last_blank).max(axis=1)


def _longest(lines: np.ndarray) -> int:
    """The longest run of ink along any of ``lines``' rows (all rows at once: each cell's
    run length ends where the row's last blank before it was)."""
    lines = np.asarray(lines, dtype=bool)
    if lines.ndim != 2 or not lines.size:
        return 0
    n = lines.shape[1]
    idx = np.arange(1, n + 1)
    last_blank = np.maximum.accumulate(np.where(lines, 0, idx), axis=1)  # 1-based, 0: none
    return int((idx - last_blank).max())


def _thickness(part: np.ndarray) -> int:
    """The frame's line width: the longest run of ink from each side at its middle, unless
    that run is more than :data:`MERGED` times the second shortest of the sides' runs (a
    mark drawn into the frame's sides: a phone photo's blurred tick joined the left and the
    bottom side at their middles, 9 and 10 px against 3 and 3, and the inside left to read
    was the tick's stem, round 34): then that second shortest. A run begins at the side's
    first ink within its band (a frame turned a little misses the box's edge row there: a
    phone photo's tick joined two sides, and the third side's run read 0, round 36)."""
    h, w = part.shape
    band = max(1, min(w, h) // 6)
    runs = []
    for line in (part[:, w // 2], part[::-1, w // 2], part[h // 2], part[h // 2, ::-1]):
        start = np.flatnonzero(line[:band])
        gaps = np.flatnonzero(~line[start[0]:]) if len(start) else np.array([0])
        runs.append(int(gaps[0]) if len(gaps) else len(line) - int(start[0]))
    width = max(runs)
    some = sorted(r for r in runs if r)
    if len(some) >= 2 and width > MERGED * some[1]:
        width = some[1]
    return max(1, min(width, min(h, w) // 4))


# a side's run of ink more than this many times the sides' middle run holds a mark too
MERGED = 2.0


def _state(ink: np.ndarray, thick: int) -> str | None:
    import cv2

    h, w = ink.shape
    t = thick + 1
    inside = np.ascontiguousarray(ink[t:h - t, t:w - t])
    if inside.size == 0:
        return EMPTY
    # a mark is ink across at least MARK of the inside one way; specks are not, nor is a
    # strip of the frame left along the inside's edge (a frame turned a little, blurred)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(inside, connectivity=8)
    ih, iw = inside.shape
    side = min(ih, iw)
    marks = []
    for k in range(1, n):
        x, y, cw, ch = (int(stats[k, i]) for i in (cv2.CC_STAT_LEFT, cv2.CC_STAT_TOP,
                                                    cv2.CC_STAT_WIDTH, cv2.CC_STAT_HEIGHT))
        if max(cw, ch) < MARK * side:
            continue
        strip = min(cw, ch) <= thick + 1 and (x == 0 or y == 0 or x + cw == iw or y + ch == ih)
        if not strip:
            marks.append(k)
    if not marks:
        return EMPTY
    mask = np.isin(labels, marks)
    ys, xs = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    mark = mask[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1]
    mh, mw = mark.shape
    if mark.mean() > SOLID:  # a filled square inside a frame: an icon, no tick or cross
        return None
    if mh < 4 or mw < 4:
        return CROSSED
    # a cross's two arms reach its top apart, at the left and at the right; a tick's left
    # arm starts halfway down, so its top quarter holds ink at the right only; ink in the
    # centre of its top sixth is a letter's arc or apex ("O", "Q", "S", "A")
    top, crest = mark[:max(1, mh // 4)].any(0), mark[:max(1, mh // 6)].any(0)
    edge = max(1, round(0.35 * mw))
    centre = slice(round(0.45 * mw), max(round(0.45 * mw) + 1, round(0.55 * mw)))
    tick = not top[:edge].any() and top[mw - edge:].any() and not crest[centre].any()
    # a letter or a digit in a frame (a keycap: "Q Quit", "K Keep going") is no mark: a
    # stem or a bar along most of the mark ("K", "1", "Z"); a bar across a tick's shape is
    # its arms blurred together (a phone photo's heavy tick, round 34: 11 of 14 columns)
    if _longest(mark.T) >= STEM * mh or _longest(mark) >= STEM * mw and not tick:
        return None
    if crest[centre].any() or not top[mw - edge:].any():
        return None
    return CROSSED if top[:edge].any() else TICKED


def faint_ink(region: np.ndarray) -> np.ndarray:
    """``region``'s ink as a 0/1 uint8 mask, grey strokes included: darker than
    :data:`FAINT` of the way from its darkest ink (2nd percentile) to its paper (the
    median), or for light print on a dark ground the other way round."""
    if region.ndim == 3 and region.shape[2] == 3 and region.dtype == np.uint8 and \
            region.shape[0] * region.shape[1] >= 2:
        return _faint_ink_bytes(region)
    grey = region.mean(2) if region.ndim == 3 else region.astype(np.float64)
    paper, dark, light = np.percentile(grey, (50, 2, 98))
    if light - paper > paper - dark:  # light print on a dark ground
        return (grey > paper + FAINT * (light - paper)).astype(np.uint8)
    return (grey < dark + FAINT * (paper - dark)).astype(np.uint8)


# a BGR pixel's grey as ``region.mean(2)`` gives it, by the sum of its channels
_GREY_OF_SUM = np.arange(766) / 3


def _faint_ink_bytes(region: np.ndarray) -> np.ndarray:
    """:func:`faint_ink` of a BGR uint8 region, the same mask bit for bit, from the counts
    of its channel sums (766 of them) instead of a float64 grey image sorted: the grey
    levels, the percentiles as ``np.percentile`` interpolates them ("linear") and each
    sum's side of the threshold (round 43: ~3x less CPU on a line's crop)."""
    s = region[..., 0].astype(np.uint16)
    s += region[..., 1]
    s += region[..., 2]
    cum = np.cumsum(np.bincount(s.ravel(), minlength=766))
    n = int(cum[-1])
    virtual = (n - 1) * (np.array([50, 2, 98]) / 100)
    below = np.floor(virtual)
    gamma = virtual - below
    lo = _GREY_OF_SUM[np.searchsorted(cum, below, side="right")]
    hi = _GREY_OF_SUM[np.searchsorted(cum, below + 1, side="right")]
    step = hi - lo  # numpy's _lerp, from the nearer end
    level = np.where(gamma >= 0.5, hi - step * (1 - gamma), lo + step * gamma)
    paper, dark, light = level
    if light - paper > paper - dark:  # light print on a dark ground
        ink = _GREY_OF_SUM > paper + FAINT * (light - paper)
    else:
        ink = _GREY_OF_SUM < dark + FAINT * (paper - dark)
    return ink.view(np.uint8)[s]


def _line_height(box: np.ndarray) -> float:
    pts = np.asarray(box, np.float64)
    return float(pts[:, 1].max() - pts[:, 1].min())


def box_before(image: np.ndarray, box: np.ndarray):
    """The state of a check box standing just before the line boxed ``box`` in ``image``
    (within :data:`REACH` of its heights to the left, level with it, 0.6-2 times its
    height, the last ink before the line) and the frame's place in the image as
    ``(state, (x0, y0, x1, y1))``; None where there is none."""
    pts = np.asarray(box, np.float64)
    h = _line_height(box)
    if h < 6:
        return None
    x0, y0 = pts.min(0)
    y1 = pts[:, 1].max()
    H, W = image.shape[:2]
    top, bottom = int(max(0, y0 - 0.7 * h)), int(min(H, y1 + 0.7 * h))
    left, right = int(max(0, x0 - REACH * h)), int(min(W, x0 + 0.1 * h))
    right = max(right, _cut_end(image, int(np.floor(x0)), int(y0), int(np.ceil(y1)), h))
    if right - left < h or bottom - top < h:
        return None
    region = image[top:bottom, left:right]
    bw, firm = faint_ink(region), ink_mask(region)  # the firm ink once for both looks
    found = frame_state(bw, (LOWEST * h, 2.0 * h), firm)
    if found is None:
        dot = _dot_before(firm, h, x0 - left, y0 - top, y1 - top)
        return None if dot is None else \
            (BULLET, (left + dot[0], top + dot[1], left + dot[2], top + dot[3]))
    state, (a, b, c, d) = found
    if left + a >= x0:  # a frame inside the line's box is the line's own (checkbox_text)
        return None
    # the frame is the last ink before the line, level with it
    if bw[:, c + 1:].any(0).sum() > 0.15 * h + 2:
        return None
    middle = top + (b + d) / 2
    if not y0 <= middle <= y1:
        return None
    return state, (left + a, top + b, left + c, top + d)


def _cut_end(image: np.ndarray, x0: int, y0: int, y1: int, h: float) -> int:
    """Where ink the line's box cuts at its left edge (column ``x0``) ends: past the first
    column from ``x0`` on, within half the box's height, with no ink in rows ``y0``-``y1``
    (``x0 + 1`` where its own column holds none). A form's empty box the detector boxed with
    its right side inside the line ("☐ No" boxed from the frame's last columns, read
    "1 No": round 34, ``bench_ocr_user34``) is found whole so."""
    H, W = image.shape[:2]
    y0, y1 = max(0, y0), min(H, y1)
    if not 0 <= x0 < W or y1 - y0 < 2:
        return x0
    stop = int(min(W, x0 + 0.5 * h + 1))
    cols = ink_mask(image[y0:y1, x0:stop]).any(0)
    blank = np.flatnonzero(~cols)
    return x0 + (int(blank[0]) + 1 if len(blank) else 0)  # the blank column kept


# a frame's stub stands at least this many times the height of the tallest ink after it
STUB_TALL = 1.15
# a leading token read from the cut side of a frame ("1", "l", "|", "]"): dropped
_STUB_READ = re.compile(r"^[1lI|\]\[J](?: |$)")


def cut_frame_stub(text: str, crop: np.ndarray) -> str:
    """``text`` without a first token read from a check box's right side that the line's box
    cut at its left edge ("1 No" for "☐ No", round 34): the crop's first ink touches its
    left edge, is shaped as "]" (a bar down at least :data:`LOWEST` of the crop's height,
    joined at its top and its bottom to rows of ink that run to the crop's edge, blank
    between them there), is at most half the crop's height wide, :data:`STUB_TALL` times
    as tall as any ink after it, and stands a fifth of the crop's height apart from it.
    :func:`box_before` then finds the frame whole left of the box."""
    m = _STUB_READ.match(text)
    if m is None or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    import cv2

    bw = ink_mask(crop)
    H = bw.shape[0]
    n, labels, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    edge = [k for k in range(1, n) if stats[k, cv2.CC_STAT_LEFT] == 0]
    if not edge:
        return text
    k = max(edge, key=lambda j: stats[j, cv2.CC_STAT_HEIGHT])
    x, y, w, hk = (int(stats[k, i]) for i in (cv2.CC_STAT_LEFT, cv2.CC_STAT_TOP,
                                               cv2.CC_STAT_WIDTH, cv2.CC_STAT_HEIGHT))
    if hk < LOWEST * H or w > 0.5 * H or w < 2:
        return text
    for j in edge:  # a mark inside the box, cut too, lies within the frame's rows
        if j != k and not (stats[j, cv2.CC_STAT_TOP] > y and stats[j, cv2.CC_STAT_TOP] +
                           stats[j, cv2.CC_STAT_HEIGHT] < y + hk):
            return text
    part = labels[y:y + hk, :w] == k
    band = max(1, hk // 8)
    # "]": its top and bottom rows run to the edge, the inside of the frame blank there,
    # a side down its right (a bare "l", "|" or "I" cut at the edge is ink all down)
    if not (part[:band, 0].any() and part[-band:, 0].any()
            and part[:band].any(0).all() and part[-band:].any(0).all()
            and part[2 * band:hk - 2 * band, 0].mean() < 0.2
            and part[:, -max(1, w // 3):].any(1).mean() >= SIDE_RUN):
        return text
    rest = np.flatnonzero(bw[:, w:].any(0))
    if len(rest) and rest[0] < 0.2 * H:
        return text
    # a frame stands taller than the letters after it (a serif "I" cut at the edge is "]"
    # too, as tall as its word's capitals)
    tallest = max((int(stats[j, cv2.CC_STAT_HEIGHT]) for j in range(1, n)
                   if stats[j, cv2.CC_STAT_LEFT] >= w), default=0)
    if hk < STUB_TALL * tallest:
        return text
    return text[m.end():]


# a bullet before a line's box lies within this many of the line's heights left of it
DOT_REACH = 1.5


def _dot_before(bw: np.ndarray, h: float, x0: float, y0: float, y1: float):
    """The drawn bullet standing just before a line's box in the 0/1 ink mask ``bw`` of the
    region left of it (the box from column ``x0``, rows ``y0``-``y1``, ``h`` high), as
    ``(x0, y0, x1, y1)`` in ``bw``; None where there is none. The detector boxed a phone
    photo's slide lines without their bullets (round 33, ``bench_ocr_user33`` degraded: four
    bullets of four lost; round 32's office slide, one of five): the last ink before the
    box, begun left of the box and within :data:`DOT_REACH` of its heights, must be one
    round solid dot (:func:`.marks.is_round_dot`) :data:`.marks.BULLET_SIDE` of the box's
    height, its middle in the middle half of the box, touching no edge of the region."""
    import cv2

    n, labels, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    edge = int(np.floor(x0))
    marks = [tuple(int(stats[k, i]) for i in (cv2.CC_STAT_LEFT, cv2.CC_STAT_TOP,
                                               cv2.CC_STAT_WIDTH, cv2.CC_STAT_HEIGHT)) + (k,)
             for k in range(1, n) if stats[k, cv2.CC_STAT_AREA] >= 3]  # no specks of noise
    before = [m for m in marks if m[0] < edge]  # begun left of the box (a turned box's edge
    if not before:                              # may cut into the bullet)
        return None
    x, y, w, hk, k = max(before, key=lambda m: m[0] + m[2])
    line = [m[0] for m in marks if m[0] >= edge]
    if x + w > edge + 0.35 * h or line and min(line) - (x + w) < 0.3 * w or \
            any(m[4] != k and m[0] < x + w and m[0] + m[2] > x for m in before) or \
            edge - (x + w) > DOT_REACH * h or x == 0 or y == 0 or y + hk >= bw.shape[0]:
        return None
    if not BULLET_SIDE[0] * h <= max(w, hk) <= BULLET_SIDE[1] * h:
        return None
    mid = y + hk / 2
    if not y0 + 0.25 * (y1 - y0) <= mid <= y0 + 0.75 * (y1 - y0):
        return None
    if not is_round_dot(labels[y:y + hk, x:x + w] == k):
        return None
    if _in_leader(before, (x, y, w, hk, k)):
        return None
    return x, y, x + w, y + hk


# a dot with another dot of its size this many of its widths before it, level with it, is
# the end of a dotted leader and no bullet
LEADER_GAP = 3.0


def _in_leader(marks: list, dot: tuple) -> bool:
    """Whether ``dot`` (``(x, y, w, h, label)`` of a connected part) ends a dotted leader:
    another part of 0.5-2 times its size, level with it (middles within half its height),
    stands within :data:`LEADER_GAP` of its widths before it. A menu's price boxed apart
    from its leader ("Crème brûlée ........ 8.00") read "• 8.00" (round 34,
    ``bench_ocr_user34``'s bold italic menu: three prices of four)."""
    x, y, w, h, k = dot
    mid, side = y + h / 2, max(w, h)
    for a, b, c, d, j in marks:
        if j == k or not 0.5 * side <= max(c, d) <= 2 * side:
            continue
        if abs(b + d / 2 - mid) <= 0.5 * h and 0 <= x - (a + c) <= LEADER_GAP * w:
            return True
    return False


def checkbox_text(text: str, crop: np.ndarray) -> str:
    """``text`` with the check box that is the crop's first ink (a square frame at least
    :data:`LOWEST` of the crop's height) written as its state first: "☐" empty, "☑" ticked,
    "☒" crossed. A first word the box was read as ("□", "口", "✓", "V", one character) is
    replaced, a box the recognizer skipped is put before the words; a reading that
    begins with a box sign already, or with a CJK character ("口罩", "日本"), stays. A line
    whose first ink is a drawn bullet and not a box has it written "• "
    (:func:`.marks.bullet_mark`)."""
    if not text or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    text = cut_frame_stub(text, crop) or text
    boxed = _checkbox_text(text, crop)
    return bullet_mark(text, crop) if boxed == text else boxed


def _checkbox_text(text: str, crop: np.ndarray) -> str:
    bw = np.pad(faint_ink(crop), 1)
    strict = _OnUse(lambda: np.pad(ink_mask(crop), 1))
    # the frames of both looks below, found once (inline_frames's lowest, LOWEST of the
    # padded height, is above frame_state's: it drops the lower ones by their height)
    parts = _frame_parts(bw, LOWEST * crop.shape[0])
    placed = _inline_boxes(text, bw, strict, parts)
    if placed is not None:
        return placed
    if text[0] in SIGNS or _CJK.match(text) and not _EMPTY_READ.match(text):
        return text
    found = frame_state(bw, (LOWEST * crop.shape[0], 1.2 * crop.shape[0]), strict, first=True,
                        parts=parts)
    if found is None or _letter_bowl(text, bw, found):
        return text
    m = _EMPTY_READ.match(text) or _TICK_READ.match(text) or _ONE_READ.match(text)
    return found[0] + (text[m.end():] if m else " " + text)


# letters drawn as a closed bowl: blurred or small, their ink is a hollow square frame
# ("Dr. Jonas Berger" as a phone photo, "Order now" in Liberation Sans Bold at 18 px)
_BOWLS = "DOQ0o"
# a box's label stands apart from it: a space leaves at least 0.4 of the frame's height
# blank after a box glyph (0.41-1.8 in the forms rendered here), the next letter of a word
# at most 0.17 (0 where blur joins them); a box set tight to its label ("☐Yes": 0.05-0.3)
# is read as a box unless its reading begins with a bowl letter
TIGHT = 0.35


def _letter_bowl(text: str, bw: np.ndarray, found: tuple) -> bool:
    """Whether a frame that is a line's first ink, empty or crossed (``found``:
    :func:`frame_state`'s), is the first letter of the reading: the reading begins with a
    letter drawn as a bowl (:data:`_BOWLS`) and the next ink follows the frame within
    :data:`TIGHT` of its height
    (round 44: a business card's "Dr. Jonas Berger" as a phone photo read "☐ Dr. Jonas
    Berger", its blurred "D" a frame touching the "r"; a bold "O" as a phone photo, its
    round inside left at the frame's corners, read "☒ OK")."""
    state, (x0, y0, x1, y1) = found
    if state == TICKED or text[0] not in _BOWLS:
        return False
    after = np.flatnonzero(bw[:, x1:].any(0))
    return len(after) > 0 and after[0] < TIGHT * (y1 - y0)


# a box inside a line (a form's options side by side: "Sex: ☐ Male ☑ Female") stands apart:
# blank columns at least this share of the line's height on each side of its frame
APART = 0.2
# its place in the words is taken where the words' estimated widths put it, within this
# share of the line's width, or not at all
PLACE = 0.12
# signs and tick readings that stand for a box in a reading ("☑男": the tick read, the
# empty boxes after it read as nothing)
_SIGN_CHARS = "".join(SIGNS) + "\u25a1\u2713\u2714\u221a"
_SIGN_OF = {EMPTY: EMPTY, TICKED: TICKED, CROSSED: CROSSED, "\u25a1": EMPTY,
            "\u2713": TICKED, "\u2714": TICKED, "\u221a": TICKED}
# CJK characters drawn as a square frame ("口", "日"): a frame on its own before one of these
# is that character
_FRAME_CJK = "\u53e3\u65e5\u56de\u76ee\u7530\u56d7"
_WIDE = "\u3000-\u9fff\uf900-\ufaff\uff00-\uffef"
_PIECE = re.compile(f"[{_WIDE}]+|[^{_WIDE}]+")


def inline_frames(bw: np.ndarray, strict: np.ndarray, unclear: bool = False,
                  parts: list | None = None) -> list[tuple[int, int, str | None]]:
    """The check boxes standing in a line's 0/1 ink mask ``bw`` (padded), left to right, as
    ``(x0, x1, state)``: square frames :data:`LOWEST`-1.2 of its height that touch no
    edge, with blank columns :data:`APART` of its height on each side (a frame glyph
    inside a word, "口罩", has its neighbours within a few pixels). With ``unclear``, frames
    whose inside says no state (a tick blurred into its frame) are listed too, as None.
    ``parts``: :func:`_frame_parts` of ``bw`` at a lowest of at most ``LOWEST`` of its
    height, where the caller has them."""
    H, W = bw.shape
    cols = bw.any(0)
    gap = max(2, int(round(APART * H)))
    found = []
    for framed in _frame_parts(bw, LOWEST * H) if parts is None else parts:
        x, y, w, h, part, tall = framed
        if not (LOWEST * H <= tall and h <= 1.2 * H) or x == 0 or y == 0 or x + w >= W or \
                y + h >= H:
            continue
        before, after = cols[max(0, x - gap):x], cols[x + w:x + w + gap]
        if before.any() and cols[:x].any() or after.any() or not cols[x + w:].any():
            continue
        state = _state(strict[y:y + h, x:x + w], _thickness(part))
        if state is not None or unclear:
            found.append((x, x + w, state))
    return sorted(found)


def _width(word: str) -> float:
    """A word's width in ems, roughly: CJK characters 1, others 0.55."""
    return sum(1.0 if _CJK.match(c) or "\uff00" <= c <= "\uffef" else 0.55 for c in word)


def _frame_glyph(text: str, frame: tuple, first: int, last: int) -> bool:
    """Whether a frame standing apart inside a line (``frame``: ``(x0, x1, state)`` of
    :func:`inline_frames`, the ink from column ``first`` to ``last``) is a character of the
    reading drawn as a square frame ("日", "口": :data:`_FRAME_CJK`) where the characters'
    estimated widths (:func:`_width`) put one, within :data:`PLACE` of the line. Full-width
    print leaves a blank half em around such a character ("８日（火）": the "日" between a
    full-width digit and a full-width bracket), which a box's margins look like; round 33
    read "１２月８日（火）" as "12月8日( ☐ 火)"."""
    if last <= first or not any(c in _FRAME_CJK for c in text):
        return False
    widths = [0.3 if c.isspace() else _width(c) for c in text]
    total = sum(widths)
    centre = ((frame[0] + frame[1]) / 2 - first) / (last - first)
    at = 0.0
    for c, w in zip(text, widths, strict=True):
        if c in _FRAME_CJK and abs((at + w / 2) / total - centre) <= PLACE:
            return True
        at += w
    return False


def _inline_boxes(text: str, bw: np.ndarray, strict: np.ndarray,
                  parts: list | None = None) -> str | None:
    """``text`` with each check box that stands inside the line (:func:`inline_frames`; at
    least one not its first ink) written as its state before the word it stands before:
    the words' widths (:func:`_width`) against the ink's, the frames and their margins left
    out of both. Box signs and ticks the recognizer read are dropped first (a tick read
    "☑男" stuck to its label, empty boxes read as nothing). None where there is no such
    box or a frame's place is unclear (off by more than :data:`PLACE`)."""
    frames = inline_frames(bw, strict, unclear=True, parts=parts)
    cols = bw.any(0)
    if not cols.any() or not frames:
        return None
    first = int(np.argmax(cols))
    last = len(cols) - int(np.argmax(cols[::-1]))
    frames = [f for f in frames if not _frame_glyph(text, f, first, last)]
    if not frames or all(x0 <= first for x0, _, _ in frames):
        return None  # the box is the line's first ink: checkbox_text's own case
    # the words, and the pieces of a word where CJK and other print meet without a space
    # ("Sex:男Male": a box may stand at either joint), each with whether a space led it
    words, spaced, signed = [], [], []
    for w in text.split():
        lead = w[:len(w) - len(w.lstrip(_SIGN_CHARS))]
        for i, piece in enumerate(_PIECE.findall(w.strip(_SIGN_CHARS))):
            words.append(piece)
            spaced.append(i == 0)
            signed.append(_SIGN_OF.get(lead[-1:]) if i == 0 else None)
    if not words:
        return None
    # the ink without the frames and the blank runs around them
    keep = cols.copy()
    keep[:first] = False
    keep[last:] = False
    inked = np.flatnonzero(cols)
    for x0, x1, _ in frames:
        lo = inked[inked < x0]
        hi = inked[inked >= x1]
        keep[(lo[-1] + 1 if len(lo) else 0):(hi[0] if len(hi) else len(cols))] = False
    ink_cols = np.concatenate(([0], np.cumsum(cols & keep)))
    total_ink = float(ink_cols[-1])
    if total_ink <= 0:
        return None
    widths = [_width(w) for w in words]
    space = 0.3
    at = np.concatenate(([0.0], np.cumsum([w + space for w in widths])))
    at[-1] -= space
    frac_words = at / at[-1]
    places, j0 = {}, 0
    for x0, _, state in frames:
        f = ink_cols[x0] / total_ink
        j = j0 + int(np.argmin(np.abs(frac_words[j0:] - f)))
        if abs(frac_words[j] - f) > PLACE:
            return None
        if j < len(words) and state == EMPTY and words[j][0] in _FRAME_CJK:
            return None
        if state is None:  # a frame whose inside is unclear: the sign read before its word
            state = signed[j] if j < len(words) else None
            if state is None:
                return None
        if j in places:
            return None
        places[j] = state
        j0 = j + 1
    # the box read as a mark of its own ("V", "口", "•") before its label is the box
    read = {j for j in places if j + 1 < len(words) and len(words[j]) == 1 and
            not _CJK.match(words[j]) and (_TICK_READ.match(words[j]) or
                                          _ONE_READ.match(words[j]))}
    out = ""
    for j, w in enumerate(words):
        if j in places:
            out += " " + places[j]
        if j not in read:
            out += (" " if spaced[j] or j in places else "") + w
    if len(words) in places:
        out += " " + places[len(words)]
    return out.strip()
