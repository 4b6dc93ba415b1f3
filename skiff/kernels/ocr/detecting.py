"""Detection passes of :class:`.pipeline.OcrPipeline`: each image's scale, the detector run on
same-size groups or in tiles, a second pass for hard images (smoothed, turned level), and the
float32 detector for the images its int8 twin reads unsurely. A mixin: it uses the pipeline's
``params``, ``engine``, ``device``, ``xp``, ``det_batch`` and ``det_tile_pixels``."""

from __future__ import annotations

import time

import numpy as np

from . import denoise
from .deskew import boxes_back, level, off_axis, skew_angle
from .det import (
    STRIDE,
    choose_scale,
    db_boxes,
    det_input,
    is_blank,
    join_columns,
    join_fragments,
    merge_tiled,
    no_line_in_tile,
    one_pass_scale,
    text_extent,
    tile_grid,
    tile_spans,
)
from .images import grey_of
from .item import Item
from .joined import split_joined

# detection reads only the ink box of a page (det.text_extent) when that saves at least this
# many detector pixels: on small images the box saves little, and the detector, which pools
# over the whole input, read 3 of 18 small degraded images worse inside it
INK_SAVES = 1.0e5
# faint glyph-sized regions are looked at again enlarged (DetectionPasses._faint_glyphs) on an
# image with at most this many of them; more are a texture or noise
FAINT_MOST = 16
# ... and only a region at most this many times wider than high: a page number "- 1 -" at
# 10 px (a page shown at 0.44) is 13 x 7; 48 text-free images (rules, dots, empty boxes,
# shapes, texture) read the same 19 false marks at 1 and at 3
FAINT_WIDE = 3.0
# level boxes on a small image whose ink runs more than this many degrees off the axes are
# looked at again turned level (DetectionPasses._lines_joined)
SKEW_JOINED = 10.0
# a small ink box (under SMALL_INK detector pixels) where the detector dropped a line-shaped
# region for its score (det.db_boxes' ``dropped``) is read again grown by INK_MARGIN detector
# pixels each side (DetectionPasses._ink_grown): the detector weighs its channels by means over
# the whole input, and a crop that is nearly all text shifts them (round 44, h20: a receipt's
# rows "name ..... price" at 0.5-0.6 of 150 dpi, 195 x 409, ran into one region a row scoring
# 0.36-0.47; 48 px of its white page around them give the rows apart, as the whole page does)
SMALL_INK = 1.6e5
INK_MARGIN = 48


def _source(it: Item) -> tuple[np.ndarray, np.ndarray]:
    """The pixels detection reads for ``it`` (its ink box, else all of it) and their offset
    ``(x, y)`` in the image."""
    if it.ink is None:
        return it.bgr, np.zeros(2, np.float32)
    y0, y1, x0, x1 = it.ink
    return it.bgr[y0:y1, x0:x1], np.array([x0, y0], np.float32)


def _aligned(ink, scale: float, shape):
    """The ink box with its corner moved back onto the detector's 32-pixel grid of the
    whole image (at ``scale``), so the network sees the text on the same grid either way;
    None when it would save the detector fewer than ``INK_SAVES`` pixels."""
    if ink is None:
        return None
    y0, y1, x0, x1 = ink
    saved = (shape[0] * shape[1] - (y1 - y0) * (x1 - x0)) * scale * scale
    if saved < INK_SAVES:  # a small image is read whole (it reads better in its context)
        return None
    step = STRIDE / scale
    return (int(y0 // step * step), y1, int(x0 // step * step), x1)


def _grown(ink, scale: float, shape):
    """A small ink box (under ``SMALL_INK`` detector pixels at ``scale``) grown by
    ``INK_MARGIN`` detector pixels each side within the image, its corner back on the
    32-pixel grid; None for a larger box or none."""
    if ink is None:
        return None
    y0, y1, x0, x1 = ink
    if (y1 - y0) * (x1 - x0) * scale * scale >= SMALL_INK:
        return None
    m, step = INK_MARGIN / scale, STRIDE / scale
    y0, x0 = max(0.0, y0 - m), max(0.0, x0 - m)
    return (int(y0 // step * step), min(shape[0], int(np.ceil(y1 + m))),
            int(x0 // step * step), min(shape[1], int(np.ceil(x1 + m))))


def _mean_score(boxes) -> float:
    return float(np.mean([score for _, score in boxes])) if boxes else 0.0


# a detection with more boxes beats another only where its boxes cover each of the other's
# to at least COVER of its area: a receipt's leader row boxed whole ("Croissant ..... 3.10")
# is one line, and a second pass that splits the other rows but loses that row's price
# (round 45, h3: p4.png at 0.5, the smoothed pass in tiles) is not better for its count
COVER = 0.6


def _covers(new, old) -> bool:
    """Whether the boxes ``new`` cover each box of ``old`` (their axis-aligned bounds) to at
    least ``COVER`` of its area."""
    if not new or not old:
        return True
    pts = np.concatenate([b for b, _ in new + old])
    m = np.zeros((int(pts[:, 1].max()) + 2, int(pts[:, 0].max()) + 2), bool)
    for b, _ in new:
        (x0, y0), (x1, y1) = np.maximum(0, b.min(0).astype(int)), b.max(0).astype(int)
        m[y0:y1 + 1, x0:x1 + 1] = True
    for b, _ in old:
        (x0, y0), (x1, y1) = np.maximum(0, b.min(0).astype(int)), b.max(0).astype(int)
        part = m[y0:y1 + 1, x0:x1 + 1]
        if part.size and part.mean() < COVER:
            return False
    return True


def _better(new, old) -> bool:
    """Whether detection ``new`` beats ``old``: more lines covering the old ones
    (:func:`_covers`), or as many, more surely."""
    return (len(new) > len(old) and _covers(new, old)) or \
        (bool(new) and len(new) == len(old) and _mean_score(new) > _mean_score(old))


class DetectionPasses:
    """Boxes for a batch of images (:meth:`detect`)."""

    def detect(self, items: list[Item]) -> None:
        """Boxes for each item: pick its scale, run the detector on same-size groups, and
        enlarge once more where the text found is still too small to read well; then the
        second passes of hard images (:meth:`_detect_level`).

        With the int8 detector (:mod:`.quantize`), a small noisy image, and any image whose
        int8 reading is unsure (:meth:`_weak`), is detected by the float32 file instead, as
        it would be without the twin: on the degraded tier int8 alone lost a point, and
        such images are small, so the float32 passes cost little. Without the detector
        (``use_det=False``) each image is one box, the whole of it."""
        if not self.use_det:
            for it in items:
                h, w = it.bgr.shape[:2]
                whole = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
                it.boxes = [(whole, 1.0)]
                it.timings["det_scale"] = 1.0
            return
        int8 = self.engine("det").path != self.models.path("det")
        exact = {it.index for it in items if int8 and self._fragile(it)}
        scales = self._first_passes([it for it in items if it.index not in exact], "det")
        if int8:
            exact |= {it.index for it in items if it.index in scales and
                      self._weak(it, max(it.bgr.shape[:2]) * scales[it.index])}
            scales.update(self._first_passes([it for it in items if it.index in exact],
                                             "det-fp32"))
        for it in items:
            which = "det-fp32" if it.index in exact else "det"
            if self._weak(it, max(it.bgr.shape[:2]) * scales[it.index]):
                self._detect_level(it, scales[it.index], which)
            else:
                self._faint_glyphs(it, scales[it.index], which)
                self._lines_joined(it)
            it.faint = None
            it.boxes = join_columns(join_fragments(it.boxes))
            it.timings["det_scale"] = round(scales[it.index], 4)

    def _faint_glyphs(self, it: Item, scale: float, which: str = "det") -> None:
        """A glyph alone on its line the detector saw only faintly (a closing ``}`` at 13-15
        px on a dark editor: the map peaks at 0.55-0.66 over it and its box scores ~0.3,
        under ``box_thresh``; a page number "- 1 -" at 10 px) is looked at again in a
        window around it enlarged twice, where the detector boxes it surely; a box kept
        must cover the faint region's centre. Only a region at most ``FAINT_WIDE`` times
        wider than high and level with no box (a check box or a bullet before
        a line's text is not looked at: a ticked box read "☑"), on a clean image (pixel
        noise under ``NOISY``) with at most ``FAINT_MOST`` faint regions: noise and textures
        give many."""
        if it.faint is None or it.faint[0] != scale or not 0 < len(it.faint[1]) <= FAINT_MOST:
            return
        spans = [(b.min(0), b.max(0)) for b, _ in it.boxes]
        todo = [f for f in it.faint[1]  # alone on its row, at most FAINT_WIDE wider than high
                if np.ptp(f[:, 0]) <= FAINT_WIDE * np.ptp(f[:, 1]) and
                not any(lo[1] <= f.mean(0)[1] <= hi[1] for lo, hi in spans)]
        if not todo or it.noise() >= denoise.NOISY:
            return
        t0 = time.perf_counter()
        h, w = it.bgr.shape[:2]
        margin, big = 16.0 / scale, min(2.0 * scale, self.params.max_upscale)
        crops, corners = [], []
        for f in todo:
            x0, y0 = np.maximum(np.floor(f.min(0) - margin).astype(int), 0)
            x1, y1 = np.minimum(np.ceil(f.max(0) + margin).astype(int), [w, h])
            crops.append(it.bgr[y0:y1, x0:x1])
            corners.append(np.array([x0, y0], np.float32))
        x, sizes = det_input(crops, [big] * len(crops), self.xp)
        prob = self.engine(which)(x)[:, 0]
        for f, crop, at, size, pm in zip(todo, crops, corners, sizes, prob, strict=True):
            centre = f.mean(0) - at
            for box, score in db_boxes(pm, size, crop.shape[:2], self.params, xp=np):
                if (box.min(0) <= centre).all() and (centre <= box.max(0)).all():
                    it.boxes.append((box + at, score))
                    it.timings["faint"] = it.timings.get("faint", 0) + 1
                    break
        it.timings["det"] = it.timings.get("det", 0.0) + time.perf_counter() - t0

    def _fragile(self, it: Item) -> bool:
        """A small noisy image (at most half the detector's page side, pixel noise at least
        ``NOISY``): where int8's error and the noise add up."""
        return max(it.bgr.shape[:2]) <= self.params.limit / 2 and \
            it.noise() >= denoise.NOISY

    def _first_passes(self, items: list[Item], which: str) -> dict:
        """Scale each item, detect with engine ``which``, and enlarge once where the text
        found is still too small; the scale each item ended with."""
        p = self.params
        scales = {}
        for it in items:
            t0 = time.perf_counter()
            gray = grey_of(it.bgr) if it.bgr.size < 4e6 else it.bgr[..., 1]
            text_h, ink = text_extent(gray)
            scales[it.index] = one_pass_scale(*it.bgr.shape[:2],
                                              choose_scale(*it.bgr.shape[:2], text_h, p),
                                              text_h, self.det_tile_pixels, p)
            it.ink = _aligned(ink, scales[it.index], it.bgr.shape[:2])
            it.timings["scale"] = time.perf_counter() - t0
            it.timings["text_height"] = text_h
        if not items:
            return scales
        self._run_det(items, scales, which)
        again = {}
        for it in items:  # verify: the median line height the detector saw
            s = scales[it.index]
            heights = [min(np.linalg.norm(b[0] - b[3]), np.linalg.norm(b[1] - b[2])) * s
                       for b, _ in it.boxes]
            limit = min(p.max_upscale, np.sqrt(p.max_pixels / it.bgr.shape[0] / it.bgr.shape[1]))
            seen = float(np.median(heights)) if heights else 0.0
            if heights and seen < p.min_text and s * 1.4 < limit:
                again[it.index] = min(limit, s * p.target / max(seen, 4.0))
            elif not heights and s * 1.9 < limit and max(it.bgr.shape[:2]) * s < 2 * p.limit:
                again[it.index] = min(limit, 2 * s)
        if again:
            redo = [it for it in items if it.index in again]
            old = {it.index: it.boxes for it in redo}
            self._run_det(redo, again, which)
            for it in redo:  # keep the first pass when the second finds nothing
                if not it.boxes:
                    it.boxes = old[it.index]
                else:
                    scales[it.index] = again[it.index]
        return scales

    def _weak(self, it: Item, side: float) -> bool:
        """Whether the boxes found look like a hard image's: none or unsure ones (mean DB
        score under 0.7) on an image the detector saw at most ``params.limit`` wide, or
        lines off the axes by more than 3 degrees on one at most half that (a small image).
        Larger pages are read well as they are, and a pass over them costs."""
        if side > self.params.limit:
            return False
        if not it.boxes or _mean_score(it.boxes) < 0.7:
            return True
        if side > self.params.limit / 2:
            return False
        tops = [b[1] - b[0] for b, _ in it.boxes]
        return float(np.median([off_axis(np.degrees(np.arctan2(v[1], v[0]))) for v in tops])) > 3

    def _lines_joined(self, it: Item) -> None:
        """A small image's boxes that each hold several lines running more than
        ``SKEW_JOINED`` degrees off the axes (the ink's own angle,
        :func:`.deskew.skew_angle`), cut into their lines (:func:`.joined.split_joined`).
        A noisy label turned by 25-40 degrees is boxed as one level block, surely (DB score
        0.9), and read as one character ("一" for two lines); :meth:`_weak` does not see
        it, as its box is level and sure."""
        if not it.boxes or max(it.bgr.shape[:2]) > self.params.limit / 2:
            return
        found = skew_angle(grey_of(it.bgr))
        if found is None or off_axis(found[0]) <= SKEW_JOINED:
            return
        cut = split_joined(grey_of(it.bgr), it.boxes, found[0])
        if len(cut) > len(it.boxes):
            it.timings["split"] = len(cut) - len(it.boxes)
            it.boxes = cut

    def _detect_level(self, it: Item, scale: float, which: str = "det") -> None:
        """Second passes for a hard image: when the first found nothing or only unsure
        boxes, on the image smoothed (a Gaussian of 1.2 px takes sensor noise and JPEG
        blocks off small text; measured on the hard set, it finds lines the first pass
        missed); then on the better of the two turned level (:mod:`.deskew`), and on the
        smoothed one turned level when neither found a line and the first turned gives
        none either. The pass
        with the most lines, then the surest, wins; crops are still cut from the original
        pixels."""
        import cv2

        t0 = time.perf_counter()
        best, source, smooth = it.boxes, it.bgr, None
        weak = not best or _mean_score(best) < 0.7
        if weak:  # lines found surely but off the axes need only the level pass
            smooth = cv2.GaussianBlur(it.bgr, (0, 0), 1.2)
            twin = Item(it.index, it.label, smooth)
            self._run_det([twin], {it.index: scale}, which)
            if _better(twin.boxes, best):
                best, source = twin.boxes, smooth
                it.timings["smoothed"] = True
        found = skew_angle(grey_of(it.bgr))
        it.timings["skew"] = None if found is None else round(found[0], 2)
        weak = not best or _mean_score(best) < 0.7
        # a weak image is turned by any angle over 3 degrees (lines near 90 are read better
        # level); a sure one only when its lines are off the axes
        if found is not None and ((abs(found[0]) > 3) if weak else (off_axis(found[0]) > 3)):
            flat, m = level(source, found[0])
            twin = Item(it.index, it.label, flat)
            self._run_det([twin], {it.index: scale}, which)
            if not twin.boxes and not best and smooth is not None and source is not smooth:
                # neither pass found a line: the smoothed pixels turned level (a 13-px
                # italic line turned by -126 degrees under noise 30 and JPEG at 25 is
                # boxed only so; its noisy pixels turned level give nothing at any scale)
                flat, m = level(smooth, found[0])
                twin = Item(it.index, it.label, flat)
                self._run_det([twin], {it.index: scale}, which)
                if twin.boxes:
                    it.timings["smoothed"] = True
            new = boxes_back(twin.boxes, m, it.bgr.shape[:2])
            if _better(new, best):
                best = new
                it.timings["leveled"] = round(found[0], 2)
        if found is not None and best and off_axis(found[0]) > SKEW_JOINED:
            # a box across several turned lines, cut into them
            cut = split_joined(grey_of(it.bgr), best, found[0])
            if len(cut) > len(best):
                it.timings["split"] = len(cut) - len(best)
                best = cut
        it.boxes = best
        it.timings["det"] = it.timings.get("det", 0.0) + time.perf_counter() - t0

    def _run_det(self, items: list[Item], scales: dict, which: str = "det") -> None:
        """Boxes for each item at its scale, in groups of one size (or in tiles); an item
        whose lines run into the edge of its ink box is detected again whole
        (:meth:`_cut_by_ink`); a small ink box where a line-shaped region was dropped is
        read again grown (:meth:`_ink_grown`)."""
        dropped = self._det_once(items, scales, which)
        cut = [it for it in items if self._cut_by_ink(it, scales[it.index])]
        for it in cut:
            it.ink = None
            it.timings["ink_cut"] = True
        if cut:
            self._det_once(cut, scales, which)
        self._ink_grown([it for it in items if it.index in dropped and it.ink is not None],
                        scales, which)

    def _ink_grown(self, items: list[Item], scales: dict, which: str = "det") -> None:
        """Items whose small ink box lost a line-shaped region for its score, read again in
        the box grown by ``INK_MARGIN`` detector pixels (``_grown``); the new boxes are kept
        when they hold more lines (as many, surer, lost a receipt's "10.00" at 0.6)."""
        grown = [(it, _grown(it.ink, scales[it.index], it.bgr.shape[:2])) for it in items]
        grown = [(it, g) for it, g in grown if g is not None]
        if not grown:
            return
        old = {it.index: (it.boxes, it.faint, it.ink) for it, _ in grown}
        for it, g in grown:
            it.ink = g
        self._det_once([it for it, _ in grown], scales, which)
        for it, _ in grown:
            if len(it.boxes) > len(old[it.index][0]):
                it.timings["ink_grown"] = True
            else:
                it.boxes, it.faint, it.ink = old[it.index]

    @staticmethod
    def _cut_by_ink(it: Item, scale: float) -> bool:
        """Whether a box found inside ``it``'s ink box reaches one of its edges that is not
        the image's own: the ink box is grown twice the text height around everything
        darker or lighter than its surroundings, so a line reaching its edge has print
        the grey threshold did not see (yellow on a pink or purple photo: a camera's time
        stamp lost "2026-12"). Within 3 detector pixels of the edge counts."""
        if it.ink is None or not it.boxes:
            return False
        y0, y1, x0, x1 = it.ink
        h, w = it.bgr.shape[:2]
        tol = 3.0 / scale
        for box, _ in it.boxes:
            lo, hi = box.min(0), box.max(0)
            if (x0 > 0 and lo[0] <= x0 + tol) or (x1 < w and hi[0] >= x1 - tol) or \
                    (y0 > 0 and lo[1] <= y0 + tol) or (y1 < h and hi[1] >= y1 - tol):
                return True
        return False

    def _det_once(self, items: list[Item], scales: dict, which: str = "det") -> set:
        """Boxes for each item at its scale; the indices of the items read inside an ink
        box where a line-shaped region was dropped for its score (db_boxes' ``dropped``)."""
        dropped: set = set()
        groups: dict[tuple, list[Item]] = {}
        for it in items:
            s = scales[it.index]
            h, w = _source(it)[0].shape[:2]
            if h * w * s * s > self.det_tile_pixels:  # bounded memory: in tiles
                self._det_tiled(it, s, which)
                continue
            # on a GPU, sizes within 128 px share a batch (padded); on the CPU only equal ones
            step = 32 if self.device == "cpu" else 128
            key = (-(-round(h * s) // step), -(-round(w * s) // step))
            groups.setdefault(key, []).append(it)
        det = self.engine(which)
        xp = self.xp
        for group in groups.values():
            for start in range(0, len(group), self.det_batch):
                part = group[start:start + self.det_batch]
                t0 = time.perf_counter()
                sources = [_source(it) for it in part]
                x, sizes = det_input([src for src, _ in sources],
                                     [scales[it.index] for it in part], xp)
                prob = det(x)[:, 0]
                for it, (src, at), size, pm in zip(part, sources, sizes, prob, strict=True):
                    faint: list = []
                    lost: list | None = [] if it.ink is not None else None
                    it.boxes = [(box + at, score) for box, score in
                                db_boxes(pm, size, src.shape[:2], self.params, xp=np,
                                         faint=faint, dropped=lost)]
                    it.faint = (scales[it.index], [f + at for f in faint])
                    if lost:
                        dropped.add(it.index)
                dt = (time.perf_counter() - t0) / len(part)
                for it in part:
                    it.timings["det"] = it.timings.get("det", 0.0) + dt
        return dropped

    def _det_tiled(self, it: Item, s: float, which: str = "det") -> None:
        """Detection of an image too large for one pass, in overlapping tiles of at most
        ``det_tile_pixels`` detector pixels (:func:`.det.tile_grid`); blank tiles are
        skipped, lines cut by a tile's edge or found twice in an overlap are joined."""
        t0 = time.perf_counter()
        image, at = _source(it)
        h, w = image.shape[:2]
        p = self.params
        if self.det_tile_pixels != p.tile_pixels:
            from dataclasses import replace

            p = replace(p, tile_pixels=self.det_tile_pixels)
        th, tw, overlap = tile_grid(h, w, s, p)
        found = []
        det = self.engine(which)
        for y0, y1 in tile_spans(h, th, overlap):
            for x0, x1 in tile_spans(w, tw, overlap):
                part = image[y0:y1, x0:x1]
                if is_blank(part):
                    continue
                x, sizes = det_input([part], [s], self.xp)
                prob = det(x)[0, 0]
                del x
                for box, score in db_boxes(prob, sizes[0], part.shape[:2], self.params):
                    if no_line_in_tile(part, box, s):
                        continue
                    lo, hi = box.min(0), box.max(0)  # does it touch a cut (not an image edge)?
                    touches = (x0 > 0 and lo[0] <= 2) or (x1 < w and hi[0] >= x1 - x0 - 3) or \
                        (y0 > 0 and lo[1] <= 2) or (y1 < h and hi[1] >= y1 - y0 - 3)
                    band = (x0 > 0 and lo[0] < overlap) or (x1 < w and hi[0] > x1 - x0 - overlap) \
                        or (y0 > 0 and lo[1] < overlap) or (y1 < h and hi[1] > y1 - y0 - overlap)
                    found.append((box + at + np.array([x0, y0], np.float32), score, touches,
                                  touches or band))
                del prob
        it.boxes = merge_tiled(found)
        it.timings["det"] = it.timings.get("det", 0.0) + time.perf_counter() - t0
        it.timings["tiles"] = it.timings.get("tiles", 0) + 1
