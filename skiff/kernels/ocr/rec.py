"""Crops, direction and recognition: from boxes on an image to text with confidences.

* :func:`crop_box` warps each (possibly rotated) box to an upright rectangle; a crop much
  taller than wide is a vertical line and is turned 90 degrees.
* :func:`cls_input` / :func:`is_flipped` use the direction model (0 or 180 degrees).
* :func:`rec_input` resizes crops to the recognizer's height, padding each batch to one
  width bucket so shapes repeat (GPU kernels are chosen once per shape).
* :func:`ctc_decode` reads the recognizer's per-column class probabilities: best class per
  column, repeats merged, blanks dropped; the score is the mean probability of the kept
  characters. It runs on ``xp``.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .spacing import ink_mask

__all__ = ["crop_box", "cls_input", "is_flipped", "rec_input", "ctc_decode", "ctc_columns",
           "width_bucket", "plan_batches", "choose_turns", "is_number", "is_shape_line",
           "colour_grey", "reading_angle", "decimal_point", "step_width", "input_width",
           "is_plain_number", "looks_turned_segments", "box_size", "is_rule_line",
           "is_leader_line", "strip_leader", "row_leaders", "one_way", "sideways_page",
           "reads_turned"]

CLS_SHAPE = (48, 192)
# a box at least this many times taller than wide is a vertical line: read turned a quarter
TALL = 1.5
# a page is sideways (stored turned a quarter) when it has at least SIDEWAYS_BOXES boxes and
# at least SIDEWAYS_SHARE of them stand (TALL): its short boxes taller than wide are turned
# lines too (a sideways table's "Region Q1 Q2 Q3 Q4": 12 of 16 boxes stand, the four "Qn"
# boxes 46 x 36 px do not)
SIDEWAYS_BOXES = 3
SIDEWAYS_SHARE = 0.7
BUCKETS = (64, 128, 192, 256, 320, 480, 640, 960, 1280, 1920, 2560, 3200)


def sideways_page(boxes) -> bool:
    """Whether a page's ``boxes`` (4-point boxes, or (box, score) pairs) are those of a page
    stored sideways: at least ``SIDEWAYS_BOXES`` boxes, and at least ``SIDEWAYS_SHARE`` of
    them standing (:data:`TALL`). On such a page a short line ("Q1", 46 x 36 px turned) is
    taller than wide but under ``TALL``: it is a turned line too (:func:`reads_turned`).

    >>> tall = np.array([[0, 0], [10, 0], [10, 60], [0, 60]], float)
    >>> sideways_page([tall] * 4), sideways_page([tall] * 2)
    (True, False)
    """
    sizes = [box_size(np.asarray(b[0] if isinstance(b, tuple) else b, np.float64))
             for b in boxes]
    if len(sizes) < SIDEWAYS_BOXES:
        return False
    return sum(h >= TALL * w for w, h in sizes) >= SIDEWAYS_SHARE * len(sizes)


def reads_turned(box: np.ndarray, sideways: bool = False) -> bool:
    """Whether ``box`` is read turned a quarter (:func:`crop_box`): it stands (:data:`TALL`),
    or its page is sideways (:func:`sideways_page`) and it is at least as tall as wide."""
    w, h = box_size(np.asarray(box, np.float64))
    return h >= TALL * w or (sideways and h >= w)


def crop_box(image: np.ndarray, box: np.ndarray, sideways: bool = False) -> np.ndarray:
    """The upright crop under ``box`` (tl, tr, br, bl) by a perspective warp, turned a
    quarter where it is read turned (:func:`reads_turned`; ``sideways``: its page is)."""
    import cv2

    box = box.astype(np.float32)
    w, h = box_size(box)
    # warp from the box's own surroundings (the cubic kernel reaches 2 px): a grey image
    # shared across channels (a zero-stride view) is then copied only there, and warped once
    x0, y0 = np.maximum(np.floor(box.min(0)).astype(int) - 4, 0)
    x1, y1 = np.ceil(box.max(0)).astype(int) + 5
    part = image[y0:max(y1, y0 + 1), x0:max(x1, x0 + 1)]
    grey = part.ndim == 3 and part.strides[2] == 0
    part = part[..., 0] if grey else part
    box = box - np.array([x0, y0], np.float32)
    dst = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    m = cv2.getPerspectiveTransform(box, dst)
    crop = cv2.warpPerspective(part, m, (w, h), flags=cv2.INTER_CUBIC,
                               borderMode=cv2.BORDER_REPLICATE)
    if grey:
        crop = cv2.cvtColor(crop, cv2.COLOR_GRAY2BGR)
    if h >= TALL * w or (sideways and h >= w):  # a vertical line: read it turned
        crop = np.rot90(crop).copy()
    return crop


def box_size(box: np.ndarray) -> tuple[int, int]:
    """A box's (width, height) in pixels: its longer top/bottom and left/right edges."""
    w = int(round(max(np.linalg.norm(box[0] - box[1]), np.linalg.norm(box[2] - box[3]))))
    h = int(round(max(np.linalg.norm(box[0] - box[3]), np.linalg.norm(box[1] - box[2]))))
    return max(w, 1), max(h, 1)


def reading_angle(box: np.ndarray, flipped: bool, as_it_stands: bool = False,
                  sideways: bool = False) -> float:
    """The direction (radians, image axes: y down) in which the text of ``box`` reads, as
    :func:`crop_box` and the direction decision turned it: along the top edge for a wide
    box, down its left edge for a tall one (a column, or a line turned by 90 degrees), the
    other way when the crop was turned around. ``as_it_stands``: a tall box read as it
    stands, not turned (a display's lone "1"): along its top edge. ``sideways``: the box's
    page is sideways (:func:`reads_turned`)."""
    box = np.asarray(box, np.float64)
    v = box[3] - box[0] if reads_turned(box, sideways) and not as_it_stands else box[1] - box[0]
    if flipped:
        v = -v
    return float(math.atan2(v[1], v[0]))


# a crop keeps at least this many rows when trimmed (trim_rows)
TRIM_ROWS = 8


def trim_rows(crop: np.ndarray, keep: float) -> np.ndarray:
    """The middle ``keep`` of ``crop``'s rows (as many cut from the top as from the bottom),
    or ``crop`` itself where that leaves fewer than ``TRIM_ROWS`` rows or cuts none.

    >>> trim_rows(np.zeros((20, 50, 3), np.uint8), 0.75).shape
    (16, 50, 3)
    """
    h = crop.shape[0]
    cut = int(round(h * (1.0 - keep) / 2.0))
    if cut < 1 or h - 2 * cut < TRIM_ROWS:
        return crop
    return crop[cut:h - cut]


def _resize_h(crop: np.ndarray, height: int, width: int) -> np.ndarray:
    import cv2

    h, w = crop.shape[:2]
    new_w = max(1, min(width, int(math.ceil(height * w / max(h, 1)))))
    return cv2.resize(crop, (new_w, height), interpolation=cv2.INTER_LINEAR)


def _normalize(host: np.ndarray, xp):
    x = xp.asarray(host).astype(xp.float32)  # (N, H, W, 3) uint8 -> float on the device
    return xp.ascontiguousarray((x * (2.0 / 255.0) - 1.0).transpose(0, 3, 1, 2))


# 2 / 255 as the float32 arithmetic of _normalize uses it, and the padding's 127.5 normalized
_SCALE = np.float32(2.0 / 255.0)
NORM_PAD = float(_normalize(np.full((1, 1, 1, 1), 127.5, np.float32), np).ravel()[0])


def _batch_chw(resized: list[np.ndarray], height: int, width: int, xp):
    """(N, 3, height, width) float32 on ``xp`` of the resized HWC crops, each from column 0,
    the rest padding (grey): the bits :func:`_normalize` of the padded HWC batch gives, each
    crop written into its place in one pass (four float32 copies of the batch before:
    round 40, h2)."""
    if xp is not np:  # a device: the batch is normalized there
        host = np.full((len(resized), height, width, 3), 127.5, np.float32)
        for k, r in enumerate(resized):
            host[k, :, : r.shape[1]] = r
        return _normalize(host, xp)
    out = np.full((len(resized), 3, height, width), NORM_PAD, np.float32)
    for k, r in enumerate(resized):
        part = out[k, :, :, : r.shape[1]]
        np.multiply(r.transpose(2, 0, 1), _SCALE, out=part, dtype=np.float32)
        part -= np.float32(1.0)
    return out


def cls_input(crops: list[np.ndarray], xp=np):
    """(N, 3, 48, 192) float32 for the direction model; padded columns are 0 (grey)."""
    H, W = CLS_SHAPE
    return _batch_chw([_resize_h(c, H, W) for c in crops], H, W, xp)


def is_flipped(probs, thresh: float = 0.9) -> np.ndarray:
    """Which crops the direction model reads as upside down (p(180) > ``thresh``)."""
    probs = np.asarray(probs)
    return (probs.argmax(1) == 1) & (probs[:, 1] > thresh)


def width_bucket(width: int) -> int:
    """The smallest bucket width >= ``width`` (multiples of 640 beyond the table)."""
    for b in BUCKETS:
        if width <= b:
            return b
    return int(math.ceil(width / 640) * 640)


def step_width(width: int) -> int:
    """The input width a crop ``width`` columns wide (at the recognizer's height) is read
    at on the CPU: itself and 8 grey columns, rounded up to a step of an eighth of its power
    of two (8 px below 128, 16 below 256, ...; at most 12.5% more columns). Crops are
    batched only with crops of the same step, so a crop reads the same alone and in any
    batch: the recognizer mixes a line's columns with the padding after it, and padded to
    a wider batch-mate a line's spaces next to Chinese came and went (4 of 30 pages of the
    mixed and document sets read differently alone).

    >>> step_width(100), step_width(300), step_width(1000)
    (112, 320, 1024)
    """
    w = int(width) + 8
    q = 1 << max(3, w.bit_length() - 4)
    return -(-w // q) * q


def input_width(width: int, bucket: bool | str = True) -> int:
    """The width of the recognizer input a crop ``width`` columns wide is read at: with
    ``"step"`` (the CPU) its :func:`step_width`; else the crop and 8 grey columns after the
    text (the model reads it more surely), rounded up to a :func:`width_bucket` when
    ``bucket`` (a GPU: shapes that repeat matter to cuDNN), else to a multiple of 8."""
    if bucket == "step":
        return step_width(width)
    return width_bucket(width + 8) if bucket else -(-(width + 8) // 8) * 8


def plan_batches(widths: list[int], max_batch: int, max_columns: int = 12800,
                 bucket: bool | str = True) -> list[list[int]]:
    """Indices grouped into batches of one input width (:func:`input_width`): sorted by
    width, cut when that width changes, the batch is full, or its columns (members times
    the input width) would pass ``max_columns``; a crop wider than that is a batch of its
    own. Every member is then read at the width it would be read at alone, whatever its
    batch-mates (padded to a wider one, a line read otherwise).

    >>> plan_batches([100, 104, 106, 120, 700], 8, 1536, bucket="step")
    [[0, 1], [2], [3], [4]]
    >>> plan_batches([300, 310, 700], 4)   # a GPU's buckets: 320, 320, 960
    [[0, 1], [2]]
    """
    order = sorted(range(len(widths)), key=lambda i: widths[i])
    batches, cur, cur_w = [], [], None
    for i in order:
        wide = input_width(widths[i], bucket)
        full = len(cur) >= max_batch or (len(cur) + 1) * wide > max_columns
        if cur and (wide != cur_w or full):
            batches.append(cur)
            cur = []
        cur.append(i)
        cur_w = wide
    if cur:
        batches.append(cur)
    return batches


def rec_input(crops: list[np.ndarray], height: int = 48, xp=np, *,
              bucket: bool | str = True):
    """(N, 3, height, W) float32 for the recognizer; W is the widest crop's
    :func:`input_width`; padded columns are 0 (grey), the model's training layout."""
    resized = [_resize_h(c, height, 4096) for c in crops]
    W = input_width(max(r.shape[1] for r in resized), bucket)
    return _batch_chw(resized, height, W, xp)


def ctc_columns(probs, xp=np) -> tuple[np.ndarray, np.ndarray]:
    """Each column's best class and its probability, ``(N, T)`` each on the host, for
    ``probs`` (N, T, C)."""
    probs = xp.asarray(probs)
    best = probs.argmax(axis=2)  # (N, T)
    conf = xp.take_along_axis(probs, best[..., None], axis=2)[..., 0]  # one pass, not two
    return tuple(a if isinstance(a, np.ndarray) else a.get() for a in (best, conf))


def ctc_decode(probs, alphabet: list[str], xp=np, columns=None) -> list[tuple[str, float]]:
    """Greedy CTC decoding of ``probs`` (N, T, C): ``[(text, score)]``.

    Class 0 is the blank. The score is the mean best-class probability over the kept
    characters (0.0 for an empty line). ``columns``: :func:`ctc_columns` of ``probs``, when
    the caller has them.
    """
    best, conf = columns if columns is not None else ctc_columns(probs, xp)
    keep = _kept(best)
    out = []
    for ids, ps, k in zip(best, conf, keep, strict=True):
        chars = [alphabet[i] if i < len(alphabet) else "" for i in ids[k]]
        text = "".join(chars).strip()
        out.append((text, float(ps[k].mean()) if k.any() else 0.0))
    return out


def _kept(best):
    """The frames greedy CTC keeps, for best classes ``(..., T)``: not blank (class 0) and
    not a repeat of the frame before."""
    keep = best != 0
    keep[..., 1:] &= best[..., 1:] != best[..., :-1]
    return keep


_NUMBER = re.compile(r"-?\d+")
# a decimal point the greedy path dropped is put back where the recognizer gave it at least
# this probability: measured on seven-segment displays (DSEG7, whose point sits tight against
# the digit before it) the dropped points had 0.1-0.5 in 7 of 22 lines (most of the rest
# under 0.03), and 160 rendered numbers in six ordinary fonts, clean and degraded, at most
# 0.079 between two digits
POINT_P = 0.1


def is_plain_number(text: str) -> bool:
    """Whether ``text`` is one number of two or more digits with no point (a leading
    minus allowed): a display's reading that may have dropped its point."""
    return bool(_NUMBER.fullmatch(text)) and sum(c.isdigit() for c in text) >= 2


# the full-width forms of ASCII (U+FF01-FF5E) and the ideographic space
_HALF_WIDTH = {0xFF01 + k: 0x21 + k for k in range(0x5E)} | {0x3000: 0x20}
_CJK = re.compile(r"[\u2E80-\u2FDF\u3001-\u303F\u3040-\u30FF\u3100-\u31FF\u3400-\u4DBF"
                  r"\u4E00-\u9FFF\uAC00-\uD7AF\uF900-\uFAFF]")


def half_width(text: str) -> str:
    """``text`` with full-width ASCII forms ("＃＃", "１２") as ASCII where the line holds no
    CJK character: the Chinese dictionary has both forms, and a line of Latin print read as
    the full-width ones ("＃＃" for a form's "##") is ASCII to its reader. Beside Chinese or
    Japanese the forms are kept as printed."""
    if not text or _CJK.search(text) or not any(0xFF01 <= ord(c) <= 0xFF5E for c in text):
        return text
    return text.translate(_HALF_WIDTH)


def _best_path(text: str, probs, alphabet: list[str]):
    """``(probs, chars, frames)``: the line's probabilities as numpy, the characters of its
    best CTC path and the frame each is read at, its ends stripped as ``ctc_decode`` strips
    them; None where that path is not ``text`` (a reading decoded otherwise)."""
    probs = probs.get() if hasattr(probs, "get") else np.asarray(probs)  # cupy or numpy
    best = probs.argmax(1)
    frames = np.flatnonzero(_kept(best))
    chars = [alphabet[i] if i < len(alphabet) else "" for i in best[frames]]
    while chars and not chars[0].strip():  # ctc_decode strips the line's ends
        chars, frames = chars[1:], frames[1:]
    while chars and not chars[-1].strip():
        chars, frames = chars[:-1], frames[:-1]
    if "".join(chars) != text:
        return None
    return probs, chars, frames


def decimal_point(text: str, probs: np.ndarray, alphabet: list[str]) -> str:
    """``text`` with a decimal point put back between two digits where the recognizer
    dropped it: only for a reading that is one number (digits, a leading minus) with no
    point, and only where the point's probability in the frames between the two digits is
    at least ``POINT_P`` (the most probable such gap, once). ``probs`` is the line's (T, C)
    class probabilities.

    >>> a = ["", "1", "2", "."]
    >>> p = np.zeros((5, 4)); p[[0, 4], [1, 2]] = 1; p[1:4, 0] = 0.8; p[2, 3] = 0.2
    >>> decimal_point("12", p, a), decimal_point("1 2", p, a)
    ('1.2', '1 2')
    """
    if "." not in alphabet or not _NUMBER.fullmatch(text) or sum(c.isdigit() for c in text) < 2:
        return text
    path = _best_path(text, probs, alphabet)
    if path is None:
        return text
    probs, chars, frames = path
    dot = alphabet.index(".")
    gain, where = 0.0, -1
    for j in range(len(chars) - 1):
        if chars[j].isdigit() and chars[j + 1].isdigit():
            p = float(probs[frames[j]:frames[j + 1] + 1, dot].max())
            if p > gain:
                gain, where = p, j
    if gain < POINT_P:
        return text
    return text[: where + 1] + "." + text[where + 1:]


# an amount read with two points or more, "(3.250.00)" (a phone photo's commas read as points:
# both cannot be decimal points), has its separators but the last written "," where the
# recognizer gave "," at least COMMA_P at each of those points and at least COMMA_RATIO times
# what it gave "," at the last; the last alone where the opposite holds ("1.120,00").
# Measured on `bench_ocr_user47`'s spreadsheet as a phone photo (Liberation Sans 14 px, blur
# 0.8, JPEG 50): the commas read "." had "," at 0.03-0.39, the decimal points 0-0.0015
COMMA_P = 0.02
COMMA_RATIO = 10.0
_POINTED = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+\.\d{1,2}(?![\d.,])")


def thousands_commas(text: str, probs: np.ndarray, alphabet: list[str]) -> str:
    """``text`` with the commas of an amount read as points put back (:data:`COMMA_P`):
    only a number of groups of three digits after the first, two points or more, and one or
    two digits after the last point; ``probs`` is the line's (T, C) class probabilities.

    >>> a = ["", "1", "2", ".", ","]
    >>> p = np.zeros((11, 5)); p[[3, 5, 9], 0] = 1  # blanks between repeats
    >>> p[[0, 2, 4, 6, 8, 10], [1, 2, 2, 2, 1, 1]] = 1
    >>> p[1, 3], p[1, 4], p[7, 3] = 0.7, 0.3, 1
    >>> thousands_commas("1.222.11", p, a)
    '1,222.11'
    """
    if "." not in alphabet or "," not in alphabet or not _POINTED.search(text):
        return text
    path = _best_path(text, probs, alphabet)
    if path is None:
        return text
    probs, chars, frames = path
    comma = alphabet.index(",")
    out = list(text)
    for m in _POINTED.finditer(text):
        points = [k for k in range(m.start(), m.end()) if text[k] == "."]
        p = [float(probs[max(0, frames[k] - 1):frames[k] + 2, comma].max()) for k in points]
        first, last = p[:-1], p[-1]
        if min(first) >= COMMA_P and min(first) >= COMMA_RATIO * last:
            for k in points[:-1]:
                out[k] = ","
        elif last >= COMMA_P and last >= COMMA_RATIO * max(first):
            out[points[-1]] = ","
    return "".join(out)


# a reading of at most two characters in a box under SPECK_SIDE px across, whose ink is one
# solid blob, is a speck (dust on a scan, a dot of a pattern) that enlarging small print
# made a box of: on 48 text-free images skiff read 112 lines (pages of dots 15-39 each, as
# "+", "中", "★"), RapidOCR 16 (it does not enlarge a small image's print); with this rule
# 20, and of 238 single 9-12 px digits and letters read in tables (DejaVu Sans, regular and
# bold) one is lost (an "h" at 9 px)
SPECK_SIDE = 12
# a speck's ink is at least this much of its convex hull (a notch or stroke is less)
SOLID = 0.8


def is_speck(crop: np.ndarray, text: str) -> bool:
    """Whether the line ``text`` read from ``crop`` (its pixels as cut from the image) is a
    speck: at most two characters, a crop under :data:`SPECK_SIDE` px on its short side
    (and twice that on its long one), and ink (the side of Otsu's threshold that is less of
    the crop) that fills at least 0.45 of its bounding box, is about as wide as high, has
    no hole, and is at least :data:`SOLID` of its convex hull: a solid dot. A
    character this small has a hole, a notch or thin strokes ("0", "7", "+", a bold "8"),
    and a digit is narrower."""
    import cv2

    if len(text.replace(" ", "")) > 2:
        return False
    h, w = crop.shape[:2]
    if min(h, w) >= SPECK_SIDE or max(h, w) >= 2 * SPECK_SIDE or min(h, w) < 2:
        return False
    bw = ink_mask(crop)
    ys, xs = np.nonzero(bw)
    if len(ys) < 3:
        return False
    bh, bw_ = int(ys.max() - ys.min() + 1), int(xs.max() - xs.min() + 1)
    if len(ys) < 0.45 * bw_ * bh or not 0.7 <= bw_ / bh <= 1.4:
        return False
    _, tree = cv2.findContours(bw, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_NONE)
    if tree is not None and (tree[0][:, 3] >= 0).any():
        return False  # a hole: "0", "8", "口"
    hull = np.zeros_like(bw)
    cv2.fillConvexPoly(hull, cv2.convexHull(np.stack([xs, ys], 1).astype(np.int32)), 1)
    return len(ys) >= SOLID * int(hull.sum())  # no notch: "7", "4", "中"


# a crop is read again on its colour axis when its grey shows less than this share of the
# contrast along that axis that a grey axis would (red print on green of like lightness)
COLOUR_SHARE = 0.35


def colour_grey(crop: np.ndarray) -> np.ndarray | None:
    """The crop's colours projected on the axis they vary most along, stretched to 0-255
    with the ground light, as a grey BGR crop; None for a grey crop, a flat one, or one
    whose grey (the channels' mean) keeps at least :data:`COLOUR_SHARE` of the contrast
    along that axis that it would keep were the axis grey's own, where the grey already
    shows what the colours do.

    Print that differs from its ground in hue more than in lightness (red on green, blue
    on red), once a JPEG has halved its colour resolution, reads as noise ("Sn TONry
    EAIT" for "Emergency Exit"); on its colour axis it stands out as dark on light."""
    if crop.ndim != 3 or crop.shape[2] != 3 or crop.strides[2] == 0 or crop.size < 48:
        return None
    x = crop.reshape(-1, 3).astype(np.float32)
    x -= x.mean(0)
    w, v = np.linalg.eigh(x.T @ x / len(x))
    if w[-1] < 25.0:  # under 5 grey levels along its axis: flat
        return None
    axis = v[:, -1]
    if abs(float(axis.sum())) / math.sqrt(3.0) >= COLOUR_SHARE:  # grey keeps the contrast
        return None
    p = x @ axis
    lo, hi = np.percentile(p, (1, 99))
    if hi - lo < 1e-3:
        return None
    g = np.clip((p - lo) * (255.0 / (hi - lo)), 0, 255)
    if np.median(g) < 128:  # the ground, most of the crop, light
        g = 255 - g
    g = g.astype(np.uint8).reshape(crop.shape[:2])
    return np.ascontiguousarray(np.repeat(g[..., None], 3, axis=2))


# the symbols the recognizers read a drawn outline as: Unicode's geometric shapes (squares,
# triangles, circles, diamonds, U+25A0-25FF) and the triangles of mathematics and Greek
SHAPES = frozenset(map(chr, range(0x25A0, 0x2600))) | frozenset("\u2206\u2207\u0394")


def is_shape_line(text: str) -> bool:
    """Whether a reading is only shapes ("\u25b3", "\u25a1 \u25a1", "\u2207"): the
    outline of a drawn triangle, square or circle in a diagram or photo, which the
    recognizers read as the like symbol. On 60 text-free images (outlines, dots, bars,
    lines, colour fields) skiff read 178 lines, 123 of them only such symbols (RapidOCR
    read 212 lines); no line of the hard tiers or of 255 everyday scenes (drawn, as
    thumbnails, as phone shots) is one. A shape beside text ("\u25a1 Yes", "\u25b2 2.1%")
    is kept with it; stars are not shapes."""
    chars = text.replace(" ", "")
    return bool(chars) and all(c in SHAPES for c in chars)


# what a dashed or dotted rule reads as, a mark a piece: dashes of every width, the
# ideograph one, the long-vowel mark, underscores, tildes, equals signs, dots
# the marks a dashed or dotted rule is read as: hyphen, 一, em/en/horizontal bar, hyphen,
# ー, _, ~, =, ., middle dot; the minus sign, figure dash, non-breaking and fullwidth
# hyphens and box-drawing lines (a dash grid read "− - - - -": kept before round 20)
RULE_MARKS = frozenset("-\u4e00\u2014\u2013\u2015\u2010\u30fc_~=.\u00b7"
                       "\u2212\u2012\u2011\uff0d\u2500\u2501\uff3f")


def is_rule_line(text: str) -> bool:
    """Whether a reading is a dashed or dotted rule: three or more marks of
    :data:`RULE_MARKS` and nothing else, each apart from the next ("- - - - -",
    "— — —"). A grid of short dashes (a form's dashed borders) read as 19 such lines on two
    images where RapidOCR read none (``benchmarks/bench_ocr_textfree.py``); a solid run
    ("-----", a receipt's typed separator) and marks beside text ("- 3 -") stay."""
    marks = text.split()
    return len(marks) >= 3 and all(len(m) == 1 and m in RULE_MARKS for m in marks)


# the marks of a dotted leader ("Total ........ 12.50"): full stop, ellipsis, middle dots,
# the full-width stop and the two-dot leader
LEADER_MARKS = frozenset(".\u2026\u00b7\u30fb\uff0e\u2025")
# after a space at a line's end: one or two dots, four or more, or three or more ellipses
# (an ellipsis, "..." or "……", is text; a full stop follows its word without a space)
_TRAILING_LEADER = re.compile(r"\s+(?:\.{1,2}|[.\u00b7\u30fb\uff0e]{4,}|[\u2026\u2025]{3,})$")
# between a label and the number closing its line ("Espresso .... 3.20", "toast ..8.90",
# "day . 5.40": a menu's or a contents page's leader read short): after a space, two marks
# or more (spaced or not), or one standing between spaces (no word's or number's point)
_MARKS = "[.\u00b7\u30fb\uff0e\u2026\u2025]"
_AMOUNT_END = r"[-+(]?[$\u20ac\u00a3\u00a5]?\s?\d[\d.,:]*\)?\s?[$\u20ac\u00a3\u00a5%]?$"
_INNER_LEADER = re.compile(rf"(?<=\S)\s+(?:(?:{_MARKS}\s*){{2,}}|{_MARKS}\s)\s*(?={_AMOUNT_END})"
                           rf"|(?<=\S)\s+{_MARKS}(?=\d+[.,]\d+\s?[$\u20ac\u00a3\u00a5%]?$)")
# a row's cell that ends in a leader, before a cell that is a number: any run of marks
# after a space ("Scrambled eggs ..." before "6.50": three dots are an ellipsis elsewhere)
_CELL_LEADER = re.compile(rf"\s+(?:{_MARKS}\s*)+$")
# a number's cell that a leader runs into ("..8.90", ". . 3.80")
_LEADING_LEADER = re.compile(rf"^(?:{_MARKS}\s*){{2,}}\s*|^{_MARKS}\s+|^{_MARKS}(?=\d+[.,]\d)"
                             rf"|^{_MARKS}+(?=[$\u20ac\u00a3\u00a5]\s?\d)")
# a cell's trailing leader stuck to its word ("Avocado toast..." before "8.90")
_STUCK_CELL_LEADER = re.compile(rf"(?<=\w){_MARKS}{{2,}}\s*$")
_AMOUNT = re.compile(rf"\s?{_AMOUNT_END}")
# a leader read stuck to its word, a space before the number closing the line ("toast...
# 8.90", "Chapter 3... 12"; round 28's menus at 14 px as JPEG): two marks or more (one is a
# word's point: "syrup. 7.20", "incl. 4.50"); not before a percentage ("Loading... 50%")
_STUCK_LEADER = re.compile(rf"(?<=\w){_MARKS}{{2,}}\s+"
                           rf"(?=[-+(]?[$\u20ac\u00a3\u00a5]?\s?\d[\d.,:]*\)?\s?[$\u20ac\u00a3\u00a5]?$)")
# a leader read stuck to both its word and the amount closing the line, no space either
# side ("Discount………………………-0.50": a scanned receipt at 14 px, round 44): four points or
# more, or two ellipses or more (one "…" or "..." is an ellipsis); not before a percentage
_TIGHT_LEADER = re.compile(rf"(?<=[^\W\d_])(?:[.\u00b7\u30fb\uff0e]{{4,}}|"
                           rf"{_MARKS}*[\u2026\u2025]{_MARKS}*[\u2026\u2025]{_MARKS}*)"
                           rf"(?=[-+(\u2212]?[$\u20ac\u00a3\u00a5]?\s?\d[\d.,:]*\)?\s?[$\u20ac\u00a3\u00a5]?$)")
# marks stuck to the currency sign of the amount closing the line ("day …€ 5,40", "day .€
# 5,40"): no text puts a point before a currency sign
_SIGN_LEADER = re.compile(rf"(?<=\S)\s+{_MARKS}+(?=[$\u20ac\u00a3\u00a5]\s?\d[\d.,:]*$)")


def is_leader_line(text: str) -> bool:
    """Whether a reading is a dotted leader alone: two or more of :data:`LEADER_MARKS` and
    nothing else (a receipt's "Service 10% ........ 6.65" boxed its dots apart, as a row
    "………………………" of its own between two items; round 24, a user's probe)."""
    marks = text.replace(" ", "")
    return len(marks) >= 2 and set(marks) <= LEADER_MARKS


def strip_leader(text: str) -> str:
    """``text`` without a dotted leader trailing it after a space ("Paid (GBP) .." ->
    "Paid (GBP)", "Service 10% ." -> "Service 10%") or between a label and the number that
    ends the line ("Croissant .... 2.80" -> "Croissant 2.80": the leaders are no text a
    reader keeps); a number's or an abbreviation's own point ("incl. 4.50") and an ellipsis
    that ends a line or is followed by words stay. A leader read stuck to its word
    ("toast... 8.90"), to the amount's currency sign ("day …€ 5,40") or to both the word
    and the amount ("Discount………-0.50") goes too."""
    text = _TRAILING_LEADER.sub("", text)
    if not _AMOUNT.search(text):
        return text
    text = _SIGN_LEADER.sub(" ", _STUCK_LEADER.sub(" ", _TIGHT_LEADER.sub(" ", text)))
    return _INNER_LEADER.sub(" ", text)


def row_leaders(texts: list[str]) -> list[str]:
    """A row's cell texts (left to right) without the dotted leader between a label and
    its number when the detector boxed them apart: a number's cell after another loses the
    marks it begins with ("..8.90", ". 3.80"), the cell before it its trailing run of marks
    after a space ("Scrambled eggs ..." | "6.50"), and a cell of marks alone between them
    is emptied ("" : the caller drops it). A leader stuck to the cell's last word
    ("Avocado toast..." before "8.90", not before "50%") or to the number's currency sign
    ("…€ 5,40") goes too."""
    out = list(texts)
    for k in range(1, len(out)):
        nxt = _LEADING_LEADER.sub("", out[k].strip())
        if not nxt or not _AMOUNT.match(nxt):
            continue
        out[k] = nxt
        prev = out[k - 1].strip()
        if prev and set(prev.replace(" ", "")) <= LEADER_MARKS:
            out[k - 1] = ""
        else:
            out[k - 1] = _CELL_LEADER.sub("", out[k - 1])
            if not nxt.endswith("%"):
                out[k - 1] = _STUCK_CELL_LEADER.sub("", out[k - 1])
    return out


NUMBER_CHARS = frozenset("0123456789.,:;-+/%' ")


def wide_share(text: str) -> float:
    """The share of ``text``'s print width (spaces left out) in wide characters (CJK, kana,
    hangul, full-width forms: East Asian width W or F, two cells each, others one); 0.0
    for an empty text.

    >>> wide_share("配送费"), wide_share("XENE"), wide_share("B2 出口")
    (1.0, 0.0, 0.6666666666666666)
    """
    import unicodedata

    cells = [2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text if c != " "]
    return sum(c for c in cells if c == 2) / sum(cells) if cells else 0.0


def is_number(text: str) -> bool:
    """Whether ``text`` is made of digits and the marks of numbers only (a reading that may
    read as surely upside down: "-25.8" as "852-")."""
    return bool(text) and any(c.isdigit() for c in text) and set(text) <= NUMBER_CHARS


# seven-segment digits turned around: 3, 4 and 7 read as "E", "h" and "L", the others
# as digits ("3685.64" as "h9589E"); digits with one of those letters and nothing else
_SEGMENTS_TURNED = re.compile(r"(?=.*\d)(?=.*[hEL])[0-9hEL.,:\- ]+")


def looks_turned_segments(text: str) -> bool:
    """Whether ``text`` reads like seven-segment digits upside down: digits with "E", "h"
    or "L" (a 3, 4 or 7 turned) and nothing else.

    >>> looks_turned_segments("h9589E"), looks_turned_segments("3685.64")
    (True, False)
    """
    return bool(_SEGMENTS_TURNED.fullmatch(text))


def choose_turns(kept, turned, widths, pages, margin: float = 0.05, flipped=None,
                 prior: float = 0.0, segments: float = 0.0, together=None,
                 script: float = 0.0) -> np.ndarray:
    """Which crops to turn by 180 degrees, from the recognizer's two readings of each.

    ``kept`` and ``turned`` are ``[(text, score)]`` for the crops as they are and turned
    around; ``pages`` says which page each crop is on. A crop's vote is the gain in score
    of its turned reading (an empty reading scores 0); when either reading is a number
    (:func:`is_number`), plus ``prior`` when turning brings it back to the image's own way
    up (``flipped``: the crop is now turned) and minus it when turning would turn it:
    digits read almost as surely upside down ("-25.8" as "852-" on a seven-segment
    display), while words and CJK turned read as garble the recognizer is less sure of and
    need no lean (with one, small noisy signs turned 180 degrees stayed so: "WiFi 密码 8899"
    kept as "6688 5h2 5PM" at 0.81 against 0.92). The page's vote is the mean of its crops'
    votes weighted by width (a page is seldom printed both ways). Where one reading is a
    number and the other reads like seven-segment digits upside down
    (:func:`looks_turned_segments`), ``segments`` more goes to the number, whichever way
    up it is. A crop turns when the
    mean of its own vote and its page's exceeds ``margin`` (the current choice stands on a
    tie). Crops marked ``together`` (the lines of one small label, printed one way: see
    :func:`one_way`) follow their page's vote alone, all of them one way up: the page's
    width-weighted gain of the turned readings, counted towards one way up of the image
    (``flipped``), moves the page from the way most of its width stands now only where it
    exceeds ``margin``.

    >>> choose_turns([("h6581 h", 0.62)], [("4185.94", 0.97)], [120], [0]).tolist()
    [True]
    """
    gain = np.array([(t[1] if t[0] else 0.0) - (k[1] if k[0] else 0.0)
                     for k, t in zip(kept, turned, strict=True)], np.float64)
    if flipped is not None:
        lean = np.array([prior if is_number(k[0]) or is_number(t[0]) else 0.0
                         for k, t in zip(kept, turned, strict=True)], np.float64)
        gain += np.where(np.asarray(flipped, bool), lean, -lean)
    if segments:
        gain += np.array([segments if is_number(t[0]) and looks_turned_segments(k[0]) else
                          -segments if is_number(k[0]) and looks_turned_segments(t[0]) else 0.0
                          for k, t in zip(kept, turned, strict=True)], np.float64)
    if script:
        gain += script * np.array([wide_share(t[0]) - wide_share(k[0])
                                   for k, t in zip(kept, turned, strict=True)], np.float64)
    widths = np.asarray(widths, np.float64)
    pages = np.asarray(pages)
    vote = np.zeros_like(gain)
    for page in np.unique(pages):
        mine = pages == page
        vote[mine] = float(np.dot(gain[mine], widths[mine]) / max(1.0, widths[mine].sum()))
    turn = 0.5 * (gain + vote) > margin
    if together is None or not np.any(together):
        return turn
    together = np.asarray(together, bool)
    now = np.zeros(len(gain), bool) if flipped is None else np.asarray(flipped, bool)
    toward = np.where(now, -gain, gain)  # each crop's gain in turning to flipped=True
    for page in np.unique(pages[together]):
        mine = together & (pages == page)
        w = widths[mine]
        vote_t = float(np.dot(toward[mine], w) / max(1.0, w.sum()))
        most = float(w[now[mine]].sum()) > 0.5 * float(w.sum())  # how most of it stands
        target = (not most) if (vote_t if not most else -vote_t) > margin else most
        turn[mine] = now[mine] != target
    return turn


def one_way(boxes, spread: float) -> bool:
    """Whether ``boxes`` (4-point boxes of one image) run along one direction within
    ``spread`` degrees (undirected: a line at 178 degrees runs along one at -2), and none
    stands (:data:`TALL`): the lines of one label, printed one way up."""
    if len(boxes) < 2:
        return False
    angles = []
    for box in boxes:
        box = np.asarray(box, np.float64)
        w, h = box_size(box)
        if h >= TALL * w:
            return False
        v = box[1] - box[0]
        angles.append(math.degrees(math.atan2(v[1], v[0])) % 180.0)
    a = np.asarray(angles)
    # the spread of undirected angles: the smallest arc (mod 180) that holds them all
    a = np.sort(a)
    gaps = np.diff(np.concatenate([a, [a[0] + 180.0]]))
    return 180.0 - float(gaps.max()) <= spread
