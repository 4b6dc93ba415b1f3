"""Crops in, training batches out: loading, augmentation, rendered general text, batching.

* :func:`load_crop` reads an image as an RGB uint8 array as ``%ocr`` reads one (Pillow,
  EXIF applied, 16-bit grey scaled, transparency laid on paper); :func:`as_read` turns a
  vertical line's crop a quarter, as the pipeline turns a tall box before reading it.
* :class:`Augment` applies small, label-preserving changes: a slight affine warp (rotation,
  shear, scale), margins trimmed or grown, Gaussian blur, sensor noise, contrast and
  brightness. Each is drawn per crop from a seeded generator.
* :class:`GeneralText` renders lines of ordinary printed text (English, Chinese, mixed,
  digits) with the fonts the OCR test set uses; mixed into every batch it keeps the model
  reading what it read before (the "does not forget" part of fine-tuning).
* :func:`make_batch` turns crops into the recognizer's input exactly as the OCR pipeline
  does (:func:`skiff.kernels.ocr.rec.rec_input`: height 48, grey padding), with crops wider
  than ``max_width`` squeezed to it.
"""

from __future__ import annotations

import random

import numpy as np

from skiff.kernels.ocr.rec import rec_input

__all__ = ["load_crop", "as_read", "Augment", "GeneralText", "render_line", "make_batch",
           "fit_width"]


def load_crop(path: str) -> np.ndarray:
    """An image file as RGB uint8, converted as ``%ocr`` converts it (EXIF's turn, 16-bit
    grey scaled, transparency on paper), so a crop trains as it will be read."""
    from PIL import Image

    from skiff.kernels.ocr.images import pil_rgb

    with Image.open(path) as im:
        return pil_rgb(im, exif=True)


def as_read(crop: np.ndarray, text: str) -> np.ndarray:
    """``crop`` as the OCR pipeline reads it: a crop at least :data:`rec.TALL` times taller
    than wide is a vertical line, which :func:`rec.crop_box` turns a quarter (counter-
    clockwise, its top to the left) before the recognizer sees it; a crop file of such a
    column is turned the same way, so the model learns it as it will be read (upright, a
    column of 5 characters was 1-2 frames wide at 48 px and refused as too narrow). A lone
    character stays as it stands (a display's "1" is read so too). A crop at least as tall
    as wide but under ``TALL`` whose text is two or more CJK characters is a short column
    (a drawer label's "红花" one above the other, 1.35-1.45 times as tall as wide): the
    pipeline reads such a crop turned too where that reading is the surer
    (``LineReading.read_squat_turned``), and it is turned here as well (round 40)."""
    from skiff.kernels.ocr.rec import TALL

    h, w = crop.shape[:2]
    chars = text.replace(" ", "")
    if (h >= TALL * w and len(chars) > 1) or \
            (w <= h and len(chars) > 1 and all(_is_cjk(c) for c in chars)):
        return np.ascontiguousarray(np.rot90(crop))
    return crop


def _is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a CJK ideograph (or a full-width form), written one above the
    other in a column."""
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or \
        "\uff00" <= ch <= "\uffef"


def render_line(text: str, font_path: str, size: int, rng: random.Random, *,
                ink=None, paper=None, index: int = 0, ghost: str | None = None,
                ghost_ink=None) -> np.ndarray:
    """One line of ``text`` on a plain background, cut with a small random margin;
    ``ghost`` is drawn first, under the text, in ``ghost_ink`` (a display's unlit
    segments)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(font_path, size, index=index) if font_path.endswith(".ttc") \
        else ImageFont.truetype(font_path, size)
    left, top, right, bottom = font.getbbox(text)
    mx, my = rng.randint(2, max(3, size // 3)), rng.randint(2, max(3, size // 4))
    w, h = right - left + 2 * mx, bottom - top + 2 * my
    paper = paper if paper is not None else tuple(rng.randint(200, 255) for _ in range(3))
    ink = ink if ink is not None else tuple(rng.randint(0, 70) for _ in range(3))
    img = Image.new("RGB", (max(w, 4), max(h, 4)), paper)
    draw = ImageDraw.Draw(img)
    if ghost:
        draw.text((mx - left, my - top), ghost, font=font, fill=ghost_ink)
    draw.text((mx - left, my - top), text, font=font, fill=ink)
    return np.asarray(img)


class Augment:
    """Small label-preserving changes to a crop, drawn from ``seed``."""

    def __init__(self, seed: int = 0, *, strength: float = 1.0):
        self.rng = np.random.default_rng(seed)
        self.strength = float(strength)

    def __call__(self, crop: np.ndarray) -> np.ndarray:
        import cv2

        r, s = self.rng, self.strength
        h, w = crop.shape[:2]
        if r.random() < 0.7:  # rotation, shear, scale about the centre
            angle = r.uniform(-2.0, 2.0) * s
            shear = r.uniform(-0.15, 0.15) * s
            scale = 1.0 + r.uniform(-0.06, 0.04) * s
            m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, scale)
            m[0, 1] += shear
            m[0, 2] -= shear * h / 2
            crop = cv2.warpAffine(crop, m, (w, h), flags=cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_REPLICATE)
        if r.random() < 0.5:  # margins: trim or grow each side by up to 8% of the height
            d = [int(round(r.uniform(-0.08, 0.08) * h * s)) for _ in range(4)]
            t, b, left, right = d
            crop = cv2.copyMakeBorder(crop, max(t, 0), max(b, 0), max(left, 0), max(right, 0),
                                      cv2.BORDER_REPLICATE)
            hh, ww = crop.shape[:2]
            crop = crop[max(-t, 0): hh - max(-b, 0), max(-left, 0): ww - max(-right, 0)]
        if r.random() < 0.3:
            sigma = r.uniform(0.3, 1.2) * s
            crop = cv2.GaussianBlur(crop, (0, 0), sigma)
        out = crop.astype(np.float32)
        if r.random() < 0.5:  # contrast and brightness
            out = (out - 128.0) * r.uniform(0.7, 1.2) + 128.0 + r.uniform(-25, 25) * s
        if r.random() < 0.3:
            out += r.normal(0.0, r.uniform(2.0, 10.0) * s, out.shape)
        return np.clip(out, 0, 255).astype(np.uint8)


class GeneralText:
    """Rendered lines of ordinary text (the classes the base model already reads)."""

    def __init__(self, seed: int = 0, *, dictionary=None, fonts=None):
        """``fonts``: the font files to draw in (a ``.ttc`` by its first face, or
        ``(path, index)``), each line in one that has all its characters; default the OCR
        test set's (DejaVu Sans / Serif, Noto Sans CJK SC). A run that is measured on that
        set's faces afterwards gives others, so the general lines do not train on them."""
        from skiff.kernels.ocr import synth

        self.rng = random.Random(seed)
        pool = synth.ENGLISH + synth.CHINESE + synth.MIXED
        if dictionary is not None:  # only lines the dictionary can spell
            pool = [t for t in pool if not dictionary.missing(t)]
        self.cjk = synth._CJK
        self.faces = None
        if fonts is None:
            self.fonts = synth.fonts()
        else:
            self.faces = _faces(fonts)
            self._covers: dict[str, list] = {}
            pool = [t for t in pool if self._faces_for(t)]
            if not pool:
                raise ValueError("general text: none of the fonts "
                                 f"({', '.join(str(f) for f in fonts)}) draws any general line")
        self.pool = pool

    def _faces_for(self, line: str) -> list:
        """The given faces that hold every character of ``line``."""
        found = self._covers.get(line)
        if found is None:
            need = {ord(c) for c in line if not c.isspace()}
            found = [(path, index) for path, index, chars in self.faces if need <= chars]
            self._covers[line] = found
        return found

    def sample(self, max_width: int | None = None, height: int = 48) -> tuple[np.ndarray, str]:
        """A rendered line and its text; with ``max_width``, a line that would be wider than
        that at ``height`` px is cut to fewer characters (not squeezed), so a mixed batch
        is no wider than its domain crops and the line looks as the OCR pipeline feeds it."""
        r = self.rng
        line = r.choice(self.pool)
        if len(line) > 8 and r.random() < 0.6:  # a piece of the line, cut at a space if any
            n = r.randint(4, min(len(line), 24))
            start = r.randint(0, len(line) - n)
            line = line[start: start + n].strip() or line
        if r.random() < 0.15:
            line = "".join(r.choice("0123456789.,:-/") for _ in range(r.randint(3, 10)))
            line = line.strip() or "0"
        if self.faces is not None:
            font, index = r.choice(self._faces_for(line) or [self.faces[0][:2]])
        elif self.cjk.search(line):
            font, index = self.fonts["cjk"], 2
        else:
            font, index = r.choice([self.fonts["latin"], self.fonts["serif"]]), 0
        size = r.randint(22, 40)
        crop = render_line(line, font, size, r, index=index)
        for _ in range(3):
            wide = height * crop.shape[1] / crop.shape[0]
            if max_width is None or wide <= max_width or len(line) <= 2:
                break
            n = max(2, int(len(line) * max_width / wide * 0.9))
            start = r.randint(0, len(line) - n)
            line = line[start: start + n].strip() or line[:n]
            crop = render_line(line, font, size, r, index=index)
        return crop, " ".join(line.split())


def _faces(fonts) -> list[tuple[str, int, set]]:
    """(path, face index, the code points it draws) of each font given: a path (a ``.ttc``'s
    first face) or ``(path, index)``; a file that is missing or no font is refused."""
    import os

    from fontTools.ttLib import TTFont

    if isinstance(fonts, (str, os.PathLike)):
        fonts = [fonts]
    out = []
    for f in fonts:
        path, index = (f if isinstance(f, (tuple, list)) else (f, 0))
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ValueError(f"general text font {path!r}: no such file")
        try:
            with TTFont(path, fontNumber=int(index), lazy=True) as tt:
                chars = set(tt.getBestCmap() or ())
        except Exception as exc:
            raise ValueError(f"general text font {path!r} cannot be read as a font "
                             f"({type(exc).__name__}: {exc})") from None
        out.append((path, int(index), chars))
    if not out:
        raise ValueError("general text: an empty list of fonts (None: the default faces)")
    return out


def fit_width(crop: np.ndarray, height: int, max_width: int) -> np.ndarray:
    """``crop`` at ``height`` px (aspect kept), squeezed to ``max_width`` when wider."""
    import cv2

    h, w = crop.shape[:2]
    new_w = max(1, int(np.ceil(height * w / max(h, 1))))
    return cv2.resize(crop, (min(new_w, max_width), height), interpolation=cv2.INTER_LINEAR)


def make_batch(crops: list[np.ndarray], height: int = 48, max_width: int = 320) -> np.ndarray:
    """(N, 3, height, W) float32, the OCR pipeline's own recognizer input."""
    fitted = [fit_width(c, height, max_width) for c in crops]
    return rec_input(fitted, height, bucket=False)
