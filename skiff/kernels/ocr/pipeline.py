"""The OCR pipeline: load → detect → crop → direction → recognize → lines in reading order.

One :class:`OcrPipeline` holds the three models (loaded on first use) and reads images one
batch at a time: detection runs on images grouped by input size, direction and recognition
on all crops of the batch at once, sorted by width. A loader thread decodes the next images
while the models run, and nothing of an image is kept after its result is handed out, so
memory stays flat over long folders.
"""

from __future__ import annotations

import itertools
import os
import queue
import re
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .det import (
    TILE,
    DetParams,
    choose_scale,
    db_boxes,
    det_input,
    estimate_text_height,
    merge_tiled,
    tile_spans,
)
from .engine import OnnxEngine
from .models import ModelSet, get_model_set, read_alphabet
from .rec import cls_input, crop_box, ctc_decode, is_flipped, plan_batches, rec_input
from .result import OcrResult, TextLine

__all__ = ["OcrPipeline", "load_image", "iter_pages", "ImageError", "resolve_ocr_device",
           "reading_order"]

MAX_PIXELS = 200e6  # refuse to decode more than this (a decompression bomb guard)


class ImageError(ValueError):
    """The input is not an image skiff can read."""


def load_image(item) -> tuple[np.ndarray, str]:
    """``(BGR uint8 (H, W, 3), label)`` from a path, a PIL image or an array.

    Arrays are read as **RGB** (or grey, or RGBA; channels last, or first as torch keeps
    them), like PIL and matplotlib; an OpenCV (``cv2.imread``) array is BGR: pass
    ``img[..., ::-1]``. Floats in [0, 1] are scaled to 0..255, 10- to 16-bit images to 8
    bits. A transparent background is filled with white, or with black when the opaque
    pixels are light (white text on a transparent background stays readable). A photo's
    EXIF orientation is applied. For a file of several pages (PDF, multi-page TIFF) this is
    the first page; :func:`iter_pages` gives all of them. Raises :class:`ImageError` with
    the reason for anything that is not a readable image.
    """
    return next(iter_pages(item))


PDF_DPI = 200  # a 10-pt line is ~28 px high at 200 dpi: well above what the models need
_PAGE_REF = re.compile(r"^(?P<path>.+)#page=(?P<page>[0-9]+)$")


def iter_pages(item, *, pdf_dpi: float = PDF_DPI) -> Iterator[tuple[np.ndarray, str]]:
    """``(BGR uint8 (H, W, 3), label)`` for each page of ``item``.

    A PDF (rendered with pypdfium2 at ``pdf_dpi``) or a multi-page TIFF gives one image per
    page, labelled ``"file.pdf#page=2"`` (pages count from 1); a path written that way reads
    only that page. Other inputs give one image (see :func:`load_image`).
    """
    from PIL import Image

    if isinstance(item, (str, Path)):
        label = os.path.expanduser(str(item))
        path, only = label, None
        match = _PAGE_REF.match(label)
        if match and not Path(label).exists() and Path(match["path"]).exists():
            path, only = match["path"], int(match["page"])
        if not Path(path).exists():
            raise ImageError(f"no such file: {label!r}")
        if Path(path).is_dir():
            raise ImageError(f"{label!r} is a folder, not an image")
        if _is_pdf(path):
            yield from _pdf_pages(path, only, pdf_dpi)
            return
        try:
            with Image.open(path) as im:
                frames = getattr(im, "n_frames", 1)
                if frames > 1 and im.format == "TIFF":
                    pages = [only] if only else range(1, frames + 1)
                else:
                    pages = [None]
                for page in pages:
                    if page is not None:
                        if page > frames:
                            raise ImageError(f"{path!r} has {frames} pages, asked for "
                                             f"page {page}")
                        im.seek(page - 1)
                    if im.width * im.height > MAX_PIXELS:
                        raise ImageError(f"image too large: {im.width}x{im.height} pixels")
                    rgb = _pil_rgb(im, exif=True)
                    name = f"{path}#page={page}" if page is not None else label
                    yield _bgr(rgb), name
        except ImageError:
            raise
        except Exception as exc:
            raise ImageError(f"cannot read {Path(label).name!r} as an image: "
                             f"{type(exc).__name__}: {exc}") from None
    elif isinstance(item, Image.Image):
        yield _bgr(_pil_rgb(item, exif=True)), "<PIL image>"
    elif isinstance(item, np.ndarray) or hasattr(item, "__array__"):
        yield _bgr(_array_rgb(np.asarray(item))), "<array>"
    else:
        raise ImageError(f"expected a path, PIL image or array, got {type(item).__name__}")


def _bgr(rgb: np.ndarray) -> np.ndarray:
    if rgb.size == 0:
        raise ImageError(f"empty image (shape {rgb.shape})")
    return np.ascontiguousarray(rgb[..., ::-1])


def _is_pdf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(1024).lstrip().startswith(b"%PDF")
    except OSError:
        return False


PDFIUM_LOCK = threading.Lock()  # pdfium is not thread-safe, even across documents


def _pdf_pages(path: str, only: int | None, dpi: float) -> Iterator[tuple[np.ndarray, str]]:
    try:
        import pypdfium2 as pdfium
    except ImportError:  # pragma: no cover - a core dependency
        raise ImageError("reading PDF needs pypdfium2: pip install pypdfium2") from None
    with PDFIUM_LOCK:
        try:
            doc = pdfium.PdfDocument(path)
            n = len(doc)
        except Exception as exc:
            raise ImageError(f"cannot read {Path(path).name!r} as a PDF: {exc}") from None
    try:
        if only is not None and not 1 <= only <= n:
            raise ImageError(f"{path!r} has {n} pages, asked for page {only}")
        for page_no in [only] if only else range(1, n + 1):
            with PDFIUM_LOCK:  # held while rendering, never across a yield
                page = doc[page_no - 1]
                try:
                    w, h = page.get_size()  # points (1/72 inch)
                    scale = dpi / 72.0
                    if w * h * scale * scale > MAX_PIXELS:
                        scale = float(np.sqrt(MAX_PIXELS / (w * h)))
                    bitmap = page.render(scale=scale, fill_color=(255, 255, 255, 255))
                    rgb = np.array(bitmap.to_pil().convert("RGB"))
                finally:
                    page.close()
            yield _bgr(rgb), f"{path}#page={page_no}"
    finally:
        with PDFIUM_LOCK:
            doc.close()


def _pil_rgb(im, exif: bool = False) -> np.ndarray:
    from PIL import ImageOps

    if exif:
        im = ImageOps.exif_transpose(im)
    if im.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        return _array_rgb(np.asarray(im))  # 16-bit / 32-bit grey: scaled, not clipped
    if im.mode in ("RGBA", "LA", "PA", "La", "RGBa") or (
            im.mode == "P" and "transparency" in im.info):
        return _array_rgb(np.asarray(im.convert("RGBA")))
    return np.asarray(im.convert("RGB"))


def _array_rgb(a: np.ndarray) -> np.ndarray:
    if a.ndim == 3 and a.shape[0] in (1, 3, 4) and a.shape[2] not in (1, 2, 3, 4):
        a = np.moveaxis(a, 0, 2)  # channels first (C, H, W), as torch keeps images
    if a.ndim == 3 and a.shape[2] == 2:  # grey + alpha
        a = np.concatenate([np.repeat(a[..., :1], 3, axis=2), a[..., 1:]], axis=2)
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3 or a.shape[2] not in (1, 3, 4):
        raise ImageError(f"expected an (H, W), (H, W, 3) or (H, W, 4) array, got {a.shape}")
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    if a.dtype != np.uint8:
        a = a.astype(np.float32) if a.dtype == bool else a
        if a.dtype.kind == "f":
            a = np.nan_to_num(a.astype(np.float32))
            top = float(a.max()) if a.size else 0.0
            a = a * 255.0 if top <= 1.0 else a
        elif a.size and a.max() > 255:  # 10-, 12-, 16-bit... integers: scaled by their depth
            depth = 2.0 ** np.ceil(np.log2(float(a.max()) + 1)) - 1
            a = a.astype(np.float32) * (255.0 / depth)
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.shape[2] == 4:
        alpha = a[..., 3:4].astype(np.float32) / 255.0
        rgb = a[..., :3].astype(np.float32)
        opaque = alpha[..., 0] > 0.5
        # text drawn light on a transparent background would vanish on white: use black then
        luma = rgb[opaque] @ np.array([0.299, 0.587, 0.114], np.float32)  # ITU-R 601
        light = opaque.any() and not opaque.all() and float(luma.mean()) > 140
        back = 0.0 if light else 255.0
        a = (rgb * alpha + back * (1 - alpha) + 0.5).astype(np.uint8)
    return a


def resolve_ocr_device(device: str | None) -> tuple[str, str]:
    """``(device, why)``: ``auto`` is the first GPU when onnxruntime has CUDA, else the CPU.
    An explicit choice is returned as given (the engine refuses it if it cannot run)."""
    text = (device or "auto").strip().lower()
    if text in ("gpu", "cuda"):
        text = "cuda:0"
    if text != "auto":
        return text, "as asked"
    from skiff.kernels.backend import gpu_available

    try:
        import onnxruntime as ort

        has_cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    except ImportError:
        has_cuda = False
    if gpu_available() and has_cuda:
        return "cuda:0", "auto: a GPU and onnxruntime's CUDA provider are present"
    why = "no GPU" if not gpu_available() else "onnxruntime has no CUDA provider"
    return "cpu", f"auto: {why}, running on the CPU"


def reading_order(boxes: list[np.ndarray], flipped_page: bool = False,
                  shape: tuple[int, int] | None = None, columns: bool = True) -> list[int]:
    """Indices of ``boxes`` in reading order: rows top to bottom, left to right in a row, and
    a run of rows laid out in columns of prose read column by column.

    The page's dominant skew (median angle of the wide boxes' top edges) is undone first;
    an upside-down page is read from its (image) bottom right. With ``columns``, rows that
    share a vertical gutter (a gap at least one line high that no box of those rows
    crosses) form a block; when each side of the gutter holds at least two lines of prose
    (lines at least six times as wide as high), the block is read one column after the
    other. Tables of short cells and receipts (names left, prices right) stay row by row.
    """
    if not boxes:
        return []
    pts = np.stack(boxes).astype(np.float64)  # (N, 4, 2)
    if flipped_page and shape is not None:
        pts = np.stack([shape[1] - 1 - pts[..., 0], shape[0] - 1 - pts[..., 1]], -1)
        pts = pts[:, [2, 3, 0, 1]]
    top = pts[:, 1] - pts[:, 0]
    widths = np.hypot(*top.T)
    heights = np.hypot(*(pts[:, 3] - pts[:, 0]).T)
    wide = widths > 2 * heights
    angle = float(np.median(np.arctan2(top[wide, 1], top[wide, 0]))) if wide.any() else 0.0
    c, s = np.cos(-angle), np.sin(-angle)
    xs = c * pts[..., 0] - s * pts[..., 1]  # (N, 4): corners with the skew undone
    ys = s * pts[..., 0] + c * pts[..., 1]
    x, y = xs.mean(1), ys.mean(1)
    rows = _rows(list(np.argsort(y, kind="stable")), y, heights)
    rows = [sorted(row, key=lambda j: x[j]) for row in rows]
    if not columns or len(rows) < 4:
        return [int(i) for row in rows for i in row]
    x0, x1 = xs.min(1), xs.max(1)
    gap = float(np.median(heights))
    order: list[int] = []
    k = 0
    while k < len(rows):
        end = k + 1  # grow a block of rows while they keep a common gutter
        while end < len(rows) and _gutters([i for r in rows[k:end + 1] for i in r], x0, x1, gap):
            end += 1
        block = [i for r in rows[k:end] for i in r]
        cols = _columns(block, x0, x1, gap, widths, heights) if end - k >= 3 else None
        if cols is None:
            order.extend(i for r in rows[k:end] for i in r)
        else:
            for col in cols:
                sub = _rows(sorted(col, key=lambda j: y[j]), y, heights)
                order.extend(i for r in sub for i in sorted(r, key=lambda j: x[j]))
        k = end
    return [int(i) for i in order]


def _rows(order: list, y: np.ndarray, heights: np.ndarray) -> list[list[int]]:
    """Group indices (sorted by ``y``) into rows whose centres are within half a line."""
    rows: list[list[int]] = []
    for i in order:
        if rows:
            row = rows[-1]
            ref = float(np.mean([y[j] for j in row]))
            if abs(y[i] - ref) < 0.5 * min(heights[i], min(heights[j] for j in row)):
                row.append(i)
                continue
        rows.append([i])
    return rows


def _gutters(idx: list, x0: np.ndarray, x1: np.ndarray, gap: float) -> list[float]:
    """x positions of the gaps (at least ``gap`` wide) between the extents of ``idx``."""
    spans = sorted((x0[i], x1[i]) for i in idx)
    cuts, reach = [], spans[0][1]
    for lo, hi in spans[1:]:
        if lo - reach >= gap:
            cuts.append(0.5 * (lo + reach))
        reach = max(reach, hi)
    return cuts


def _columns(block, x0, x1, gap, widths, heights) -> list[list[int]] | None:
    """The block's columns (left to right) when it is laid out as columns of prose."""
    cuts = _gutters(block, x0, x1, gap)
    if not cuts:
        return None
    edges = [-np.inf, *cuts, np.inf]
    cols = [[i for i in block if lo < 0.5 * (x0[i] + x1[i]) < hi]
            for lo, hi in itertools.pairwise(edges)]
    for col in cols:
        if len(col) < 2 or np.median([widths[i] / max(heights[i], 1.0) for i in col]) < 6:
            return None
    return cols


@dataclass
class _Item:
    index: int
    label: str
    bgr: np.ndarray | None = None
    error: str | None = None
    load_s: float = 0.0
    boxes: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)


class OcrPipeline:
    """Read text from images with one model set on one device.

    Parameters
    ----------
    model : str or ModelSet
        A registered set (``"ch"``, PP-OCRv6, default; ``"ch-v4"``, lite) or a ModelSet.
    device : str
        ``auto``, ``cpu`` or ``cuda:N``; :attr:`device` says which ran.
    batch_size : int
        Images read together (detection grouped by size, recognition over all their crops).
    det_model, rec_model, dict : str, optional
        A user's own ONNX files (and character list) in place of the set's.
    use_cls : bool
        Run the 0/180 degree direction model on each crop.
    min_score : float
        Lines whose recognition score is lower are dropped.
    pdf_dpi : float
        Resolution PDF pages are rendered at (200: a 10-pt line is ~28 px high).

    Examples
    --------
    >>> pipe = OcrPipeline(device="cpu")          # doctest: +SKIP
    >>> pipe("receipt.png").text                  # doctest: +SKIP
    'Total amount: $1,284.50'
    """

    def __init__(self, model: str | ModelSet = "ch", *, device: str = "auto",
                 batch_size: int = 8, threads: int | None = None, det_model=None,
                 rec_model=None, dict=None, use_cls: bool = True, min_score: float = 0.5,
                 params: DetParams | None = None, rec_batch: int | None = None,
                 det_batch: int | None = None, pdf_dpi: float = PDF_DPI):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not 0 <= min_score <= 1:
            raise ValueError(f"min_score must be in [0, 1], got {min_score!r}")
        models = model if isinstance(model, ModelSet) else get_model_set(model)
        if det_model or rec_model or dict:
            models = models.custom(det=det_model, rec=rec_model, dict=dict)
        self.models = models
        self.device, self.device_reason = resolve_ocr_device(device)
        self.batch_size = batch_size
        if not 36 <= pdf_dpi <= 600:
            raise ValueError(f"pdf_dpi must be in [36, 600], got {pdf_dpi!r}")
        self.pdf_dpi = float(pdf_dpi)
        self.threads = threads
        self.use_cls = use_cls
        self.min_score = min_score
        self.params = params or DetParams()
        # measured on onnxruntime's CPU provider: batching does not pay there (a 4-image
        # detection batch costs 1.7x per pixel, rec batches past 8 lose cache), it does on GPUs
        on_cpu = self.device == "cpu"
        self.rec_batch = rec_batch or (8 if on_cpu else 64)
        self.det_batch = det_batch or (1 if on_cpu else batch_size)
        self._engines: dict[str, OnnxEngine] = {}
        self._alphabet: list[str] | None = None
        self._lock = threading.Lock()

    # models, loaded on first use ---------------------------------------------------------
    def engine(self, which: str) -> OnnxEngine:
        with self._lock:
            if which not in self._engines:
                self._engines[which] = OnnxEngine(self.models.path(which), self.device,
                                                  threads=self.threads)
            return self._engines[which]

    @property
    def alphabet(self) -> list[str]:
        if self._alphabet is None:
            self._alphabet = read_alphabet(self.engine("rec").session, self.models.dict)
        return self._alphabet

    @property
    def xp(self):
        if self.device.startswith("cuda"):
            from skiff.kernels.backend import cupy

            return cupy() or np
        return np

    def describe(self) -> dict:
        return {"device": self.device, "why": self.device_reason, **self.models.describe(),
                "providers": {k: e.provider for k, e in self._engines.items()}}

    # the sentence ------------------------------------------------------------------------
    def __call__(self, image) -> OcrResult:
        """Read one image (path, PIL image or array)."""
        return next(iter(self.run([image], keep_pixels=True)))

    def run(self, images: Iterable, *, reporter=None, total: int | None = None,
            keep_pixels: bool = False) -> Iterator[OcrResult]:
        """Read many images, yielding one :class:`OcrResult` each, in input order.

        A loader thread decodes ahead (two batches at most); an image that cannot be read
        gives a result with ``error`` set and the rest go on.
        """
        loaded: queue.Queue = queue.Queue(maxsize=2 * self.batch_size)
        stop = threading.Event()

        def loader():
            try:
                k = 0
                for n, item in enumerate(images):
                    for loaded_item in self._load(k, n, item):  # a PDF gives one per page
                        if stop.is_set():
                            return
                        loaded.put(loaded_item)
                        k += 1
            finally:
                loaded.put(None)

        thread = threading.Thread(target=loader, name="skiff-ocr-loader", daemon=True)
        thread.start()

        def batches():
            batch: list[_Item] = []
            while True:
                item = loaded.get()
                if item is not None:
                    batch.append(item)
                if batch and (item is None or len(batch) >= self.batch_size):
                    yield batch
                    batch = []
                if item is None:
                    return

        # detection of batch k+1 runs on a worker thread while batch k is cropped, oriented
        # and recognized here (onnxruntime and OpenCV release the GIL)
        pool = ThreadPoolExecutor(1, thread_name_prefix="skiff-ocr-det")
        done = 0
        pending = None
        try:
            for batch in itertools.chain(batches(), [None]):
                if reporter is not None:
                    reporter.check()
                ahead = pool.submit(self._detect_batch, batch) if batch is not None else None
                if pending is not None:
                    previous, future = pending
                    for result in self._finish_batch(previous, *future.result(),
                                                     keep_pixels=keep_pixels):
                        done += 1
                        if reporter is not None:
                            reporter.progress(done, total, unit="image")
                        yield result
                pending = (batch, ahead) if batch is not None else None
        finally:
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            while thread.is_alive():  # unblock the loader if it waits on a full queue
                try:
                    loaded.get(timeout=0.05)
                except queue.Empty:
                    pass

    def _load(self, index: int, number: int, item) -> Iterator[_Item]:
        """The pages of input ``number`` as items numbered from ``index``; an input that
        cannot be read (or a page of it) gives an item with ``error`` set."""
        t0 = time.perf_counter()
        pages = iter_pages(item, pdf_dpi=self.pdf_dpi)
        k = index
        while True:
            try:
                bgr, label = next(pages)
            except StopIteration:
                return
            except ImageError as exc:
                label = str(item) if isinstance(item, (str, Path)) else f"<input {number}>"
                if k > index and isinstance(item, (str, Path)):
                    label = f"{item}#page={k - index + 1}"
                yield _Item(k, label, error=str(exc), load_s=time.perf_counter() - t0)
                return
            if label in ("<array>", "<PIL image>"):
                label = f"<{label[1:-1]} {number}>"
            yield _Item(k, label, bgr, load_s=time.perf_counter() - t0)
            k += 1
            t0 = time.perf_counter()

    def read_batch(self, items: list[_Item], *, keep_pixels: bool = False) -> list[OcrResult]:
        """Detect, crop, orient and recognize a batch of loaded images."""
        return self._finish_batch(items, *self._detect_batch(items), keep_pixels=keep_pixels)

    def _detect_batch(self, items: list[_Item]) -> tuple[list[_Item], float]:
        t0 = time.perf_counter()
        good = [it for it in items if it.error is None and min(it.bgr.shape[:2]) >= 4]
        self.detect(good)
        return good, time.perf_counter() - t0

    def _finish_batch(self, items, good, det_s, *, keep_pixels=False) -> list[OcrResult]:
        t0 = time.perf_counter()
        crops, owners = self.crop(good)
        flipped = self.orient(crops, owners, good)
        texts = self.recognize(crops, owners, good)
        batch_s = det_s + time.perf_counter() - t0
        pos_of = {id(it): pos for pos, it in enumerate(good)}
        mine: dict[int, list[int]] = {}
        for k, (pos, _) in enumerate(owners):
            mine.setdefault(pos, []).append(k)
        share = batch_s / max(1, len(items))
        return [self._assemble(it, mine.get(pos_of.get(id(it), -1), []), owners, crops, texts,
                               flipped, share, keep_pixels) for it in items]

    # stages ------------------------------------------------------------------------------
    def detect(self, items: list[_Item]) -> None:
        """Boxes for each item: pick its scale, run the detector on same-size groups, and
        enlarge once more where the text found is still too small to read well."""
        p = self.params
        scales = {}
        for it in items:
            t0 = time.perf_counter()
            gray = it.bgr.mean(axis=2).astype(np.uint8) if it.bgr.size < 4e6 else \
                it.bgr[..., 1]
            text_h = estimate_text_height(gray)
            scales[it.index] = choose_scale(*it.bgr.shape[:2], text_h, p)
            it.timings["scale"] = time.perf_counter() - t0
            it.timings["text_height"] = text_h
        self._run_det(items, scales)
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
            self._run_det(redo, again)
            for it in redo:  # keep the first pass when the second finds nothing
                if not it.boxes:
                    it.boxes = old[it.index]
                else:
                    scales[it.index] = again[it.index]
        for it in items:
            it.timings["det_scale"] = round(scales[it.index], 4)

    def _run_det(self, items: list[_Item], scales: dict) -> None:
        groups: dict[tuple, list[_Item]] = {}
        for it in items:
            s = scales[it.index]
            h, w = it.bgr.shape[:2]
            if max(h, w) * s > TILE:
                self._det_tiled(it, s)
                continue
            # on a GPU, sizes within 128 px share a batch (padded); on the CPU only equal ones
            step = 32 if self.device == "cpu" else 128
            key = (-(-round(h * s) // step), -(-round(w * s) // step))
            groups.setdefault(key, []).append(it)
        det = self.engine("det")
        xp = self.xp
        for group in groups.values():
            for start in range(0, len(group), self.det_batch):
                part = group[start:start + self.det_batch]
                t0 = time.perf_counter()
                x, sizes = det_input([it.bgr for it in part], [scales[it.index] for it in part],
                                     xp)
                prob = det(x)[:, 0]
                for it, size, pm in zip(part, sizes, prob, strict=True):
                    it.boxes = db_boxes(pm, size, it.bgr.shape[:2], self.params, xp=np)
                dt = (time.perf_counter() - t0) / len(part)
                for it in part:
                    it.timings["det"] = it.timings.get("det", 0.0) + dt

    def _det_tiled(self, it: _Item, s: float) -> None:
        """Detection of an image too large for one pass, in overlapping tiles."""
        t0 = time.perf_counter()
        h, w = it.bgr.shape[:2]
        tile, overlap = int(TILE / s), int(256 / s)
        found = []
        for y0, y1 in tile_spans(h, tile, overlap):
            for x0, x1 in tile_spans(w, tile, overlap):
                part = it.bgr[y0:y1, x0:x1]
                x, sizes = det_input([part], [s], self.xp)
                prob = self.engine("det")(x)[0, 0]
                for box, score in db_boxes(prob, sizes[0], part.shape[:2], self.params):
                    lo, hi = box.min(0), box.max(0)  # does it touch a cut (not an image edge)?
                    touches = (x0 > 0 and lo[0] <= 2) or (x1 < w and hi[0] >= x1 - x0 - 3) or \
                        (y0 > 0 and lo[1] <= 2) or (y1 < h and hi[1] >= y1 - y0 - 3)
                    found.append((box + np.array([x0, y0], np.float32), score, touches))
        it.boxes = merge_tiled(found)
        it.timings["det"] = it.timings.get("det", 0.0) + time.perf_counter() - t0

    def crop(self, items: list[_Item]) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
        """Upright crops of every box, with ``(item position, box index)`` owners."""
        crops, owners = [], []
        for pos, it in enumerate(items):
            for b, (box, _) in enumerate(it.boxes):
                crops.append(crop_box(it.bgr, box))
                owners.append((pos, b))
        return crops, owners

    def orient(self, crops, owners, items) -> np.ndarray:
        """Turn crops that are upside down; returns the flags.

        When at least three crops of a page are sure (p > 0.9) and at least 80% of their
        width agrees, every crop of the page follows that majority (a page is seldom printed
        both ways; the model now and then is "sure" of a wrong turn). Otherwise a sure crop
        follows the model and an unsure one its page's majority (by width) of sure crops.
        """
        flags = np.zeros(len(crops), bool)
        if not self.use_cls or not crops or self.models.cls is None:
            return flags
        cls = self.engine("cls")
        t0 = time.perf_counter()
        # the model sees 48 x 192: a long line squeezed into it is often misread (a 10-pt
        # PDF page came out upside down), so long crops are seen as up to three windows of
        # that shape and their probabilities averaged
        views, whose = [], []
        for k, c in enumerate(crops):
            h, w = c.shape[:2]
            win = 4 * max(h, 1)
            starts = [0] if w <= 1.25 * win else \
                np.linspace(0, w - win, min(3, -(-w // win))).astype(int).tolist()
            for s in starts:
                views.append(c if len(starts) == 1 else c[:, s:s + win])
                whose.append(k)
        seen = np.zeros((len(views), 2), np.float32)
        for start in range(0, len(views), 64):
            part = views[start:start + 64]
            seen[start:start + len(part)] = cls(cls_input(part, self.xp))
        probs = np.zeros((len(crops), 2), np.float32)
        np.add.at(probs, np.array(whose), seen)
        probs /= np.bincount(whose, minlength=len(crops))[:, None]
        sure_up, sure_down = is_flipped(probs[:, ::-1]), is_flipped(probs)
        widths = np.array([c.shape[1] for c in crops], np.float64)
        pos = np.array([p for p, _ in owners])
        for page in np.unique(pos):
            mine = pos == page
            w_down, w_up = widths[mine & sure_down].sum(), widths[mine & sure_up].sum()
            sure = int((mine & (sure_down | sure_up)).sum())
            if sure >= 3 and max(w_down, w_up) >= 4 * min(w_down, w_up):
                # a page the model reads one way (>= 80% of the sure width): a lone crop it
                # is "sure" goes the other way is a misreading (seen on 6-pt PDF lines)
                flags[mine] = w_down > w_up
            else:
                flags[mine] = np.where(sure_down[mine] | sure_up[mine], sure_down[mine],
                                       w_down > w_up)
        for k in np.flatnonzero(flags):
            crops[k] = np.ascontiguousarray(crops[k][::-1, ::-1])
        self._share(items, owners, "cls", time.perf_counter() - t0)
        return flags

    def recognize(self, crops, owners, items) -> list[tuple[str, float]]:
        """Text and score of every crop, in batches of similar width."""
        out: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        if not crops:
            return out
        rec = self.engine("rec")
        height = self.models.rec_height
        t0 = time.perf_counter()
        widths = [int(np.ceil(height * c.shape[1] / max(1, c.shape[0]))) for c in crops]
        bucket = self.device != "cpu"  # shapes that repeat matter to cuDNN, not to the CPU
        for idx in plan_batches(widths, self.rec_batch, bucket=bucket):
            probs = rec(rec_input([crops[i] for i in idx], height, self.xp, bucket=bucket))
            for i, decoded in zip(idx, ctc_decode(probs, self.alphabet, np), strict=True):
                out[i] = decoded
        self._share(items, owners, "rec", time.perf_counter() - t0)
        return out

    @staticmethod
    def _share(items, owners, stage, seconds):
        if not owners:
            return
        for pos, _ in owners:
            items[pos].timings[stage] = items[pos].timings.get(stage, 0.0) + seconds / len(owners)

    def _assemble(self, it: _Item, mine, owners, crops, texts, flipped, share, keep_pixels):
        """The result of one image from its crops (``mine``: their indices)."""
        timings = {k: round(v, 5) for k, v in it.timings.items() if v is not None}
        timings["load"] = round(it.load_s, 5)
        if it.error is not None:
            return OcrResult(it.label, error=it.error, timings=timings, elapsed_s=it.load_s,
                             device=self.device)
        lines, boxes, flips, widths = [], [], [], []
        for k in mine:
            text, score = texts[k]
            if not text or score < self.min_score:
                continue
            box = it.boxes[owners[k][1]][0]
            lines.append(TextLine(box.round(1).tolist(), text, score))
            boxes.append(box)
            flips.append(flipped[k])
            widths.append(crops[k].shape[1])
        flipped_page = bool(flips) and float(np.dot(flips, widths)) > 0.5 * sum(widths)
        order = reading_order(boxes, flipped_page, it.bgr.shape[:2])
        lines = [lines[i] for i in order]
        rgb = it.bgr[..., ::-1] if keep_pixels else None
        return OcrResult(it.label, lines, "\n".join(line.text for line in lines), None,
                         timings, elapsed_s=it.load_s + share, size=tuple(it.bgr.shape[:2]),
                         device=self.device, pixels=rgb)
