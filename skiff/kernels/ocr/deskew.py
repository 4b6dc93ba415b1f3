"""Hard images: the skew of the text on a page, found without the detector, and a page
turned level for a second detection pass.

The DB detector was trained mostly on level lines. On a small, noisy image turned by tens
of degrees it joins neighbouring lines into one box or finds nothing; turned level, the
same image is read. :func:`skew_angle` finds the angle of the lines from the ink alone (a
projection-profile search: the direction in which the ink's profile across the lines is
sharpest), :func:`level` turns the image by it, and :func:`boxes_back` maps the boxes found
on the turned image back onto the original.

>>> import numpy as np
>>> img = np.full((120, 240), 255, np.uint8); img[50:58, 20:220:6] = 0   # a dotted line
>>> round(skew_angle(img)[0])
0
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ink_points", "skew_angle", "level", "boxes_back", "off_axis"]


def ink_points(gray: np.ndarray, max_points: int = 20000, seed: int = 0) -> np.ndarray | None:
    """(N, 2) float32 x, y of the pixels of glyph-like components (dark or light text,
    whichever gives more such components), at most ``max_points`` (sampled); None when
    there are fewer than three glyph-like components."""
    import cv2

    small = cv2.GaussianBlur(gray, (5, 5), 0)
    best = None
    for polarity in (cv2.THRESH_BINARY_INV, cv2.THRESH_BINARY):
        bw = cv2.adaptiveThreshold(small, 255, cv2.ADAPTIVE_THRESH_MEAN_C, polarity, 31, 12)
        n, labels, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
        cw, ch, area = stats[1:, 2], stats[1:, 3], stats[1:, 4]
        keep = (ch >= 3) & (cw >= 2) & (area >= 8) & (ch < gray.shape[0] / 2) & \
            (cw < gray.shape[1] / 2)
        if best is None or keep.sum() > best[1].sum():
            best = (labels, keep)
    labels, keep = best
    if keep.sum() < 3:
        return None
    good = np.concatenate([[False], keep])
    ys, xs = np.nonzero(good[labels])
    pts = np.stack([xs, ys], 1).astype(np.float32)
    if len(pts) > max_points:
        pts = pts[np.random.default_rng(seed).choice(len(pts), max_points, replace=False)]
    return pts


def _sharpness(pts: np.ndarray, degrees: np.ndarray) -> np.ndarray:
    """For each angle, how sharp the ink's profile across lines of that direction is: the
    sum of squared counts of the projections onto the lines' normal (1-px bins)."""
    t = np.deg2rad(degrees)
    normal = np.stack([-np.sin(t), np.cos(t)])  # (2, A)
    proj = pts @ normal  # (N, A)
    proj -= proj.min(0)
    out = np.empty(len(degrees))
    for a in range(len(degrees)):
        counts = np.bincount(proj[:, a].astype(np.int64))
        out[a] = float(np.dot(counts, counts))
    return out / max(1, len(pts)) ** 2


def skew_angle(gray: np.ndarray) -> tuple[float, float] | None:
    """``(degrees, contrast)``: the angle of the text lines in ``gray`` (-90 to 90, image
    axes: positive turns clockwise on screen) and how much sharper the profile is there
    than at its median angle (1 means no preferred direction); None without ink.

    A coarse search in 1-degree steps over the half turn is refined in 0.1-degree steps.
    A line and the same line upside down have one angle: the direction (0 or 180) is the
    direction model's and the recognizer's question, not this one's.
    """
    pts = ink_points(gray)
    if pts is None:
        return None
    pts = pts - pts.mean(0)
    coarse = np.arange(-90.0, 90.0, 1.0)
    sharp = _sharpness(pts, coarse)
    best = float(coarse[int(np.argmax(sharp))])
    fine = np.arange(best - 1.0, best + 1.0001, 0.1)
    fs = _sharpness(pts, fine)
    angle = float(fine[int(np.argmax(fs))])
    angle = (angle + 90.0) % 180.0 - 90.0
    return angle, float(fs.max() / max(1e-12, np.median(sharp)))


def off_axis(degrees: float) -> float:
    """How far (degrees) a line angle is from the nearest of 0 and 90 degrees."""
    d = abs(degrees) % 90.0
    return min(d, 90.0 - d)


def level(image: np.ndarray, degrees: float) -> tuple[np.ndarray, np.ndarray]:
    """``image`` turned by ``-degrees`` (its lines made level), the canvas grown to hold it
    all and filled by replicating the border; and the 2 x 3 matrix that maps original pixel
    coordinates to the turned image's."""
    import cv2

    h, w = image.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2.0, h / 2.0), degrees, 1.0)
    c, s = abs(m[0, 0]), abs(m[0, 1])
    nw, nh = int(math.ceil(h * s + w * c)), int(math.ceil(h * c + w * s))
    m[0, 2] += nw / 2.0 - w / 2.0
    m[1, 2] += nh / 2.0 - h / 2.0
    out = cv2.warpAffine(image, m, (nw, nh), flags=cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REPLICATE)
    return out, m


def boxes_back(boxes: list, m: np.ndarray, shape: tuple[int, int]) -> list:
    """``[(box, score)]`` found on an image made by :func:`level` with matrix ``m``, mapped
    back onto the original (``shape``: its h, w). The corners keep the order they had on
    the level image (top left, top right, ... of the text), so a line turned by any angle
    is cropped along its own length."""
    inv = np.linalg.inv(np.vstack([m, [0.0, 0.0, 1.0]]))[:2]
    out = []
    for box, score in boxes:
        pts = np.asarray(box, np.float64) @ inv[:, :2].T + inv[:, 2]
        pts[:, 0] = np.clip(pts[:, 0], 0, shape[1] - 1)
        pts[:, 1] = np.clip(pts[:, 1], 0, shape[0] - 1)
        out.append((pts.astype(np.float32), score))
    return out
