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

__all__ = ["DetParams", "estimate_text_height", "choose_scale", "det_input", "db_boxes",
           "join_fragments",
           "order_points"]

STRIDE = 32  # the DB backbone's total stride: input sides must be multiples of it


@dataclass(frozen=True)
class DetParams:
    """Knobs of detection. ``target`` is the text height (px) the detector sees best."""

    thresh: float = 0.3
    box_thresh: float = 0.5
    unclip_ratio: float = 1.6
    max_candidates: int = 1000
    target: float = 18.0
    min_text: float = 8.0
    limit: int = 960
    max_pixels: float = 4.0e6
    max_upscale: float = 4.0


def estimate_text_height(gray: np.ndarray) -> float | None:
    """A rough text height in pixels from the glyph-like connected components of ``gray``.

    Binarizes with a local (adaptive) threshold, for dark and for light text, keeps the
    components of plausible glyph shape (the polarity with more of them wins), and returns
    the 70th percentile of their heights; None when no glyph-like component is found.
    Images over 8 MP are measured at a reduced size.
    """
    import cv2

    h, w = gray.shape[:2]
    if min(h, w) < 8:
        return None
    r = min(1.0, math.sqrt(8.0e6 / (h * w)))
    small = cv2.resize(gray, (max(1, int(w * r)), max(1, int(h * r))),
                       interpolation=cv2.INTER_AREA) if r < 1 else gray
    small = cv2.GaussianBlur(small, (3, 3), 0)
    best = None
    for polarity in (cv2.THRESH_BINARY_INV, cv2.THRESH_BINARY):  # dark text, then light text
        # a local threshold: pages on a differently shaded canvas, shadows, gradients
        bw = cv2.adaptiveThreshold(small, 255, cv2.ADAPTIVE_THRESH_MEAN_C, polarity, 41, 18)
        n, _, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
        cw, ch, area = stats[1:, 2], stats[1:, 3], stats[1:, 4]
        keep = (ch >= 4) & (ch < small.shape[0] / 2) & (cw < 4 * ch) & (cw * ch < 40 * area)
        keep &= area >= 6
        if best is None or keep.sum() > best[1].sum():
            best = (ch, keep)
    ch, keep = best
    if keep.sum() < 3:
        return None
    return float(np.percentile(ch[keep], 70)) / r


def choose_scale(h: int, w: int, text_height: float | None, p: DetParams = DetParams()) -> float:
    """Detection scale for an ``h x w`` image whose text is ``text_height`` px tall.

    Text already at least ``p.min_text`` px is brought to ``p.target`` px by shrinking (never
    enlarged); smaller text is enlarged to ``p.min_text * 1.5`` (up to ``p.max_upscale`` and
    ``p.max_pixels``); an image whose text height is unknown is only shrunk to fit
    ``p.limit``. The detector needs far fewer pixels per line than the recognizer, which
    reads crops from the full-resolution image.
    """
    fit = min(1.0, p.limit / max(h, w))
    if not text_height:
        s = fit
    elif text_height >= p.min_text:
        s = min(1.0, p.target / text_height)
    else:
        s = 1.5 * p.min_text / text_height
    s = min(s, p.max_upscale, math.sqrt(p.max_pixels / max(1, h * w)))
    # a side shorter than one stride gives the model nothing to work on
    s = max(s, min(STRIDE / max(1, min(h, w)), math.sqrt(p.max_pixels / max(1, h * w))))
    return float(s)


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


def db_boxes(prob, size: tuple[int, int], shape: tuple[int, int], p: DetParams = DetParams(),
             xp=np) -> list[tuple[np.ndarray, float]]:
    """Boxes from one probability map.

    ``prob``: (H, W) map for the padded input; ``size``: (h, w) of the resized image inside
    it; ``shape``: (h, w) of the original image. Returns ``[(box (4, 2) in original pixels,
    tl-tr-br-bl order, score)]``.
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
    for contour in contours[: p.max_candidates]:
        if len(contour) < 3:
            continue
        rect = cv2.minAreaRect(contour)
        if min(rect[1]) < 3:
            continue
        box = cv2.boxPoints(rect).astype(np.float32)
        score = _box_score(prob, box)
        if score < p.box_thresh:
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


def join_fragments(boxes: list[tuple[np.ndarray, float]]) -> list[tuple[np.ndarray, float]]:
    """Join a lone glyph the detector boxed apart to the line beside it.

    DB splits a line where its glyphs stand far apart: a seven-segment "-17.5" came back
    as "-1" and "17.5" in two overlapping boxes, and the "-" alone was read as the Chinese
    "一". A level box (within 5 degrees) is joined to a level row wider than high (the
    minimum-area rectangle of both, the higher score) when it overlaps the row by more
    than a quarter of the smaller one's area, or when it is a fragment: no wider and no
    taller than the row is high, within its height, at most 0.6 of that height before or
    after it. Separate lines on a page do not overlap, columns and turned lines are not
    level rows, so they are left as they are.
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
    joined = True
    while joined:
        joined = False
        for i, (a, sa) in enumerate(items):
            if not level(a):
                continue
            for j, (b, sb) in enumerate(items):
                if i == j or not level(b):
                    continue
                u, n, bw, bh = frame(b)
                if bw <= bh:  # the line joined to is a row, wider than high
                    continue
                xs, ys = (a - b[0]) @ u, (a - b[0]) @ n  # a's corners in b's frame
                inter = cv2.intersectConvexConvex(a, b)[0]
                small = min(cv2.contourArea(a), bw * bh)
                gap = max(xs.min() - bw, -xs.max())
                overlap = small > 0 and inter > 0.25 * small
                fragment = (np.ptp(xs) <= bh and np.ptp(ys) <= bh and np.ptp(xs) < bw
                            and ys.min() >= -0.25 * bh and ys.max() <= 1.25 * bh
                            and -2 <= gap <= 0.6 * bh)
                if overlap or fragment:
                    pts = np.concatenate([a, b])
                    box = order_points(cv2.boxPoints(cv2.minAreaRect(pts)))
                    items[j] = (box, max(sa, sb))
                    del items[i]
                    joined = True
                    break
            if joined:
                break
    return items


# very large images: detection in overlapping tiles ------------------------------------------
TILE = 2048  # the largest side (det pixels) the detector sees at once; wider inputs weaken it


def tile_spans(length: int, tile: int, overlap: int) -> list[tuple[int, int]]:
    """``[(start, stop)]`` covering ``0..length`` with windows of ``tile`` overlapping by
    ``overlap`` (one window when it fits)."""
    if length <= tile:
        return [(0, length)]
    step = tile - overlap
    n = -(-(length - overlap) // step)
    starts = [min(k * step, length - tile) for k in range(n)]
    return [(s, s + tile) for s in sorted(set(starts))]


def merge_tiled(boxes: list[tuple[np.ndarray, float, bool]]) -> list[tuple[np.ndarray, float]]:
    """Join detections from overlapping tiles: ``(box, score, touches_a_cut)``.

    Two boxes are one line when they overlap a lot (a duplicate from the overlap), or when
    one touches a tile's cut edge and they share a row and touch along it (a line cut in
    two). The joined box is the minimum-area rectangle of both.
    """
    import cv2

    items = [[b, s, t] for b, s, t in boxes]
    merged = True
    while merged:
        merged = False
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                a, b = items[i][0], items[j][0]
                (ax0, ay0), (ax1, ay1) = a.min(0), a.max(0)
                (bx0, by0), (bx1, by1) = b.min(0), b.max(0)
                h = min(ay1 - ay0, by1 - by0)
                vert = min(ay1, by1) - max(ay0, by0)
                horiz = min(ax1, bx1) - max(ax0, bx0)
                inter = max(0.0, vert) * max(0.0, horiz)
                small = min((ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0))
                dup = small > 0 and inter > 0.5 * small
                cut = (items[i][2] or items[j][2]) and vert > 0.5 * h and horiz > -0.3 * h
                if dup or cut:
                    pts = np.concatenate([a, b]).astype(np.float32)
                    box = order_points(cv2.boxPoints(cv2.minAreaRect(pts)))
                    items[i] = [box, max(items[i][1], items[j][1]), items[i][2] or items[j][2]]
                    del items[j]
                    merged = True
                    break
            if merged:
                break
    return [(b, s) for b, s, _ in items]
