"""Cards side by side: lines framed together are read together.

Shelf price tags in one photo (a name over a big price over a unit price, three tags in a
row), business cards on a table, a dashboard's tiles: the rows of the page run across the
cards, so reading row by row mixes them ("Bananas Oat milk 1L Eggs 10 pcs"). A card is told
by its frame or its fill: :func:`panel_rows` finds the regions of the image that no edge
crosses (the text's own boxes filled in), and where two regions or more side by side each
hold lines in two rows or more, reads each such region's lines together, in the place of
its first line. A ruled table's cells hold a line each and stay row by row; a page without
frames is one region. A menu's columns of entries, each a name joined to its price by a
dotted leader, are read column by column too (:func:`leader_columns`).
"""

from __future__ import annotations

import re

import numpy as np

from .layout import _gutters

__all__ = ["panel_rows", "leader_columns", "leader_stubs"]

# the regions are found at most this many pixels on the image's longer side
PANEL_SIDE = 800
# a step of at least this many grey levels (any colour channel) between neighbours is an edge
PANEL_EDGE = 24.0
# a weaker step is an edge where it joins a step of PANEL_EDGE (:func:`_edges`)
PANEL_EDGE_WEAK = 16.0
# at most this many boxes on the page (a dense page is no set of cards)
PANEL_BOXES = 80
# a frame round a box's own print (a keycap) is looked past FRAME_DEPTH deep, along the
# first ring 2, 4, ... FRAME_RING pixels (of the shrunk image) outside it a quarter of which
# is free of edges
FRAME_DEPTH, FRAME_RING = 2, 12


def panel_rows(rows: list[list[int]], boxes: list[np.ndarray],
               image: np.ndarray | None) -> list[list[int]]:
    """``rows`` (indices of ``boxes``, in reading order) with each card's lines read
    together: where at least two regions of ``image`` (grey or colour) that no edge
    crosses lie side by side (a row holds lines of both) and each holds lines in two rows
    or more, a card's rows come one after the other where its first line was, the other
    lines as they were. Unchanged otherwise."""
    if image is None or len(boxes) < 4 or len(boxes) > PANEL_BOXES or \
            not any(len(row) >= 2 for row in rows):
        return rows
    label = _box_regions(image, boxes)
    if label is None:
        return leader_columns(rows, boxes, image)
    row_of = {i: r for r, row in enumerate(rows) for i in row}
    members: dict[int, list[int]] = {}
    for i, lab in enumerate(label):
        if lab > 0:
            members.setdefault(int(lab), []).append(i)
    cards = {lab: idx for lab, idx in members.items()
             if len({row_of[i] for i in idx}) >= 2}
    side_by_side = any(len({int(label[i]) for i in row if int(label[i]) in cards}) >= 2
                       for row in rows)
    if len(cards) < 2 or not side_by_side:
        return leader_columns(rows, boxes, image)
    out: list[list[int]] = []
    done: set[int] = set()
    for row in rows:
        loose: list[int] = []
        for i in row:
            lab = int(label[i])
            if lab not in cards:
                loose.append(i)
                continue
            if lab in done:
                continue
            if loose:
                out.append(loose)
                loose = []
            done.add(lab)
            for r in sorted({row_of[j] for j in cards[lab]}):
                out.append([j for j in rows[r] if int(label[j]) == lab])
        if loose:
            out.append(loose)
    return out


def _box_regions(image: np.ndarray, boxes: list[np.ndarray]) -> np.ndarray | None:
    """The label of the edge-free region each box stands in (0: none): the commonest
    along its outline (a detector's box has paper around its ink), on the image shrunk to
    ``PANEL_SIDE`` and smoothed."""
    import cv2

    h, w = image.shape[:2]
    f = min(1.0, PANEL_SIDE / max(h, w))
    small = image if f == 1.0 else cv2.resize(image, (max(1, round(w * f)), max(1, round(h * f))),
                                              interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(small.astype(np.float32), (0, 0), 1.0)
    if small.ndim == 2:
        small = small[..., None]
    step = np.zeros(small.shape[:2], np.float32)
    for c in range(small.shape[2]):
        ch = np.ascontiguousarray(small[..., c])
        gx = cv2.Sobel(ch, cv2.CV_32F, 1, 0, ksize=3) / 4.0
        gy = cv2.Sobel(ch, cv2.CV_32F, 0, 1, ksize=3) / 4.0
        step = np.maximum(step, np.hypot(gx, gy))
    free = 1 - _edges(step)
    n, regions, stats, _ = cv2.connectedComponentsWithStats(free, connectivity=4)
    if n < 3:
        return None
    pts = [np.asarray(b, np.float64) * f for b in boxes]
    out = np.zeros(len(boxes), np.int64)
    rects: dict[int, tuple[int, int, int, int]] = {}
    sh, sw = regions.shape
    for k, p in enumerate(pts):  # the paper along the box's outline, around its ink
        x0, y0 = (int(max(0, np.floor(v) - 2)) for v in p.min(0))
        x1, y1 = int(min(sw, np.ceil(p[:, 0].max()) + 3)), int(min(sh, np.ceil(p[:, 1].max()) + 3))
        if x1 <= x0 or y1 <= y0:
            continue
        ring = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.polylines(ring, [np.round(p - (x0, y0)).astype(np.int32)], True, 1, 3)
        labels = regions[y0:y1, x0:x1][ring > 0]
        labels = labels[labels > 0]
        if len(labels):
            out[k] = int(np.bincount(labels).argmax())
            rects[k] = (x0, y0, x1, y1)
    held = np.bincount(out, minlength=n)
    for k, rect in rects.items():  # a region holding this box alone may be its own frame
        if held[out[k]] == 1:
            out[k] = _outside_frames(regions, stats, int(out[k]), rect, held)
    return out


def _outside_frames(regions: np.ndarray, stats: np.ndarray, lab: int,
                    rect: tuple[int, int, int, int], held: np.ndarray) -> int:
    """The region a box stands in, past the small frames round its own print: a keycap's
    or a button's inside (a region that fits the box widened by its height each way and
    holds no other box, ``held`` counting each region's boxes) is no card, and the box
    belongs where the frame does, the commonest region along a ring just outside it (round
    39: a shortcut sheet's "Ctrl + C" in keycaps read after both cards). A price tag
    holding its price and other lines stays a card. Two frames deep at most."""
    import cv2

    x0, y0, x1, y1 = rect
    pad = y1 - y0
    sh, sw = regions.shape
    for _ in range(FRAME_DEPTH):
        rx, ry, rw, rh = (int(v) for v in stats[lab, :4])
        if not (rx >= x0 - pad and ry >= y0 - pad and rx + rw <= x1 + pad
                and ry + rh <= y1 + pad) or held[lab] > 1:
            return lab
        for out in range(2, FRAME_RING + 1, 2):  # past the frame's edge, however blurred
            gx0, gy0 = max(0, rx - out), max(0, ry - out)
            gx1, gy1 = min(sw, rx + rw + out), min(sh, ry + rh + out)
            ring = np.zeros((gy1 - gy0, gx1 - gx0), np.uint8)
            cv2.rectangle(ring, (0, 0), (gx1 - gx0 - 1, gy1 - gy0 - 1), 1, 2)
            labels = regions[gy0:gy1, gx0:gx1][ring > 0]
            labels = labels[(labels > 0) & (labels != lab)]
            if len(labels) >= ring.sum() // 4:
                break
        else:
            return lab
        lab = int(np.bincount(labels).argmax())
    return lab


def _edges(step: np.ndarray) -> np.ndarray:
    """The edge pixels of a map of grey steps, with hysteresis (as Canny's): a step of
    ``PANEL_EDGE`` or more, and a step of ``PANEL_EDGE_WEAK`` or more joined to one. A
    phone photo's blur and JPEG leave a thin grey frame steps of 21-26 along its length
    (a week planner's 1-px rules in grey 120): cut at 24 alone the frame leaks and its
    cards merge; a weak step of the paper's noise joins no strong one."""
    import cv2

    weak = (step >= PANEL_EDGE_WEAK).astype(np.uint8)
    n, label = cv2.connectedComponents(weak, connectivity=8)
    strong = np.zeros(n, bool)
    strong[np.unique(label[step >= PANEL_EDGE])] = True
    strong[0] = False
    return strong[label].astype(np.uint8)


# a dotted leader between two boxes of a row: at least LEADER_DOTS dots (each at most
# LEADER_DOT of the row's height, on one straight line within that), spread over at least
# LEADER_SPREAD of the gap, and no bigger ink there
LEADER_DOTS = 4
LEADER_DOT = 0.3
LEADER_SPREAD = 0.5
# at least this many rows hold two entries or more (a name, its leader, its price)
LEADER_ROWS = 3


def leader_columns(rows: list[list[int]], boxes: list[np.ndarray],
                   image: np.ndarray) -> list[list[int]]:
    """``rows`` with a menu's columns read one after the other: where at least
    :data:`LEADER_ROWS` rows each hold two entries or more side by side, an entry a box
    joined to the next box of its row by a dotted leader in ``image`` (a dish and its price),
    and gutters no entry or box of those rows crosses part the entries into columns, the
    rows from the first such row to the last, and the rows just above and below them that
    hold a box in every column (each column's heading), are read column by column (a
    two-column menu read across gave "Two eggs on toast 7.50 Soup of the day 6.40", round
    36). Unchanged otherwise: a table's cells have no leaders between them."""
    if len(boxes) < 2 * LEADER_ROWS or len(boxes) > PANEL_BOXES:
        return rows
    ext = np.array([(p[:, 0].min(), p[:, 0].max(), p[:, 1].min(), p[:, 1].max())
                    for p in (np.asarray(b, np.float64) for b in boxes)])
    entries = {}  # row index -> [(x0, x1)] of its entries
    whole = set()  # rows whose entries are boxed whole
    for r, row in enumerate(rows):
        order = sorted(row, key=lambda i: ext[i, 0])
        spans = [(ext[a, 0], ext[b, 1]) for a, b in zip(order, order[1:])
                 if _leader_between(image, ext[a], ext[b])]
        if len(spans) < 2 and len(order) >= 2:
            # a small print's entry boxed whole, its leader inside (a thumbnail, round 47)
            inside = [(ext[i, 0], ext[i, 1]) for i in order if _leader_inside(image, ext[i])]
            if len(inside) >= 2 and not spans:
                spans = inside
                whole.add(r)
        if len(spans) >= 2:
            entries[r] = spans
    if len(entries) < LEADER_ROWS:
        return rows
    first, last = min(entries), max(entries)
    height = float(np.median(ext[:, 3] - ext[:, 2]))
    spans = np.array([sp for r in entries for sp in entries[r]] +
                     [(ext[i, 0], ext[i, 1]) for r in range(first, last + 1) for i in rows[r]])
    # entries boxed whole stand a grown box's margin closer (a thumbnail's gutter 17 px
    # between boxes 20 px tall)
    cuts = _gutters(list(range(len(spans))), spans[:, 0], spans[:, 1],
                    height * (LEADER_GUTTER if whole else 1.0))
    if not cuts:
        return rows
    edges = [-np.inf, *cuts, np.inf]

    def column(i: int) -> int | None:
        for c, (lo, hi) in enumerate(zip(edges, edges[1:])):
            if lo < ext[i, 0] and ext[i, 1] < hi:
                return c
        return None

    def every_column(row: list[int]) -> bool:
        cols = [column(i) for i in row]
        return None not in cols and set(cols) == set(range(len(cuts) + 1))

    if not all(every_column(rows[r]) for r in range(first, last + 1) if r in entries):
        return rows
    while first > 0 and every_column(rows[first - 1]):
        first -= 1
    while last + 1 < len(rows) and every_column(rows[last + 1]):
        last += 1
    band = rows[first:last + 1]
    if any(column(i) is None for row in band for i in row):
        return rows
    out = rows[:first]
    for c in range(len(cuts) + 1):
        out.extend(part for row in band if (part := [i for i in row if column(i) == c]))
    return out + rows[last + 1:]


def _leader_between(image: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the gap between the boxes of extents ``a`` and ``b`` (x0, x1, y0, y1; ``b``
    right of ``a``, level with it) holds a dotted leader and nothing else."""
    import cv2

    from .spacing import ink_mask

    h = max(a[3] - a[2], b[3] - b[2])
    x0, x1 = int(np.ceil(max(a[1], 0))) + 1, int(np.floor(b[0])) - 1
    y0, y1 = int(max(0, min(a[2], b[2]))), int(min(image.shape[0], max(a[3], b[3])))
    if x1 - x0 < 2 * h or y1 - y0 < 4:
        return False
    bw = ink_mask(image[y0:y1, x0:x1])
    n, _, stats, cent = cv2.connectedComponentsWithStats(bw, connectivity=8)
    parts = stats[1:]
    big = np.maximum(parts[:, cv2.CC_STAT_WIDTH], parts[:, cv2.CC_STAT_HEIGHT]) > LEADER_DOT * h
    dots = (~big) & (parts[:, cv2.CC_STAT_AREA] >= 2)
    if big.any() or dots.sum() < LEADER_DOTS:
        return False
    cx, cy = cent[1:][dots, 0], cent[1:][dots, 1]
    if float(cx.max() - cx.min()) < LEADER_SPREAD * (x1 - x0):
        return False
    slope, at = np.polyfit(cx, cy, 1)  # on a line, turned as the page is (a phone photo)
    return abs(slope) <= 0.1 and float(np.abs(cy - (slope * cx + at)).max()) <= LEADER_DOT * h


# a box holding a whole entry (a name, its dotted leader, its price: a thumbnail's small
# print boxed in one) holds at least LEADER_RUN dots one after the other at a steady step
# (each within LEADER_EVEN of the run's median step, that step at most LEADER_PITCH of the
# box's height) on one line in the box's lower half, over at least LEADER_WIDTH of the
# box's width, with ink (the name, the price) on both sides
LEADER_RUN = 8
LEADER_EVEN = 0.3
LEADER_PITCH = 0.5
LEADER_WIDTH = 0.2
# and such columns stand at least LEADER_GUTTER of a box's height apart
LEADER_GUTTER = 0.5


def _leader_inside(image: np.ndarray, e: np.ndarray) -> bool:
    """Whether the box of extent ``e`` (x0, x1, y0, y1) holds a dotted leader between a
    name and a price (:data:`LEADER_RUN`)."""
    import cv2

    from .spacing import ink_mask

    x0, x1 = int(max(0, np.floor(e[0]))), int(min(image.shape[1], np.ceil(e[1])))
    y0, y1 = int(max(0, np.floor(e[2]))), int(min(image.shape[0], np.ceil(e[3])))
    h = y1 - y0
    if h < 6 or x1 - x0 < 4 * h:
        return False
    bw = ink_mask(image[y0:y1, x0:x1])
    n, _, stats, cent = cv2.connectedComponentsWithStats(bw, connectivity=8)
    parts, cent = stats[1:], cent[1:]
    if not len(parts):
        return False
    size = np.maximum(parts[:, cv2.CC_STAT_WIDTH], parts[:, cv2.CC_STAT_HEIGHT])
    dots = (size <= LEADER_DOT * h) & (parts[:, cv2.CC_STAT_AREA] >= 2) & (cent[:, 1] >= 0.45 * h)
    idx = np.flatnonzero(dots)
    if len(idx) < LEADER_RUN:
        return False
    idx = idx[np.argsort(cent[idx, 0])]
    best, run = [], [idx[0]]
    for a, b in zip(idx, idx[1:], strict=False):
        step = cent[b, 0] - cent[a, 0]
        med = float(np.median(np.diff(cent[run, 0]))) if len(run) >= 2 else step
        if len(run) >= 2 and abs(step - 2 * med) <= LEADER_EVEN * med:
            step = step / 2  # a dot the blur lost
        if 0 < step <= LEADER_PITCH * h and \
                abs(cent[b, 1] - cent[a, 1]) <= LEADER_DOT * h and \
                abs(step - med) <= LEADER_EVEN * med:
            run.append(b)
        else:
            best, run = max(best, run, key=len), [b]
    best = max(best, run, key=len)
    if len(best) < LEADER_RUN:
        return False
    lo, hi = cent[best[0], 0], cent[best[-1], 0]
    if hi - lo < LEADER_WIDTH * (x1 - x0):
        return False
    big = size > LEADER_DOT * h
    return bool((big & (cent[:, 0] < lo)).any() and (big & (cent[:, 0] > hi)).any())


# a point read at the end of a dish's name is its dotted leader's first dot where it stands
# in the leader's run (at most LEADER_STEP off the run's median step from the next dot) and
# no lone point stands between the name's last letter and the run ("Croissant. 2.80" on a
# phone photo; a word's own point, "incl. ........ 4.50", stands a space before the run)
LEADER_STEP = 0.2
# a price, a discount's negative one too ("Discount. -0.50", round 44)
_AMOUNT = r"[-\u2212]?[$\u20ac\u00a3\u00a5]?\s?[-\u2212]?\d[\d.,]*"
_NAME_POINT = re.compile(rf"(?<=[^\W\d_])\.(?=$| {_AMOUNT}$)")
_PRICE = re.compile(rf"^{_AMOUNT}$")


def leader_stubs(rows: list[list[int]], boxes: list[np.ndarray], texts: list[str],
                 image: np.ndarray) -> list[str]:
    """``texts`` without the point a name's reading ends in where that point is the first
    dot of the dotted leader after it: a line read "Croissant." before its price's box
    ("2.80"), or "Orange juice. 4.50" as one box. In ``image`` the row's small marks on the
    baseline (at most :data:`LEADER_DOT` of the box's height, below its middle) between
    the name's last letter and the price form a run of :data:`LEADER_DOTS` or more at
    an even step (within :data:`LEADER_STEP` of its median); the point goes where the run
    begins right after the letter, its first dot inside the name's box, and stays where a
    lone point stands before the run."""
    import cv2

    from .spacing import ink_mask

    out = list(texts)
    ext = [(p[:, 0].min(), p[:, 0].max(), p[:, 1].min(), p[:, 1].max())
           for p in (np.asarray(b, np.float64) for b in boxes)]
    for row in rows:
        order = sorted(row, key=lambda i: ext[i][0])
        for k, i in enumerate(order):
            m = _NAME_POINT.search(texts[i])
            if m is None:
                continue
            x0, x1, y0, y1 = ext[i]
            if m.end() == len(texts[i]):  # the price in the next box
                if k + 1 == len(order) or not _PRICE.match(texts[order[k + 1]].strip()):
                    continue
                x1 = ext[order[k + 1]][0]
            h = y1 - y0
            a, b = int(max(x0, 0)), int(min(x1, image.shape[1]))
            top, bottom = int(max(y0, 0)), int(min(y1, image.shape[0]))
            if b - a < 4 * h or bottom - top < 4:
                continue
            bw = ink_mask(image[top:bottom, a:b])
            n, _, stats, cent = cv2.connectedComponentsWithStats(bw, connectivity=8)
            parts, cent = stats[1:], cent[1:]
            order_x = np.argsort(parts[:, cv2.CC_STAT_LEFT])
            small = (np.maximum(parts[:, cv2.CC_STAT_WIDTH], parts[:, cv2.CC_STAT_HEIGHT])
                     <= LEADER_DOT * h) & (cent[:, 1] >= 0.5 * (bottom - top)) & \
                (parts[:, cv2.CC_STAT_AREA] >= 2)
            kinds = small[order_x]
            xs = cent[order_x, 0]
            # the longest run of small marks one after another
            best, start = (0, 0), None
            for j, s in enumerate([*kinds, False]):
                if s and start is None:
                    start = j
                elif not s and start is not None:
                    if j - start > best[1] - best[0]:
                        best = (start, j)
                    start = None
            lo, hi = best
            if hi - lo < LEADER_DOTS + 1 or lo == 0:
                continue
            steps = np.diff(xs[lo:hi])
            step = float(np.median(steps[1:]))
            # the run ends where its even steps do: a negative price's "-" boxed with the
            # line stands on the run's end ("Voucher ...... -2.00", round 44)
            while len(steps) > LEADER_DOTS and abs(steps[-1] - step) > LEADER_STEP * step:
                steps = steps[:-1]
            # the run's first step even with the rest, its first mark inside the name's own
            # box (read): a leader's dot; a point merged into its letter under blur leaves
            # the run to begin past the box ("Soup approx." on a photo)
            if step > 0 and abs(steps[0] - step) <= LEADER_STEP * step and \
                    np.all(np.abs(steps[1:] - step) <= LEADER_STEP * step) and \
                    a + xs[lo] < ext[i][1]:
                out[i] = texts[i][:m.start()] + texts[i][m.end():]
    return out
