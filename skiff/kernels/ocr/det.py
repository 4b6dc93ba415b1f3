"""Text detection: choose a scale per image, run the DB model, turn its map into boxes.

DB ("differentiable binarization") predicts, per pixel, the probability of being inside a
shrunk text region. Boxes come from the thresholded map: each connected region's
minimum-area rotated rectangle, scored by the mean probability inside it, grown back by the
shrink the model learned (``unclip``, a polygon offset by ``area * ratio / perimeter``), and
mapped to the original image.

Normalization and the threshold run on ``xp`` (numpy or cupy); contours and polygon offsets
run on the host (OpenCV, pyclipper) on the small binary map only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .rec import TALL, box_size

__all__ = ["DetParams", "estimate_text_height", "text_extent", "choose_scale", "one_pass_scale",
           "det_input", "db_boxes", "join_fragments", "order_points", "tile_spans", "tile_grid",
           "is_blank", "bare_box", "no_line_in_tile", "merge_tiled"]

STRIDE = 32  # the DB backbone's total stride: input sides must be multiples of it


@dataclass(frozen=True)
class DetParams:
    """Knobs of detection. ``target`` is the text height (px) the detector sees best.

    ``max_pixels`` bounds enlarging (small text on a small image); ``max_det_pixels``
    bounds the pixels of a page read at or below its own size (a huge page of small text
    keeps its scale up to this, in tiles, instead of being shrunk until its text vanishes;
    180 MP is about Pillow's decompression-bomb limit, so any page that decodes);
    ``tile_pixels`` is the most pixels the detector sees in one pass (its memory is about
    220 MiB per million pixels on the CPU: larger inputs go in tiles overlapping by
    ``tile_overlap`` detector pixels, and blank tiles are skipped). A page just over one
    tile whose print, shrunk to fit one, stays at least ``one_pass_text`` px high is read in
    one pass instead (:func:`one_pass_scale`).
    """

    thresh: float = 0.3
    box_thresh: float = 0.5
    unclip_ratio: float = 1.6
    max_candidates: int = 1000
    target: float = 18.0
    min_text: float = 8.0
    limit: int = 960
    max_pixels: float = 4.0e6
    max_upscale: float = 4.0
    max_det_pixels: float = 180.0e6
    tile_pixels: float = 0.5e6
    tile_overlap: int = 96
    one_pass_text: float = 13.5
    large_pixels: float = 0.75e6
    large_target: float = 9.0


def estimate_text_height(gray: np.ndarray) -> float | None:
    """A rough text height in pixels from the glyph-like connected components of ``gray``.

    Binarizes with a local (adaptive) threshold, for dark and for light text, keeps the
    components of plausible glyph shape (the polarity with more of them wins), and returns
    the 70th percentile of their heights; None when no glyph-like component is found.
    Images over 8 MP are measured on up to four full-resolution windows of 1024 x 1024
    where there is most ink (a shrunk huge page loses its small text, and with it the
    scale it needs), else at a reduced size.
    """
    return text_extent(gray)[0]


def text_extent(gray: np.ndarray) -> tuple[float | None, tuple[int, int, int, int] | None]:
    """``(text height, ink box)``: :func:`estimate_text_height`, and the ``(y0, y1, x0, x1)``
    box around everything dark or light against its surroundings (glyphs, lines, pictures:
    any component of the local threshold; light ones on a dark ground only), grown by twice
    the text height and at least 24 px on each side; None when that is most of the image,
    or for an image over 8 MP.

    Detection reads only inside the ink box: the margins of a page cost the detector as
    much as its text (on the rendered benchmark pages of small text, the text covers 1-8%
    of the page).
    """
    h, w = gray.shape[:2]
    if min(h, w) < 8:
        return None, None
    if h * w > 8.0e6:
        heights = [e for win in _inked_windows(gray, 1024, 4)
                   if (e := _text_height(win, 1.0)[0]) is not None]
        if heights:
            return float(np.median(heights)), None
    height, ink = _text_height(gray, min(1.0, math.sqrt(8.0e6 / (h * w))))
    if height is None or ink is None:
        return height, None
    m = int(max(24, 2 * height))
    y0, y1, x0, x1 = max(0, ink[0] - m), min(h, ink[1] + m), max(0, ink[2] - m), min(w, ink[3] + m)
    if (y1 - y0) * (x1 - x0) > 0.8 * h * w:
        return height, None
    return height, (y0, y1, x0, x1)


def _inked_windows(gray: np.ndarray, side: int, n: int) -> list[np.ndarray]:
    """Up to ``n`` ``side x side`` windows of ``gray`` with the most contrast (ink)."""
    import cv2

    h, w = gray.shape[:2]
    ny, nx = -(-h // side), -(-w // side)
    scores = []
    for i in range(ny):
        for j in range(nx):
            win = gray[i * side:(i + 1) * side, j * side:(j + 1) * side]
            lo, hi, _, _ = cv2.minMaxLoc(np.ascontiguousarray(win[::2, ::2]))
            if hi - lo >= 32:
                scores.append((float(win[::4, ::4].std()), i, j))
    scores.sort(reverse=True)
    return [np.ascontiguousarray(gray[i * side:(i + 1) * side, j * side:(j + 1) * side])
            for _, i, j in scores[:n]]


DARK_GROUND = 100  # a local mean grey under this is a dark ground (light print on it)
# light glyphs (at least 4 px tall, 12 px of ink) count on a ground under this too: white
# print on a mid-grey or coloured ground (a banner's gradient) that is not dark everywhere.
# Not on pastel or grey paper (at 230 the noisy light pages the int8 detector is calibrated
# on gained boxes of noise, and the build read a clean page otherwise than float32)
LIGHT_PRINT_GROUND = 160
# the light side's height is taken when it has at least this many times the dark side's
# glyph-like components, and at least LIGHT_MIN_GLYPHS of them (light text on a dark screen)
LIGHT_MAJORITY = 4
LIGHT_MIN_GLYPHS = 24


# a component over FEW_TALL times the median height of the glyph-like ones of at least
# FEW_TALL_FROM px (a box's frame, a dark panel, a picture on a wall), where the height's
# percentile falls on such shapes and they are fewer than the rest, is no print: a 1280 x
# 960 photo of a sign with 17-px lines, hung in a dark frame beside two drawn frames and a
# black panel, kept 8 glyphs and 5 such shapes of 144-236 px, measured its print 162 px,
# was shrunk to 0.11 and read as one box, "☺" (round 41, h1: bench_ocr_photo41.py, 141/27)
FEW_TALL, FEW_TALL_FROM = 4.0, 8


def _few_tall(ch: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Which components of heights ``ch`` are shapes far taller than the glyphs ``keep``
    holds (over :data:`FEW_TALL` times their median), where the 70th percentile the text
    height is taken at falls among such shapes and they are fewer than the rest; none
    otherwise (a page whose height is a glyph's already is measured as before)."""
    sized = ch[keep & (ch >= FEW_TALL_FROM)]
    if len(sized) < 3:
        return np.zeros(len(ch), bool)
    limit = FEW_TALL * float(np.median(sized))
    if float(np.percentile(ch[keep], 70)) <= limit:  # the height is a glyph's already
        return np.zeros(len(ch), bool)
    tall = keep & (ch > limit)
    return tall if 0 < tall.sum() < (keep & ~tall).sum() else np.zeros(len(ch), bool)


def _text_height(gray: np.ndarray, r: float) -> tuple[float | None, tuple | None]:
    """The text height and the box of all components (dark and light), at reduction ``r``."""
    import cv2

    h, w = gray.shape[:2]
    if min(h, w) < 8:
        return None, None
    small = cv2.resize(gray, (max(1, int(w * r)), max(1, int(h * r))),
                       interpolation=cv2.INTER_AREA) if r < 1 else gray
    small = cv2.GaussianBlur(small, (3, 3), 0)
    # where the ground is dark (a dark-mode screenshot, a sign, a title bar) the print is
    # light: its components are what stands out upwards, there, and glyph-sized ones on
    # a mid-grey ground (white print on a banner's gradient ran from a dark ground
    # onto a mid one, and the box cut its line: "everything" read "everyth"); on light
    # paper the lighter specks of noise are not print
    ground = cv2.blur(small, (41, 41))
    ink = None
    counts: list[int] = []
    heights: list[float] = []
    # light print counts only on a ground under LIGHT_PRINT_GROUND (DARK_GROUND is lower):
    # on a page light everywhere its pass finds nothing, and is skipped (round 33: the
    # same heights and boxes, a threshold and a labelling less per white page)
    signs = (1, -1) if float(ground.min()) < LIGHT_PRINT_GROUND else (1,)
    for sign in signs:  # dark print, then light print
        # a local threshold: pages on a differently shaded canvas, shadows, gradients;
        # print is at least 18 grey levels darker (lighter) than its 41 x 41 surroundings
        bw = cv2.adaptiveThreshold(small, 255, cv2.ADAPTIVE_THRESH_MEAN_C,
                                   cv2.THRESH_BINARY_INV if sign > 0 else cv2.THRESH_BINARY,
                                   41, 18 * sign)
        n, _, stats, centroids = cv2.connectedComponentsWithStats(bw, connectivity=8)
        x, y, cw, ch, area = (stats[1:, k] for k in range(5))
        some = area >= 6
        if sign < 0:
            cx, cy = (centroids[1:].astype(int) if n > 1 else np.zeros((0, 2), int)).T
            under = ground[cy, cx]
            some &= (under < DARK_GROUND) | \
                ((under < LIGHT_PRINT_GROUND) & (ch >= 4) & (area >= 12))
        if some.any():  # the ink box: print of either kind
            box = (int(y[some].min() / r), int(np.ceil((y + ch)[some].max() / r)),
                   int(x[some].min() / r), int(np.ceil((x + cw)[some].max() / r)))
            ink = box if ink is None else (min(ink[0], box[0]), max(ink[1], box[1]),
                                           min(ink[2], box[2]), max(ink[3], box[3]))
        # the height: from the dark side (light print too shows there, by its ground's
        # edges around the glyphs: the lit segments of a seven-segment display measured
        # from the light side are half a digit, and the scale then doubled), else the light
        # (a bar over 16x taller than wide is a barcode's or a rule's, no glyph: a parcel
        # label's 140-px bars measured its 14-px print 141 px and the sender's lines were lost;
        # its ink's mean width, area / height, not the box's: a bar photographed 3 degrees
        # off upright has a box 10-20 px wide, and measured the print 50 px)
        keep = some & (ch >= 4) & (ch < small.shape[0] / 2) & (cw < 4 * ch) & \
            (ch * ch < 16 * area) & (cw * ch < 40 * area)
        keep &= ~_few_tall(ch, keep)
        if keep.sum() >= 3:
            counts.append(int(keep.sum()))
            heights.append(float(np.percentile(ch[keep], 70)) / r)
    if not heights:
        return None, None
    # ... unless the light glyphs far outnumber the dark side's few shapes: a terminal or a
    # dark-mode editor, where the dark side holds only the ground's gaps between lines and
    # words (14-px print measured 34 px: shrunk to 7 px, "--n 5" ending a line was lost)
    if len(heights) == 2 and counts[1] >= LIGHT_MAJORITY * counts[0] and \
            counts[1] >= LIGHT_MIN_GLYPHS:
        return heights[1], ink
    return heights[0], ink


def choose_scale(h: int, w: int, text_height: float | None, p: DetParams = DetParams()) -> float:
    """Detection scale for an ``h x w`` image whose text is ``text_height`` px tall.

    Text already at least ``p.min_text`` px is brought to ``p.target`` px by shrinking (never
    enlarged); smaller text is enlarged to ``p.min_text * 1.5`` (up to ``p.max_upscale`` and
    ``p.max_pixels``); an image whose text height is unknown is only shrunk to fit
    ``p.limit``. Where ``p.target`` would give the detector more than ``p.large_pixels``
    and the print is at least 1.5 ``p.large_target``, the text is brought down towards
    ``p.large_target`` px, to no fewer pixels than that bound: the detector needs far fewer
    pixels per line than the recognizer, which reads crops from the full-resolution image.
    Measured on 12-MP phone photos of dense pages (print 16-47 px), A4 scans (print 14-25
    px) and 1920 x 1080 screenshots (print 14-16 px): the same texts at 9 px as at 18 px,
    detection 2-3x cheaper (35-px print: 3.1 MP in 12 tiles at 18 px, 0.75 MP at 9 px; 16-px
    print: 12 MP in tiles, 3.8 MP). Smaller print, and pages under the bound, keep the
    target. Enlarging stops at ``p.max_pixels``; a
    page at or below its own size is shrunk only below ``p.max_det_pixels``.
    """
    fit = min(1.0, p.limit / max(h, w))
    if not text_height:
        s = fit
    elif text_height >= p.min_text:
        s = min(1.0, p.target / text_height)
        if text_height >= 1.5 * p.large_target and h * w * s * s > p.large_pixels:
            # a large page (a phone photo, a scan); print under 13.5 px keeps its target
            s = min(s, max(math.sqrt(p.large_pixels / (h * w)), p.large_target / text_height))
    else:
        s = 1.5 * p.min_text / text_height
    # enlarging stops at max_pixels; a page read at most at its own size keeps its scale
    # up to max_det_pixels (detection runs in tiles of tile_pixels)
    area = max(1, h * w)
    upper = max(math.sqrt(p.max_pixels / area), min(1.0, math.sqrt(p.max_det_pixels / area)))
    s = min(s, p.max_upscale, upper)
    # a side shorter than one stride gives the model nothing to work on
    s = max(s, min(STRIDE / max(1, min(h, w)), math.sqrt(p.max_pixels / max(1, h * w))))
    return float(s)


def one_pass_scale(h: int, w: int, scale: float, text_height: float | None,
                   tile_pixels: float, p: DetParams = DetParams()) -> float:
    """``scale``, or the smaller one at which an ``h`` x ``w`` page fits one detection pass
    of ``tile_pixels`` when its print (``text_height`` px in the image) stays at least
    ``p.one_pass_text`` px there.

    The detector's map is weak for a line that begins at a tile's edge, where it sees part
    of the line without the rest: a noisy 1093 x 473 page at 17.8-px print, cut into two
    tiles at scale 1, lost the second half of three of its four lines (0.32 of its
    characters; 0.96 shrunk by 2% to one pass). Shrinking a little costs the detector
    nothing (it sees 9-px print as well on large pages, :func:`choose_scale`); pages of
    small print, or far over one tile, keep their scale and their tiles.
    """
    pixels = h * w * scale * scale
    if not text_height or pixels <= tile_pixels:
        return scale
    fit = scale * math.sqrt(tile_pixels / pixels)
    return fit if text_height * fit >= p.one_pass_text else scale


def det_input(images: list[np.ndarray], scale: list[float], xp=np):
    """Resize each BGR image by its scale, pad to a common multiple of 32, normalize.

    Returns ``(batch (N, 3, H, W) float32 on xp, sizes [(h, w)] of the resized images)``.
    Padding repeats the image's edge colour so the border adds no false text.
    """
    import cv2

    sizes = []
    for img, s in zip(images, scale, strict=True):
        sizes.append((max(1, round(img.shape[0] * s)), max(1, round(img.shape[1] * s))))
    H = max(STRIDE, -(-max(hh for hh, _ in sizes) // STRIDE) * STRIDE)
    W = max(STRIDE, -(-max(ww for _, ww in sizes) // STRIDE) * STRIDE)
    host = np.empty((len(images), H, W, 3), np.uint8)
    for k, (img, (hh, ww)) in enumerate(zip(images, sizes, strict=True)):
        if img.ndim == 3 and img.strides[2] == 0:  # grey shared across channels: resize once
            img = img[..., 0]
        resized = cv2.resize(img, (ww, hh), interpolation=cv2.INTER_AREA if hh < img.shape[0]
                             else cv2.INTER_LINEAR)
        padded = cv2.copyMakeBorder(resized, 0, H - hh, 0, W - ww, cv2.BORDER_REPLICATE)
        host[k] = padded if padded.ndim == 3 else padded[..., None]
    if xp is np:  # the same bits in one pass and one copy, not four (round 40, h2)
        x = np.empty((len(images), 3, H, W), np.float32)
        np.multiply(host.transpose(0, 3, 1, 2), np.float32(2.0 / 255.0), out=x,
                    dtype=np.float32)
        x -= np.float32(1.0)
        return x, sizes
    x = xp.asarray(host).astype(xp.float32)
    x = (x * (2.0 / 255.0) - 1.0).transpose(0, 3, 1, 2)  # (N, 3, H, W), mean .5 std .5
    return xp.ascontiguousarray(x), sizes


def order_points(pts: np.ndarray) -> np.ndarray:
    """Four corners as top-left, top-right, bottom-right, bottom-left (image axes)."""
    pts = pts[np.argsort(pts[:, 0], kind="stable")]
    left, right = pts[:2], pts[2:]
    tl, bl = left[np.argsort(left[:, 1])]
    tr, br = right[np.argsort(right[:, 1])]
    return np.array([tl, tr, br, bl], np.float32)


def _unclip(box: np.ndarray, ratio: float) -> np.ndarray | None:
    import pyclipper

    x, y = box[:, 0].astype(np.float64), box[:, 1].astype(np.float64)
    area = abs(float((x * np.roll(y, -1) - np.roll(x, -1) * y).sum())) / 2.0  # shoelace
    perimeter = float(np.linalg.norm(box - np.roll(box, -1, axis=0), axis=1).sum())
    if perimeter <= 0:
        return None
    off = pyclipper.PyclipperOffset()
    off.AddPath([tuple(map(int, p)) for p in np.round(box)], pyclipper.JT_ROUND,
                pyclipper.ET_CLOSEDPOLYGON)
    out = off.Execute(area * ratio / perimeter)
    if not out:
        return None
    return np.array(max(out, key=len), np.float32)


def _box_score(prob: np.ndarray, box: np.ndarray) -> float:
    import cv2

    h, w = prob.shape
    x0, y0 = np.clip(np.floor(box.min(0)).astype(int), 0, [w - 1, h - 1])
    x1, y1 = np.clip(np.ceil(box.max(0)).astype(int), 0, [w - 1, h - 1])
    mask = np.zeros((y1 - y0 + 1, x1 - x0 + 1), np.uint8)
    cv2.fillPoly(mask, [np.round(box - [x0, y0]).astype(np.int32)], 1)
    return float(cv2.mean(prob[y0:y1 + 1, x0:x1 + 1], mask)[0])


# a region under box_thresh that is glyph-sized (its longer side at most FAINT_SIDE detector
# pixels) and peaks at FAINT_PEAK or more: a lone short glyph ("}" on its own line at 13-15 px)
# the detector sees only faintly at scale 1; given to db_boxes' ``faint`` to be looked at again
FAINT_SIDE = 27.0
FAINT_PEAK = 0.5
# a region under box_thresh shaped like a line (at least DROPPED_WIDE times longer than high,
# longer than FAINT_SIDE) scoring at least DROPPED_FLOOR: given to db_boxes' ``dropped`` (a
# receipt's row "name ..... price" whose thin leader pulls its score to 0.36-0.47)
DROPPED_WIDE = 4.0
DROPPED_FLOOR = 0.3


def db_boxes(prob, size: tuple[int, int], shape: tuple[int, int], p: DetParams = DetParams(),
             xp=np, faint: list | None = None,
             dropped: list | None = None) -> list[tuple[np.ndarray, float]]:
    """Boxes from one probability map.

    ``prob``: (H, W) map for the padded input; ``size``: (h, w) of the resized image inside
    it; ``shape``: (h, w) of the original image. Returns ``[(box (4, 2) in original pixels,
    tl-tr-br-bl order, score)]``. With ``faint``, the glyph-sized regions dropped for their
    score but peaking at ``FAINT_PEAK`` are appended to it (boxes in original pixels); with
    ``dropped``, the scores of the line-shaped regions dropped (``DROPPED_WIDE``,
    ``DROPPED_FLOOR``).
    """
    import cv2

    hh, ww = size
    prob = prob[:hh, :ww]
    bitmap = xp.asarray(prob > p.thresh).astype(xp.uint8)  # threshold on the device
    prob = prob if isinstance(prob, np.ndarray) else prob.get()
    bitmap = bitmap if isinstance(bitmap, np.ndarray) else bitmap.get()
    bitmap = cv2.dilate(bitmap, np.ones((2, 2), np.uint8))
    contours, _ = cv2.findContours(bitmap, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    sy, sx = shape[0] / hh, shape[1] / ww
    boxes = []
    todo = [(c, 0) for c in contours[: p.max_candidates]]
    while todo:
        contour, cuts = todo.pop(0)
        if len(contour) < 3:
            continue
        rect = cv2.minAreaRect(contour)
        if min(rect[1]) < 3:
            continue
        box = cv2.boxPoints(rect).astype(np.float32)
        score = _box_score(prob, box)
        if score < p.box_thresh:
            if faint is not None and cuts == 0 and max(rect[1]) <= FAINT_SIDE:
                x, y, w, h = cv2.boundingRect(contour)
                if float(prob[y:y + h, x:x + w].max()) >= FAINT_PEAK:
                    faint.append(box * np.array([sx, sy], np.float32))
            long, short = max(rect[1]), min(rect[1])
            if dropped is not None and cuts == 0 and score >= DROPPED_FLOOR and \
                    long > FAINT_SIDE and long >= DROPPED_WIDE * short:
                dropped.append(score)
            if cuts < 2:  # lines run into a broad shape: read the lines apart from it
                todo.extend((c, cuts + 1) for c in _line_parts(bitmap, contour))
            continue
        grown = _unclip(box, p.unclip_ratio)
        if grown is None:
            continue
        rect = cv2.minAreaRect(grown)
        if min(rect[1]) < 5:
            continue
        box = order_points(cv2.boxPoints(rect))
        box[:, 0] = np.clip(box[:, 0] * sx, 0, shape[1] - 1)
        box[:, 1] = np.clip(box[:, 1] * sy, 0, shape[0] - 1)
        boxes.append((box, score))
    return boxes


def _line_parts(bitmap: np.ndarray, contour: np.ndarray) -> list[np.ndarray]:
    """A region of the map too empty in its rectangle to be a line, cut into the lines in it.

    Lines of print crossed by a large pale watermark ("SAMPLE" over a contract) run into
    it in the detector's map: one region, mostly empty in its rectangle, dropped whole with
    its lines (RapidOCR drops them too). Two cuts, the first that finds thin parts wins:
    the parts much thinner than the region's broadest part, and that part
    (:func:`_thin_and_thick`); a row with columns over twice its usual thickness, without
    them (:func:`_row_without_spurs`: a watermark's stroke ending on a line's end). Each
    part is then scored as a region of its own.
    """
    import cv2

    x, y, w, h = cv2.boundingRect(contour)
    if w * h < 400:
        return []
    mask = np.zeros((h + 2, w + 2), np.uint8)
    cv2.drawContours(mask, [contour - [x - 1, y - 1]], -1, 1, thickness=-1)
    mask &= np.pad(bitmap[y:y + h, x:x + w], 1)  # holes inside stay holes
    parts = _thin_and_thick(mask) or _row_without_spurs(mask)
    out = []
    for part in parts:
        found, _ = cv2.findContours(part, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        out.extend(c + [x - 1, y - 1] for c in found)
    return out


def _thin_and_thick(mask: np.ndarray) -> list[np.ndarray]:
    """The broad part of ``mask`` (within its own half-width of the pixels at least half the
    greatest depth inside the region) and the rest, when the rest is under a third of that
    depth thick; else nothing."""
    import cv2

    depth = cv2.distanceTransform(mask, cv2.DIST_L2, 3)
    deep = float(depth.max())
    if deep < 6:
        return []
    core = (depth >= deep / 2).astype(np.uint8)
    # within half the depth (and a pixel) of the core: a second distance transform, linear
    # in the pixels where a dilation by that disk grew with its square (seconds on a
    # 700-px blob)
    near = cv2.distanceTransform(1 - core, cv2.DIST_L2, 3) <= deep / 2 + 1
    broad = near.astype(np.uint8) & mask
    thin = cv2.morphologyEx(mask & (1 - broad), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    if not thin.any() or float(cv2.distanceTransform(thin, cv2.DIST_L2, 3).max()) > deep / 3:
        return []
    return [thin, broad]


def _row_without_spurs(mask: np.ndarray) -> list[np.ndarray]:
    """A level row (at least eight times as long as it is usually thick) without the columns
    over twice its usual (median) thickness and the rows above and below the band it runs
    along (under a quarter as full as its fullest row); else nothing."""
    cols = mask.sum(axis=0)
    on = cols > 0
    if not on.any():
        return []
    usual = float(np.median(cols[on]))
    keep = on & (cols <= 2 * usual)
    if keep.all() or on.sum() < 8 * usual:
        return []
    row = mask * keep[None, :].astype(np.uint8)
    # and the rows the line runs along: those at least a quarter as full as the fullest
    runs = row.sum(axis=1)
    band = np.flatnonzero(runs >= 0.25 * runs.max())
    row[:band[0]] = 0
    row[band[-1] + 1:] = 0
    return [row]


def join_fragments(boxes: list[tuple[np.ndarray, float]]) -> list[tuple[np.ndarray, float]]:
    """Join a lone glyph the detector boxed apart to the line beside it.

    DB splits a line where its glyphs stand far apart: a seven-segment "-17.5" came back
    as "-1" and "17.5" in two overlapping boxes, and the "-" alone was read as the Chinese
    "一". A level box (within 5 degrees) is joined to a level row wider than high (the
    minimum-area rectangle of both, the higher score) when it overlaps the row by more
    than a quarter of the smaller one's area and is 0.5-2 times as tall (a caption inside
    the box of a picture above it is not joined to it), or when it is a fragment: no
    wider and no taller than the row is high, within its height, from 0.3 of that height
    into the row to 0.6 of it before or after it (a line's last "." boxed apart,
    overlapping it by 3 px). Separate lines on a page do not overlap, columns and turned
    lines are not level rows, so they are left as they are; two lines of small print set
    close, whose grown boxes do overlap, stand one over the other sharing their width
    (:func:`_stacked`), and are left apart too.
    """
    import cv2

    def frame(b):  # a box's axes: origin, unit along its top edge, unit down, sizes
        u = b[1] - b[0]
        w = float(np.linalg.norm(u))
        u = u / max(w, 1e-6)
        n = np.array([-u[1], u[0]], np.float32)
        return u, n, w, float(np.linalg.norm(b[3] - b[0]))

    def level(b):
        u = b[1] - b[0]
        return abs(math.degrees(math.atan2(float(u[1]), float(u[0])))) <= 5

    items = [(np.asarray(b, np.float32), float(s)) for b, s in boxes]
    if len(items) < 2:
        return items

    def reach(b):  # the box's upright extent, widened by what a fragment's gap may be
        u, n, w, h = frame(b)
        m = 0.6 * min(w, h) + 2
        return (b[:, 0].min() - m, b[:, 1].min() - m, b[:, 0].max() + m, b[:, 1].max() + m)

    # pairs are tried only where the widened extents meet (a page of thousands of lines
    # would otherwise cost n^2 polygon tests per join)
    ext = np.array([reach(b) for b, _ in items], np.float64)
    alive = np.ones(len(items), bool)
    flat = [level(b) for b, _ in items]

    def near(i):
        e = ext[i]
        hit = ((ext[:, 0] <= e[2]) & (ext[:, 2] >= e[0]) & (ext[:, 1] <= e[3])
               & (ext[:, 3] >= e[1]) & alive)
        hit[i] = False
        return np.flatnonzero(hit)

    todo = list(range(len(items)))
    while todo:
        i = todo.pop(0)
        if not (alive[i] and flat[i]):
            continue
        a, sa = items[i]
        for j in near(i):
            if not flat[j]:
                continue
            b, sb = items[j]
            u, n, bw, bh = frame(b)
            if bw <= bh:  # the line joined to is a row, wider than high
                continue
            xs, ys = (a - b[0]) @ u, (a - b[0]) @ n  # a's corners in b's frame
            inter = cv2.intersectConvexConvex(a, b)[0]
            small = min(cv2.contourArea(a), bw * bh)
            gap = max(xs.min() - bw, -xs.max())
            # overlapping pieces of one row are about as tall as it: a caption under a
            # picture the detector boxed whole lies inside that box, and is no piece of it
            overlap = small > 0 and inter > 0.25 * small and 0.5 * bh <= np.ptp(ys) <= 2 * bh
            # two lines of small print set close, one over the other: their grown boxes
            # overlap, but they share their width, not their row
            overlap = overlap and not _stacked(xs, ys, bw, bh)
            fragment = (np.ptp(xs) <= bh and np.ptp(ys) <= bh and np.ptp(xs) < bw
                        and ys.min() >= -0.25 * bh and ys.max() <= 1.25 * bh
                        and -0.3 * bh <= gap <= 0.6 * bh)
            if overlap or fragment:
                pts = np.concatenate([a, b])
                box = order_points(cv2.boxPoints(cv2.minAreaRect(pts)))
                items[j] = (box, max(sa, sb))
                alive[i] = False
                ext[j] = reach(box)
                flat[j] = level(box)
                todo.append(j)  # the joined row may take another fragment, or its
                todo.extend(int(k) for k in near(j))  # neighbours may join it now
                break
    return [item for item, keep in zip(items, alive) if keep]


# two level boxes are lines one over the other (not pieces of one row) when their middles
# stand at least STACKED of the taller one's height apart across the row and they share at
# least STACKED_SHARE of the narrower one's width along it
STACKED = 0.45
STACKED_SHARE = 0.5


def _stacked(xs: np.ndarray, ys: np.ndarray, bw: float, bh: float) -> bool:
    """Whether a box with corners at ``xs`` along and ``ys`` across a row of width ``bw``
    and height ``bh`` (in the row's frame) stands over or under it: a shipping label's
    9-px "FROM: ..." and its street 12 px apart, boxed apart and grown by the unclip so
    that their boxes overlap by a third, were joined into one box read as nothing."""
    off = abs(float(ys.min() + ys.max()) / 2 - bh / 2)
    shared = min(float(xs.max()), bw) - max(float(xs.min()), 0.0)
    return off >= STACKED * max(float(np.ptp(ys)), bh) and \
        shared >= STACKED_SHARE * min(float(np.ptp(xs)), bw)


def join_columns(boxes: list[tuple[np.ndarray, float]]) -> list[tuple[np.ndarray, float]]:
    """Join the pieces of a column the detector boxed in two overlapping parts.

    A line turned a quarter (an arXiv margin stamp) or a column of CJK came back as two
    standing boxes, upright within 5 degrees, one above the other and overlapping by a few
    pixels ("3 Jan 2024" and "arXiv:2401.01234v1 [cs.CL]": read apart, and in the wrong
    order for a line that reads upwards). Two such boxes are one column when they overlap
    along it, are 2/3-3/2 times as wide, and share at least 70% of the narrower one's
    width; the joined box is their bounding rectangle, with the higher score. Columns side
    by side do not share their width; rows are left to :func:`join_fragments`.
    """
    def upright_column(b):
        u = b[1] - b[0]
        w, h = box_size(b)
        return h >= TALL * w and abs(math.degrees(math.atan2(float(u[1]), float(u[0])))) <= 5

    items = [(np.asarray(b, np.float32), float(s)) for b, s in boxes]
    cols = [i for i, (b, _) in enumerate(items) if upright_column(b)]
    if len(cols) < 2:
        return items
    alive = np.ones(len(items), bool)
    changed = True
    while changed:
        changed = False
        for i in cols:
            for j in cols:
                if i >= j or not (alive[i] and alive[j]):
                    continue
                a, b = items[i][0], items[j][0]
                (ax0, ay0), (ax1, ay1) = a.min(0), a.max(0)
                (bx0, by0), (bx1, by1) = b.min(0), b.max(0)
                wa, wb = ax1 - ax0, bx1 - bx0
                shared = min(ax1, bx1) - max(ax0, bx0)
                along = min(ay1, by1) - max(ay0, by0)
                if along > 0 and 2 * max(wa, wb) <= 3 * min(wa, wb) \
                        and shared >= 0.7 * min(wa, wb):
                    x0, y0 = min(ax0, bx0), min(ay0, by0)
                    x1, y1 = max(ax1, bx1), max(ay1, by1)
                    items[i] = (np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32),
                                max(items[i][1], items[j][1]))
                    alive[j] = False
                    changed = True
    return [item for item, keep in zip(items, alive) if keep]


# large images: detection in overlapping tiles ------------------------------------------------
TILE = 2048  # the longest tile side (det pixels): a strip of a long page is cut at this


def tile_spans(length: int, tile: int, overlap: int) -> list[tuple[int, int]]:
    """``[(start, stop)]`` covering ``0..length`` with windows of at most ``tile``, all of one
    size, overlapping by at least ``overlap`` (one window when it fits)."""
    if length <= tile:
        return [(0, length)]
    overlap = min(overlap, tile // 2)
    n = -(-(length - overlap) // (tile - overlap))
    size = -(-(length + (n - 1) * overlap) // n)
    step = (length - size) / (n - 1)
    return [(round(k * step), round(k * step) + size) for k in range(n)]


def tile_grid(h: int, w: int, scale: float, p: DetParams = DetParams()) -> tuple[int, int, int]:
    """``(tile height, tile width, overlap)`` in image pixels for detection at ``scale``:
    tiles of at most ``p.tile_pixels`` detector pixels, as wide as a short page allows."""
    budget = p.tile_pixels / (scale * scale)  # image pixels per tile
    side = math.sqrt(budget)
    if h <= side:  # a wide strip: full height, cut across
        th, tw = h, int(budget / h)
    elif w <= side:
        th, tw = int(budget / w), w
    else:
        th = tw = int(side)
    cap = int(TILE / scale)
    overlap = max(8, int(p.tile_overlap / scale))
    th, tw = max(min(th, cap), 2 * overlap), max(min(tw, cap), 2 * overlap)
    return th, tw, overlap


def is_blank(part: np.ndarray, spread: int = 24) -> bool:
    """Whether an image region holds nothing to detect: the values of each of its channels
    (every other pixel) span less than ``spread`` levels. Every channel counts: red print
    on blue has the same green (and the same mean grey) as its ground."""
    import cv2

    sub = part[::2, ::2]
    if sub.ndim == 2 or sub.strides[2] == 0:  # grey, or grey shared across channels
        planes = [sub if sub.ndim == 2 else sub[..., 0]]
    else:
        planes = [sub[..., c] for c in range(sub.shape[2])]
    for g in planes:
        lo, hi, _, _ = cv2.minMaxLoc(np.ascontiguousarray(g))
        if hi - lo >= spread:
            return False
    return True


def no_line_in_tile(part: np.ndarray, box: np.ndarray, scale: float) -> bool:
    """Whether a box the detector found in tile ``part`` (at ``scale``) is no line of text:
    it fills most of the tile (:func:`_fills_tile`) or holds too little ink (:func:`bare_box`).
    Without text in a tile for context, the detector can mark bare paper, a page's edge or
    the table around it; such a box, kept, swallows the lines beside it when tiles are
    joined."""
    return _fills_tile(box, part.shape[:2]) or bare_box(part, box, scale)


def _fills_tile(box: np.ndarray, shape) -> bool:
    """Whether a detected box fills most of its tile without being a line (its short side
    over 60% of the tile's, less than three times as long as high): the detector, seeing a
    tile of bare paper and a page edge without any text for context, can mark it all (seen:
    a 1100 x 1100 box at 0.64 on a phone photo's margin, which then swallowed the seven lines
    beside it when rows were joined). Tiles exist because the text is small against the
    page, so no line fills one. The box must fill the tile both across and down: a strip
    image (a 20,000 x 40 banner) is cut into tiles as high as the image, and a short word
    in one ("seg 0", 84 x 39 px) filled its tile's height and was dropped."""
    w, h = (float(np.linalg.norm(box[1] - box[0])), float(np.linalg.norm(box[3] - box[0])))
    short, long = min(w, h), max(w, h)
    across, down = np.ptp(np.asarray(box, np.float64), axis=0)
    return short > 0.6 * min(shape) and long < 3 * short and \
        across > 0.6 * shape[1] and down > 0.6 * shape[0]


def bare_box(part: np.ndarray, box: np.ndarray, scale: float, *, least: int = 48,
             crossings: float = 1.5) -> bool:
    """Whether a large box found in a tile holds too little ink to be text: fewer than
    ``crossings`` edge pixels (Canny, every channel) per pixel of its half-perimeter, seen at
    the detector's ``scale``. Only boxes whose short side is at least ``least`` detector
    pixels are judged (lines at the detector's text height are about 30).

    A tile of bare paper, the page's edge and the table around it, with no text for context,
    can come back as boxes of hundreds of pixels (a phone photo at 0.4 scale: five such
    boxes, 0.3-0.9 edge pixels per side pixel, which then swallowed the lines beside them
    when the tiles were joined); print of any size crosses its box's length several times
    (a 600-px bold word 2.8, a line of small print 3.9).
    """
    import cv2

    w = float(np.linalg.norm(box[1] - box[0])) * scale
    h = float(np.linalg.norm(box[3] - box[0])) * scale
    if min(w, h) < least:
        return False
    lo = np.maximum(np.floor(box.min(0)).astype(int), 0)
    hi = np.minimum(np.ceil(box.max(0)).astype(int), (part.shape[1], part.shape[0]))
    region = np.ascontiguousarray(part[lo[1]:hi[1], lo[0]:hi[0]])
    if region.size == 0:
        return True
    size = (max(1, round(region.shape[1] * scale)), max(1, round(region.shape[0] * scale)))
    small = cv2.resize(region, size, interpolation=cv2.INTER_AREA)
    edges = int(np.count_nonzero(cv2.Canny(small, 60, 150)))
    return edges < crossings * (w + h)


def merge_tiled(boxes: list[tuple]) -> list[tuple[np.ndarray, float]]:
    """Join detections from overlapping tiles: ``(box, score, touches_a_cut[, in_overlap])``.

    Two boxes are one line when they overlap a lot (a duplicate from the overlap: both lie
    in an overlap band, ``in_overlap``, which defaults to ``touches_a_cut``), or when one
    touches a tile's cut edge and they share a row and touch along it (a line cut in two).
    The joined box is the minimum-area rectangle of both. Boxes in no overlap band pass
    through; the others are joined by connected groups (vectorised pairs, a few rounds).
    """
    import cv2

    keep = [(b, s) for b, s, t, *rest in boxes if not (rest[0] if rest else t)]
    items = [(np.asarray(b, np.float32), float(s), bool(t)) for b, s, t, *rest in boxes
             if (rest[0] if rest else t)]
    for _ in range(8):
        n = len(items)
        if n < 2:
            break
        lo = np.array([b.min(0) for b, _, _ in items])
        hi = np.array([b.max(0) for b, _, _ in items])
        touch = np.array([t for _, _, t in items])
        hgt = hi[:, 1] - lo[:, 1]
        h = np.minimum(hgt[:, None], hgt[None, :])
        vert = np.minimum(hi[:, None, 1], hi[None, :, 1]) - np.maximum(lo[:, None, 1],
                                                                       lo[None, :, 1])
        horiz = np.minimum(hi[:, None, 0], hi[None, :, 0]) - np.maximum(lo[:, None, 0],
                                                                        lo[None, :, 0])
        inter = np.maximum(vert, 0) * np.maximum(horiz, 0)
        area = (hi[:, 0] - lo[:, 0]) * hgt
        small = np.minimum(area[:, None], area[None, :])
        dup = (small > 0) & (inter > 0.5 * small)
        cut = (touch[:, None] | touch[None, :]) & (vert > 0.5 * h) & (horiz > -0.3 * h)
        # a column (a standing box: vertical CJK, a margin stamp turned a quarter) cut by a
        # tile's lower or upper edge: its pieces share the column and touch along it
        wid = hi[:, 0] - lo[:, 0]
        w = np.minimum(wid[:, None], wid[None, :])
        standing = hgt > wid
        # one of them long: a column of single glyph boxes (an invoice's Qty digits, each a
        # little taller than wide, ~12 px apart) is no cut column ("6 2 4" read as one box)
        long = hgt > 2 * wid
        column = (touch[:, None] | touch[None, :]) & standing[:, None] & standing[None, :] \
            & (long[:, None] | long[None, :]) & (horiz > 0.5 * w) & (vert > -0.3 * w)
        link = dup | cut | column
        np.fill_diagonal(link, False)
        if not link.any():
            break
        parent = list(range(n))
        for i, j in zip(*np.nonzero(np.triu(link)), strict=True):
            # the axis-aligned bounds only propose: a long line a degree or two off level
            # (a photo's perspective) has bounds that reach the next line's, so each pair is
            # checked on the boxes themselves
            if not _same_line(items[i][0], items[j][0], bool(dup[i, j])):
                continue
            parent[_root(parent, int(i))] = _root(parent, int(j))
        groups: dict[int, list[int]] = {}
        for i in range(n):
            groups.setdefault(_root(parent, i), []).append(i)
        merged = []
        for members in groups.values():
            if len(members) == 1:
                merged.append(items[members[0]])
                continue
            pts = np.concatenate([items[k][0] for k in members]).astype(np.float32)
            box = order_points(cv2.boxPoints(cv2.minAreaRect(pts)))
            merged.append((box, max(items[k][1] for k in members),
                           any(items[k][2] for k in members)))
        items = merged
    return keep + [(b, s) for b, s, _ in items]


def _same_line(a: np.ndarray, b: np.ndarray, dup: bool) -> bool:
    """Whether boxes ``a`` and ``b`` (tl, tr, br, bl), proposed by their bounds, are one line:
    a duplicate when their quadrilaterals overlap by more than half the smaller; else two
    pieces of a line cut by a tile's edge when, both lying (longer than high), their centre
    lines meet within half the thinner one's height where the pieces meet. Standing boxes
    (a column) keep the bounds' verdict."""
    import cv2

    if dup:
        area, _ = cv2.intersectConvexConvex(a.astype(np.float32), b.astype(np.float32))
        small = min(cv2.contourArea(a.astype(np.float32)), cv2.contourArea(b.astype(np.float32)))
        if small > 0 and area > 0.5 * small:
            return True
    lines = []
    for q in (a, b):
        left, right = (q[0] + q[3]) / 2, (q[1] + q[2]) / 2
        thick = (np.linalg.norm(q[3] - q[0]) + np.linalg.norm(q[2] - q[1])) / 2
        if right[0] - left[0] < thick:  # a standing box
            return not dup
        lines.append((left, right, thick))
    (la, ra, ta), (lb, rb, tb) = lines
    x = (max(la[0], lb[0]) + min(ra[0], rb[0])) / 2  # middle of the overlap (or of the gap)

    def y_at(left, right):
        return left[1] + (x - left[0]) * (right[1] - left[1]) / (right[0] - left[0])

    return abs(y_at(la, ra) - y_at(lb, rb)) < 0.5 * min(ta, tb)


def _root(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i
