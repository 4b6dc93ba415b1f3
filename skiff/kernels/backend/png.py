"""A heatmap written as a PNG with numpy and zlib alone (no matplotlib).

A job that draws its picture with matplotlib pays ~0.3 s to import it and ~0.5 s for the first
figure (fonts, layout) before it can report done; a first ``%solve`` of 256x256 takes 60 ms.
So the pictures a job always writes are drawn here, in a few milliseconds: the array in
viridis (9 anchors, linear between them) with a colour strip on its right, lowest value at the
bottom. The values themselves are in the job's log and result; plots with axes and labels are
drawn by ``Solution.plot`` when someone asks for them.

>>> import numpy as np
>>> data = heatmap_png(np.arange(12.0).reshape(3, 4))
>>> data[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

__all__ = ["heatmap_png", "write_png"]

# viridis at 0, 1/8, ..., 1
_VIRIDIS = np.array([
    (68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141),
    (39, 173, 129), (92, 200, 99), (170, 220, 50), (253, 231, 37)], dtype=float)


def colormap(values: np.ndarray) -> np.ndarray:
    """Values in [0, 1] (NaN allowed: grey) -> uint8 RGB, shape ``values.shape + (3,)``."""
    v = np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0) * (len(_VIRIDIS) - 1)
    lo = np.minimum(v.astype(int), len(_VIRIDIS) - 2)
    t = (v - lo)[..., None]
    rgb = _VIRIDIS[lo] * (1 - t) + _VIRIDIS[lo + 1] * t
    rgb[np.isnan(values)] = 200.0
    return rgb.round().astype(np.uint8)


def write_png(rgb: np.ndarray) -> bytes:
    """PNG bytes of an ``(H, W, 3)`` uint8 image (8-bit RGB, no filtering)."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    h, w, _ = rgb.shape
    rows = np.zeros((h, 1 + 3 * w), dtype=np.uint8)  # filter byte 0 before each row
    rows[:, 1:] = rgb.reshape(h, 3 * w)

    def chunk(tag: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + tag + body
                + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + chunk(b"IEND", b""))


def heatmap_png(field, path: str | os.PathLike | None = None, *, size: int = 320) -> bytes:
    """A 2-D array as a viridis heatmap about ``size`` pixels on its long side, axis 0 along x
    and axis 1 upwards (as ``imshow(field.T, origin="lower")``), with a colour strip; written
    to ``path`` too when given."""
    a = np.asarray(field, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"heatmap_png wants a 2-D array, got shape {a.shape}")
    img = a.T[::-1]                       # rows top to bottom = y from high to low
    step = max(1, int(np.ceil(max(img.shape) / size)))
    img = img[::step, ::step]
    scale = max(1, size // max(img.shape))
    img = np.repeat(np.repeat(img, scale, axis=0), scale, axis=1)
    finite = img[np.isfinite(img)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    norm = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    h, w = norm.shape
    pad, strip = 8, 14
    canvas = np.full((h + 2 * pad, w + 3 * pad + strip, 3), 255, dtype=np.uint8)
    canvas[pad:pad + h, pad:pad + w] = colormap(norm)
    ramp = np.linspace(1.0, 0.0, h)[:, None].repeat(strip, axis=1)
    canvas[pad:pad + h, 2 * pad + w:2 * pad + w + strip] = colormap(ramp)
    data = write_png(canvas)
    if path is not None:
        with open(path, "wb") as fh:
            fh.write(data)
    return data
