"""The OCR pipeline: load → detect → crop → direction → recognize → lines in reading order.

One :class:`OcrPipeline` holds the three models (loaded on first use) and reads images one
batch at a time: detection runs on images grouped by input size, direction and recognition
on all crops of the batch at once, sorted by width. A loader thread decodes the next images
while the models run, and nothing of an image is kept after its result is handed out, so
memory stays flat over long folders.

Decoding the inputs lives in :mod:`.images`, the reading order of a page's lines in
:mod:`.layout`, the device choice in :mod:`.engine`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE

from .deskew import boxes_back, level, off_axis, skew_angle
from .det import (
    STRIDE,
    DetParams,
    choose_scale,
    db_boxes,
    det_input,
    is_blank,
    join_fragments,
    merge_tiled,
    no_line_in_tile,
    text_extent,
    tile_grid,
    tile_spans,
)
from .engine import (
    MemoryGate,
    OnnxEngine,
    default_threads,
    give_back_memory,
    resolve_ocr_device,
)
from .images import PDF_DPI, ImageError, PixelBudget, grey_of, iter_pages
from .layout import monospace_text, reading_rows
from .models import ModelSet, get_model_set, read_alphabet
from .quantize import PRECISIONS, QuantizeError, int8_detector
from .rec import (
    choose_turns,
    cls_input,
    colour_grey,
    crop_box,
    ctc_decode,
    decimal_point,
    is_flipped,
    is_shape_line,
    is_speck,
    plan_batches,
    reading_angle,
    rec_input,
)
from .result import OcrResult, TextLine
from .spacing import cell_spaces, letter_spaces

__all__ = ["OcrPipeline"]

_FLUSH = object()  # the loader waits on the pixel budget: finish what is held

# working memory of a call on onnxruntime's CPU provider (no arena), bytes per input element,
# measured as the peak RSS over the call: detection ~220 MiB per million pixels, recognition
# ~45 KiB per column of a 48-px line, direction ~1.5 MiB per 48 x 192 view
ENGINE_BYTES = {"det": 77.0, "rec": 320.0, "cls": 55.0}
# a one-character line read under this from a box at least PICTURE_SIDE times the page's text
# height (short side), on a page with other lines, is a picture the detector boxed whole
PICTURE_SCORE = 0.8
PICTURE_SIDE = 8
# detection reads only the ink box of a page (det.text_extent) when that saves at least this
# many detector pixels: on small images the box saves little, and the detector, which pools
# over the whole input, read 3 of 18 small degraded images worse inside it
INK_SAVES = 1.0e5
# the engines' working memory held at once by default (MiB): a detection tile of 0.5 MP
# (DetParams.tile_pixels) and a recognition batch of about 1000 columns
WORK_MB = 160.0


def _say(line: str) -> None:
    """A one-off notice (a model being built, a fallback): to stderr, which a job's log
    keeps and a notebook shows."""
    import sys

    print(line, file=sys.stderr, flush=True)


@dataclass
class _Item:
    index: int
    label: str
    bgr: np.ndarray | None = None
    error: str | None = None
    load_s: float = 0.0
    boxes: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    ink: tuple | None = None  # (y0, y1, x0, x1): detection reads only inside this box


# a crop's direction is checked by reading it both ways unless its page settles it, or
# the direction model is this sure it is upright and the recognizer reads it at least this
# well (on clean pages of one to three lines, checking every crop cost 45% more CPU time;
# the seven-segment "4185.94" the direction model turned read "h6581 h" at 0.91). 0.9 and
# 0.98 read the hard tiers (two seeds) and the clean set the same; 0.9 reads 12% fewer
# columns twice on the mixed set (0.8 changed two degraded lines)
SURE_CLS, SURE_REC = 0.9, 0.97
# how a crop's direction was settled (:meth:`OcrPipeline.directions`): not at all, by the
# direction model (upright and sure: a poor reading is still checked), by its page
UNSETTLED, BY_MODEL, BY_PAGE = 0, 1, 2
# the direction model reads a page's crops widest first, in steps of PAGE_STEP crops, and
# stops once PAGE_SURE of them are sure and none is sure of the other way: the page then
# settles the rest, as it would have (a page of 40 lines: 8-16 crops seen, not 40)
PAGE_STEP, PAGE_SURE = 8, 8
# a crop read both ways as a number leans to the image's own way up by this much score
# (rec.choose_turns; words and CJK do not lean: four degraded seeds +0.0 / +2.1 / +1.4 /
# +0.5 points, the segment tier the same)
UPRIGHT_PRIOR = 0.1
# a small image this noisy (estimated sigma of its pixel noise, after JPEG) whose reading is
# unsure is read again denoised (_read_denoised); rendered and scanned pages measure 0-1.5
NOISY = 2.5
# how much of its difference from a wider blur a smoothed noisy image gets back
# (denoised_twins): 0.8 and 1.5 read seven degraded seeds +0.8 and +1.1 points
SHARPEN = 1.5
# a set with a fallback recognizer (ch-tiny) reads again with it the lines its own reads under
# this score: on the mixed set, the hard set and 30 dense pages, 0.9 sent 21% of lines back
# and read the noisy pages 0.940 -> 0.986, the degraded tier 0.72 -> 0.85 (ch: 0.99 / 0.87),
# dense pages the same; 0.95 sent 28% for less than half a point more
FALLBACK_SCORE = 0.9


def noise_sigma(bgr: np.ndarray) -> float:
    """A robust estimate of the pixel noise of an image (grey levels, sigma): the median
    absolute deviation of its difference from a 3 x 3 median filter, scaled to a Gaussian's
    sigma. Text edges are a small part of the pixels, so flat paper sets the figure."""
    import cv2

    grey = grey_of(bgr)
    r = grey.astype(np.float32) - cv2.medianBlur(grey, 3).astype(np.float32)
    return 1.4826 * float(np.median(np.abs(r - np.median(r))))


def denoised_twins(bgr: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The three denoised copies a small noisy image is read from again
    (:meth:`OcrPipeline._read_denoised`): smoothed by a Gaussian of 1 px, by a bilateral
    filter (edges kept), and the smoothed copy sharpened again (unsharp mask: 1.5 times its
    difference from a 2-px Gaussian of itself), for print that was blurred before the noise
    came (a photo's lens, a resampled scan). The third read the degraded tier +1.0 points
    over the four seeds it was chosen on and +1.2 over three it was not (0.831 -> 0.843);
    the clean, photo, segment and vertical tiers, the probes and text-free images the
    same."""
    import cv2

    smooth = cv2.GaussianBlur(bgr, (0, 0), 1.0)
    wide = cv2.GaussianBlur(smooth, (0, 0), 2.0)
    sharp = cv2.addWeighted(smooth, 1.0 + SHARPEN, wide, -SHARPEN, 0)  # saturates to uint8
    return [("gauss", smooth), ("bilateral", cv2.bilateralFilter(bgr, 7, 50, 5)),
            ("sharpened", sharp)]


def _source(it: _Item) -> tuple[np.ndarray, np.ndarray]:
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


def _mean_score(boxes) -> float:
    return float(np.mean([score for _, score in boxes])) if boxes else 0.0


def _better(new, old) -> bool:
    """Whether detection ``new`` beats ``old``: more lines, or as many, more surely."""
    return len(new) > len(old) or (bool(new) and len(new) == len(old) and
                                   _mean_score(new) > _mean_score(old))


class OcrPipeline:
    """Read text from images with one model set on one device.

    Parameters
    ----------
    model : str or ModelSet
        A registered set (``"ch"``, PP-OCRv6, default; ``"ch-v4"``, lite; ``"ch-tiny"``,
        PP-OCRv6 tiny, fast on clean print) or a ModelSet.
    device : str
        ``auto``, ``cpu`` or ``cuda:N``; :attr:`device` says which ran.
    batch_size : int
        Images read together (detection grouped by size, recognition over all their crops);
        on the CPU, where neither model batches across images, at most 4 at a time.
    det_model, rec_model, dict : str, optional
        A user's own ONNX files (and character list) in place of the set's.
    use_cls : bool
        Run the 0/180 degree direction model on each crop.
    min_score : float
        Lines whose recognition score is lower are dropped.
    pdf_dpi : float
        Resolution PDF pages are rendered at (200: a 10-pt line is ~28 px high).
    work_mb : float
        The models' working memory held at once on the CPU (estimated per call): detection
        of the next batch and recognition of this one overlap while they fit in it.
    max_image_mb : float
        Decoded pixels one run holds at once (loaded ahead, in detection, in recognition);
        the loader waits for room before decoding the next image, and an image larger than
        this alone is refused (its result carries the error).
    precision : str
        ``auto`` (default): on the CPU a shipped detector whose int8 twin was measured
        (``ModelSet.det_int8``: the default set's) runs as that twin (:mod:`.quantize`,
        built once per machine), everything else in float32; ``int8``: any detector so, on
        the CPU only; ``fp32``: the files as they are.

    Examples
    --------
    >>> pipe = OcrPipeline(device="cpu")          # doctest: +SKIP
    >>> pipe("receipt.png").text                  # doctest: +SKIP
    'Total amount: $1,284.50'
    """

    def __init__(self, model: str | ModelSet = "ch", *, device: str = DEFAULT_DEVICE,
                 batch_size: int = 8, threads: int | None = None, det_model=None,
                 rec_model=None, dict=None, use_cls: bool = True, min_score: float = 0.5,
                 params: DetParams | None = None, rec_batch: int | None = None,
                 det_batch: int | None = None, pdf_dpi: float = PDF_DPI,
                 max_image_mb: float = 1024, work_mb: float = WORK_MB,
                 precision: str = "auto"):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not 0 <= min_score <= 1:
            raise ValueError(f"min_score must be in [0, 1], got {min_score!r}")
        models = model if isinstance(model, ModelSet) else get_model_set(model)
        if det_model or rec_model or dict:
            models = models.custom(det=det_model, rec=rec_model, dict=dict)
        models.check_installed()
        self.models = models
        self.device, self.device_reason = resolve_ocr_device(device)
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got "
                             f"{precision!r}")
        if precision == "int8" and self.device != "cpu":
            raise ValueError(f"precision 'int8' runs on the CPU only; {self.device!r} runs "
                             "the float32 models (use precision='auto')")
        self.precision = precision
        self.batch_size = batch_size
        if not 36 <= pdf_dpi <= 600:
            raise ValueError(f"pdf_dpi must be in [36, 600], got {pdf_dpi!r}")
        self.pdf_dpi = float(pdf_dpi)
        if not max_image_mb > 0:
            raise ValueError(f"max_image_mb must be positive, got {max_image_mb!r}")
        self.max_image_mb = float(max_image_mb)
        self.threads = threads
        self.use_cls = use_cls
        self.min_score = min_score
        self.params = params or DetParams()
        # measured on onnxruntime's CPU provider: batching does not pay there (a 4-image
        # detection batch costs 1.7x per pixel, rec batches past 8 lose cache), it does on GPUs
        on_cpu = self.device == "cpu"
        # the recognizer's memory is about 45 KiB per input column on the CPU (the direction
        # model's 2 MiB per 48 x 192 view): batches of at most 4 crops and 1536 columns (16
        # views) keep each under ~70 MiB, and cost the least CPU time per column measured
        # (larger batches lose cache)
        self.rec_batch = rec_batch or (4 if on_cpu else 64)
        self.rec_columns = 1536 if on_cpu else 12800
        # the direction model: 1.0 ms of CPU a view in batches of 2-4, 1.5 ms in 16 (one
        # thread, the shipped mobile v2.0 model)
        self.cls_batch = 4 if on_cpu else 64
        self.rec_workers = int(os.environ.get("SKIFF_OCR_REC_WORKERS", "2")) if on_cpu else 1
        self.det_batch = det_batch or (1 if on_cpu else batch_size)
        # images handed to the detection thread at a time: on the CPU neither model batches
        # across images, and steps of 4 let detection and recognition overlap more (32 pages,
        # load ~9: 24-29 s against 33-39 s in steps of 8; peak RSS lower too)
        self.step = min(batch_size, 4) if on_cpu else batch_size
        # detection's memory is about 220 MiB per million input pixels on the CPU: larger
        # inputs are read in tiles (DetParams.tile_pixels); a GPU takes 4 MP at once
        self.det_tile_pixels = self.params.tile_pixels if on_cpu else \
            max(self.params.tile_pixels, 4.0e6)
        # the engines' working memory at once (CPU): detection of the next batch overlaps
        # recognition only while both fit (see ENGINE_BYTES)
        if not work_mb > 0:
            raise ValueError(f"work_mb must be positive, got {work_mb!r}")
        self.gate = MemoryGate(work_mb * 2**20)
        self._engines: dict[str, OnnxEngine] = {}
        self._alphabet: list[str] | None = None
        self._fallback_chars: list[str] | None = None
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}  # one lock per engine being made

    # models, loaded on first use ---------------------------------------------------------
    def engine(self, which: str) -> OnnxEngine:
        """The engine ``which`` (``det``, ``det-fp32``, ``cls``, ``rec``), made on first use.
        Engines are made under a lock of their own: a thread making one does not hold up a
        thread that wants another (:meth:`preload`)."""
        with self._lock:
            made = self._engines.get(which)
            if made is not None:
                return made
            making = self._loading.setdefault(which, threading.Lock())
        with making:
            if which not in self._engines:
                threads = self.threads
                if which.startswith("rec") and self.device == "cpu" and self.rec_workers > 1:
                    threads = max(1, (self.threads or default_threads()) // self.rec_workers)
                if which == "cls" and self.device == "cpu":
                    # the direction model is small and sees a few crops a call: one thread
                    # reads 1-3 crops in 1.0 / 3.0 ms where two take 1.9 / 4.8 (waking the
                    # second costs more than it gives); 0.53 -> 0.45 s over the mixed folder
                    threads = 1
                self._engines[which] = OnnxEngine(
                    self._model_file(which), self.device, threads=threads,
                    gate=self.gate,
                    bytes_per_element=ENGINE_BYTES.get(which.partition("-")[0], 0.0))
            return self._engines[which]

    def preload(self) -> threading.Thread | None:
        """Make the engines a run needs (detector, direction model, recognizer) on a
        background thread, while the first images are decoded and detected; None when they
        are all made. onnxruntime builds a session without holding the GIL: a fresh
        process saves most of the ~0.25 s the three take on the CPU. A failure is left to
        the call that needs the engine, which raises it where it belongs."""
        wanted = ["det", "rec"] + (["cls"] if self.use_cls and self.models.cls else [])
        if all(w in self._engines for w in wanted):
            return None

        def make():
            for which in wanted:
                with contextlib.suppress(Exception):
                    self.engine(which)
                    if which == "rec":
                        _ = self.alphabet

        thread = threading.Thread(target=make, name="skiff-ocr-preload", daemon=True)
        thread.start()
        return thread

    def _model_file(self, which: str):
        """The ONNX file engine ``which`` runs: the set's own, or for detection on the CPU
        its int8 twin (:mod:`.quantize`) when ``precision`` is int8, or auto and the
        detector is a shipped one whose twin was measured (``ModelSet.det_int8``: same texts,
        a quarter of the detector's time)."""
        if which == "det-fp32":  # the detector as shipped, beside its int8 twin
            return self.models.path("det")
        if which == "rec-fallback":
            return self.models.path("rec_fallback")
        path = self.models.path(which)
        measured = self.models.det_int8 and isinstance(self.models.det, tuple)
        if which != "det" or self.device != "cpu" or self.precision == "fp32" or \
                (self.precision == "auto" and not measured):
            return path
        try:
            # auto does not spend a failed build's time again; int8 asked for tries again
            return int8_detector(path, log=_say, retry=self.precision == "int8")
        except QuantizeError as exc:
            if self.precision == "int8":
                raise
            _say(f"skiff: {exc}; detection runs in float32")
            self.precision = "fp32"
            return path

    @property
    def alphabet(self) -> list[str]:
        if self._alphabet is None:
            self._alphabet = read_alphabet(self.engine("rec").session,
                                           self.models.dict_path())
        return self._alphabet

    def _fallback_alphabet(self) -> list[str]:
        if self._fallback_chars is None:
            self._fallback_chars = read_alphabet(self.engine("rec-fallback").session)
        return self._fallback_chars

    @property
    def xp(self):
        if self.device.startswith("cuda"):
            from skiff.kernels.backend import cupy

            return cupy() or np
        return np

    def describe(self) -> dict:
        return {"device": self.device, "why": self.device_reason, **self.models.describe(),
                "detector": self._engines["det"].path.name if "det" in self._engines else None,
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
        loaded: queue.Queue = queue.Queue(maxsize=2 * self.step)
        stop = threading.Event()
        self.budget = budget = PixelBudget(self.max_image_mb * 2**20,
                                           on_block=lambda: loaded.put(_FLUSH))

        def loader():
            try:
                k = 0
                for n, item in enumerate(images):
                    for loaded_item in self._load(k, n, item, budget):  # a PDF: one a page
                        if stop.is_set():
                            return
                        loaded.put(loaded_item)
                        k += 1
            finally:
                loaded.put(None)

        thread = threading.Thread(target=loader, name="skiff-ocr-loader", daemon=True)
        thread.start()
        preloading = self.preload()

        def batches():
            batch: list[_Item] = []
            while True:
                item = loaded.get()
                if item is _FLUSH:  # the loader waits for room: read what is held now
                    if batch:
                        yield batch
                    yield []  # an empty batch: the consumer finishes the one in detection
                    batch = []
                    continue
                if item is not None:
                    batch.append(item)
                if batch and (item is None or len(batch) >= self.step):
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
                ahead = pool.submit(self._detect_batch, batch) if batch else None
                if pending is not None:
                    previous, future = pending
                    results = self._finish_batch(previous, *future.result(),
                                                 keep_pixels=keep_pixels)
                    for it in previous:
                        if it.bgr is not None:
                            budget.release(it.bgr)
                    give_back_memory()
                    for result in results:
                        done += 1
                        if reporter is not None:
                            reporter.progress(done, total, unit="image")
                        yield result
                pending = (batch, ahead) if batch else None
        finally:
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            while thread.is_alive():  # unblock the loader if it waits on a full queue
                try:
                    loaded.get(timeout=0.05)
                except queue.Empty:
                    pass
            if preloading is not None:  # not left inside onnxruntime when the process ends
                preloading.join()

    def _load(self, index: int, number: int, item, budget=None) -> Iterator[_Item]:
        """The pages of input ``number`` as items numbered from ``index``; an input that
        cannot be read (or a page of it) gives an item with ``error`` set."""
        t0 = time.perf_counter()
        pages = iter_pages(item, pdf_dpi=self.pdf_dpi, budget=budget, share_grey=True)
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
            if budget is not None:
                budget.add(bgr)
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
        crops, owners, texts, flipped = self._read(good)
        crops, owners, texts, flipped = self._read_denoised(good, crops, owners, texts, flipped)
        batch_s = det_s + time.perf_counter() - t0
        pos_of = {id(it): pos for pos, it in enumerate(good)}
        mine: dict[int, list[int]] = {}
        for k, (pos, _) in enumerate(owners):
            mine.setdefault(pos, []).append(k)
        share = batch_s / max(1, len(items))
        return [self._assemble(it, mine.get(pos_of.get(id(it)), []), owners, crops, texts,
                               flipped, share, keep_pixels) for it in items]

    def _read(self, good: list[_Item]):
        """Crop, orient and recognize the boxes of detected items: ``(crops, owners,
        texts, flipped)``."""
        crops, owners = self.crop(good)
        flipped, settled = self.directions(crops, owners, good)
        self._turn(crops, flipped)
        texts = self.recognize(crops, owners, good)
        self.read_both_ways(crops, owners, good, flipped, settled, texts)
        self.read_colour_axis(crops, owners, good, texts)
        return crops, owners, texts, flipped

    def read_colour_axis(self, crops, owners, items, texts) -> None:
        """Read the crops read unsurely (under ``SURE_REC``) whose colours vary along an
        axis their grey does not follow (:func:`.rec.colour_grey`: print differing from
        its ground in hue, not lightness) again on that axis, and keep the surer reading
        with its crop. ``crops`` and ``texts`` are updated in place."""
        idx, twins = [], []
        for k, (text, score) in enumerate(texts):
            if text and score >= SURE_REC:
                continue
            twin = colour_grey(crops[k])
            if twin is not None:
                idx.append(k)
                twins.append(twin)
        if not idx:
            return
        again = self.recognize(twins, [owners[k] for k in idx], items)
        for k, twin, (text, score) in zip(idx, twins, again, strict=True):
            if text and score > texts[k][1]:
                crops[k], texts[k] = twin, (text, score)

    def _read_denoised(self, good, crops, owners, texts, flipped):
        """Read small noisy images again from denoised pixels when the first reading is
        unsure, and keep the surer reading.

        An image qualifies when its larger side is at most half ``params.limit``, its
        noise (:func:`noise_sigma`) is at least ``NOISY`` and a line of its reading scores
        under ``SURE_REC`` (or none was found). It is then read whole (detection, direction,
        recognition) three times more, from :func:`denoised_twins`. Of those, the reading
        with the most confident characters (sum of score x characters over the lines kept)
        replaces the first; measured on the degraded tier, the noisy original's reading,
        even when surer, was the worse more often than not (13-17 px text under noise of
        sigma 20-35 and JPEG blocks reads as confident wrong digits). Crops still come from
        each reading's own pixels. Large pages, clean images and sure readings are
        untouched.
        """
        if not good:
            return crops, owners, texts, flipped
        lines: dict[int, list[int]] = {}
        for k, (pos, _) in enumerate(owners):
            lines.setdefault(pos, []).append(k)
        twins, whose = [], []
        for pos, it in enumerate(good):
            mine = lines.get(pos, [])
            sure = bool(mine) and all(texts[k][0] and texts[k][1] >= SURE_REC for k in mine)
            if sure or max(it.bgr.shape[:2]) > self.params.limit / 2:
                continue
            t0 = time.perf_counter()
            sigma = noise_sigma(it.bgr)
            it.timings["noise"] = round(sigma, 2)
            if sigma < NOISY:
                continue
            for name, image in denoised_twins(it.bgr):
                twins.append(_Item(-1 - len(twins), it.label, image, timings={"denoise": 0.0}))
                whose.append((pos, name))
            twins[-1].timings["denoise"] = time.perf_counter() - t0
        if not twins:
            return crops, owners, texts, flipped
        self.detect(twins)
        t_crops, t_owners, t_texts, t_flipped = self._read(twins)
        t_lines: dict[int, list[int]] = {}
        for k, (pos, _) in enumerate(t_owners):
            t_lines.setdefault(pos, []).append(k)

        def worth(ks, txt):
            return sum(s * len(t) for t, s in (txt[k] for k in ks) if t and s >= self.min_score)

        best: dict[int, tuple[float, int]] = {}
        for j, (pos, _) in enumerate(whose):
            got = worth(t_lines.get(j, []), t_texts)
            if got > best.get(pos, (0.0, -1))[0]:
                best[pos] = (got, j)
            it = good[pos]
            for stage, v in twins[j].timings.items():  # the second reading's time is its own
                if stage in ("det", "cls", "rec", "denoise"):
                    it.timings[stage] = it.timings.get(stage, 0.0) + v
        owners, flipped = list(owners), list(flipped)
        for pos, (_, j) in best.items():
            it = good[pos]
            it.boxes = twins[j].boxes
            it.timings["denoised"] = whose[j][1]
            for k in lines.get(pos, []):
                owners[k] = (-1, owners[k][1])  # the first reading's lines are dropped
            for k in t_lines.get(j, []):
                crops.append(t_crops[k])
                owners.append((pos, t_owners[k][1]))
                texts.append(t_texts[k])
                flipped.append(t_flipped[k])
        return crops, owners, texts, np.array(flipped, bool)

    # stages ------------------------------------------------------------------------------
    def detect(self, items: list[_Item]) -> None:
        """Boxes for each item: pick its scale, run the detector on same-size groups, and
        enlarge once more where the text found is still too small to read well; then the
        second passes of hard images (:meth:`_detect_level`).

        With the int8 detector (:mod:`.quantize`), a small noisy image, and any image whose
        int8 reading is unsure (:meth:`_weak`), is detected by the float32 file instead, as
        it would be without the twin: on the degraded tier int8 alone lost a point, and
        such images are small, so the float32 passes cost little."""
        int8 = self.engine("det").path != self.models.path("det")
        exact = {it.index for it in items if int8 and self._fragile(it)}
        scales = self._first_passes([it for it in items if it.index not in exact], "det")
        if int8:
            exact |= {it.index for it in items if it.index in scales and
                      self._weak(it, max(it.bgr.shape[:2]) * scales[it.index])}
            scales.update(self._first_passes([it for it in items if it.index in exact],
                                             "det-fp32"))
        for it in items:
            if self._weak(it, max(it.bgr.shape[:2]) * scales[it.index]):
                self._detect_level(it, scales[it.index],
                                   "det-fp32" if it.index in exact else "det")
            it.boxes = join_fragments(it.boxes)
            it.timings["det_scale"] = round(scales[it.index], 4)

    def _fragile(self, it: _Item) -> bool:
        """A small noisy image (at most half the detector's page side, pixel noise at least
        ``NOISY``): where int8's error and the noise add up."""
        return max(it.bgr.shape[:2]) <= self.params.limit / 2 and noise_sigma(it.bgr) >= NOISY

    def _first_passes(self, items: list[_Item], which: str) -> dict:
        """Scale each item, detect with engine ``which``, and enlarge once where the text
        found is still too small; the scale each item ended with."""
        p = self.params
        scales = {}
        for it in items:
            t0 = time.perf_counter()
            gray = grey_of(it.bgr) if it.bgr.size < 4e6 else it.bgr[..., 1]
            text_h, ink = text_extent(gray)
            scales[it.index] = choose_scale(*it.bgr.shape[:2], text_h, p)
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

    def _weak(self, it: _Item, side: float) -> bool:
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

    def _detect_level(self, it: _Item, scale: float, which: str = "det") -> None:
        """Second passes for a hard image: when the first found nothing or only unsure
        boxes, on the image smoothed (a Gaussian of 1.2 px takes sensor noise and JPEG
        blocks off small text; measured on the hard set, it finds lines the first pass
        missed); then on the better of the two turned level (:mod:`.deskew`). The pass
        with the most lines, then the surest, wins; crops are still cut from the original
        pixels."""
        import cv2

        t0 = time.perf_counter()
        best, source = it.boxes, it.bgr
        weak = not best or _mean_score(best) < 0.7
        if weak:  # lines found surely but off the axes need only the level pass
            smooth = cv2.GaussianBlur(it.bgr, (0, 0), 1.2)
            twin = _Item(it.index, it.label, smooth)
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
            twin = _Item(it.index, it.label, flat)
            self._run_det([twin], {it.index: scale}, which)
            new = boxes_back(twin.boxes, m, it.bgr.shape[:2])
            if _better(new, best):
                best = new
                it.timings["leveled"] = round(found[0], 2)
        it.boxes = best
        it.timings["det"] = it.timings.get("det", 0.0) + time.perf_counter() - t0

    def _run_det(self, items: list[_Item], scales: dict, which: str = "det") -> None:
        """Boxes for each item at its scale, in groups of one size (or in tiles); an item
        whose lines run into the edge of its ink box is detected again whole
        (:meth:`_cut_by_ink`)."""
        self._det_once(items, scales, which)
        cut = [it for it in items if self._cut_by_ink(it, scales[it.index])]
        for it in cut:
            it.ink = None
            it.timings["ink_cut"] = True
        if cut:
            self._det_once(cut, scales, which)

    @staticmethod
    def _cut_by_ink(it: _Item, scale: float) -> bool:
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

    def _det_once(self, items: list[_Item], scales: dict, which: str = "det") -> None:
        groups: dict[tuple, list[_Item]] = {}
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
                    it.boxes = [(box + at, score) for box, score in
                                db_boxes(pm, size, src.shape[:2], self.params, xp=np)]
                dt = (time.perf_counter() - t0) / len(part)
                for it in part:
                    it.timings["det"] = it.timings.get("det", 0.0) + dt

    def _det_tiled(self, it: _Item, s: float, which: str = "det") -> None:
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

    def crop(self, items: list[_Item]) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
        """Upright crops of every box, with ``(item position, box index)`` owners."""
        crops, owners = [], []
        for pos, it in enumerate(items):
            for b, (box, _) in enumerate(it.boxes):
                crops.append(crop_box(it.bgr, box))
                owners.append((pos, b))
        return crops, owners

    def orient(self, crops, owners, items) -> np.ndarray:
        """Turn crops that are upside down by the direction model alone; returns the flags
        (:meth:`directions` says how they are decided)."""
        flags, _ = self.directions(crops, owners, items)
        self._turn(crops, flags)
        return flags

    @staticmethod
    def _turn(crops, flags) -> None:
        for k in np.flatnonzero(flags):
            crops[k] = np.ascontiguousarray(crops[k][::-1, ::-1])

    def directions(self, crops, owners, items) -> tuple[np.ndarray, np.ndarray]:
        """Which crops the direction model reads as upside down, and which of those
        decisions are settled by their page.

        When at least three crops of a page are sure (p > 0.9) and at least 80% of their
        width agrees, every crop of the page follows that majority (a page is seldom printed
        both ways; the model now and then is "sure" of a wrong turn): those are settled
        ``BY_PAGE``. Otherwise a sure crop follows the model and an unsure one its page's
        majority (by width) of sure crops; a crop the model is at least ``SURE_CLS`` sure is
        upright is settled ``BY_MODEL``, and :meth:`read_both_ways` has the last word.
        On the CPU the model reads a page's crops widest first, ``PAGE_STEP`` at a time, and
        stops once ``PAGE_SURE`` are sure one way and none the other: the page settles the
        crops it did not see (only a page more than a fifth of it turned the other way, seen
        among its narrower lines, would have come out otherwise).
        """
        flags = np.zeros(len(crops), bool)
        settled = np.full(len(crops), UNSETTLED, np.int8)
        if not self.use_cls or not crops or self.models.cls is None:
            return flags, settled + BY_MODEL
        t0 = time.perf_counter()
        widths = np.array([c.shape[1] for c in crops], np.float64)
        pos = np.array([p for p, _ in owners])
        # crops the model did not see (their page settled before them) keep NaN: neither
        # sure way, and their page's rule below turns them with it
        probs = np.full((len(crops), 2), np.nan, np.float32)
        for page in np.unique(pos):
            order = np.flatnonzero(pos == page)
            order = order[np.argsort(-widths[order], kind="stable")]
            n = PAGE_STEP if self.device == "cpu" else len(order)  # a GPU takes them at once
            for start in range(0, len(order), n):
                step = order[start:start + n]
                probs[step] = self._cls_probs([crops[k] for k in step])
                seen = probs[order[:start + len(step)]]
                up, down = int(is_flipped(seen[:, ::-1]).sum()), int(is_flipped(seen).sum())
                if min(up, down) == 0 and max(up, down) >= PAGE_SURE:
                    break
        sure_up, sure_down = is_flipped(probs[:, ::-1]), is_flipped(probs)
        for page in np.unique(pos):
            mine = pos == page
            w_down, w_up = widths[mine & sure_down].sum(), widths[mine & sure_up].sum()
            sure = int((mine & (sure_down | sure_up)).sum())
            if sure >= 3 and max(w_down, w_up) >= 4 * min(w_down, w_up):
                # a page the model reads one way (>= 80% of the sure width): a lone crop it
                # is "sure" goes the other way is a misreading (seen on 6-pt PDF lines)
                flags[mine] = w_down > w_up
                settled[mine] = BY_PAGE
            else:
                flags[mine] = np.where(sure_down[mine] | sure_up[mine], sure_down[mine],
                                       w_down > w_up)
                # very sure the crop is upright: the recognizer is asked only if it reads
                # the crop poorly (read_both_ways); a turn is always checked by reading the
                # crop both ways (most crops are upright, so this costs little, and the model
                # is now and then sure of a wrong turn on seven-segment digits, which read
                # almost as surely upside down: "424581" as "185h2h" at 0.98)
                settled[mine] = np.where((probs[mine].max(1) >= SURE_CLS) & ~flags[mine],
                                         BY_MODEL, UNSETTLED)
        self._share(items, owners, "cls", time.perf_counter() - t0)
        return flags, settled

    def _cls_probs(self, crops) -> np.ndarray:
        """The direction model's (upright, turned) probabilities for each crop. It sees 48 x
        192: a long line squeezed into it is often misread (a 10-pt PDF page came out upside
        down), so a long crop is seen as up to three windows of that shape, averaged."""
        cls = self.engine("cls")
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
        for start in range(0, len(views), self.cls_batch):
            part = views[start:start + self.cls_batch]
            seen[start:start + len(part)] = cls(cls_input(part, self.xp))
        probs = np.zeros((len(crops), 2), np.float32)
        np.add.at(probs, np.array(whose), seen)
        return probs / np.bincount(whose, minlength=len(crops))[:, None]

    def read_both_ways(self, crops, owners, items, flags, settled, texts) -> None:
        """Read the crops whose direction is not settled (by their page, or by a direction
        model at least ``SURE_CLS`` sure whose reading scores at least ``SURE_REC``) the
        other way up too, and keep the reading the recognizer is surer of
        (:func:`choose_turns`). A crop its page settled is not read again even when its
        reading is poor: the page's sure crops outvote it (on the mixed set such crops were
        30% of the columns read twice, and none turned).

        The direction model sees a 48 x 192 thumbnail and is sometimes sure of the wrong
        turn on small, blurred or unusual print (a seven-segment "4185.94" read as
        "h6581 h"); the recognizer's confidence over the whole line is the better judge.
        ``crops``, ``flags`` and ``texts`` are updated in place.
        """
        if not self.use_cls:
            return
        poor = np.array([not t or score < SURE_REC for t, score in texts], bool)
        settled = np.asarray(settled)
        idx = np.flatnonzero((settled == UNSETTLED) | (poor & (settled != BY_PAGE)))
        if not len(idx):
            return
        turned = [np.ascontiguousarray(crops[k][::-1, ::-1]) for k in idx]
        other = self.recognize(turned, [owners[k] for k in idx], items)
        widths = [crops[k].shape[1] for k in idx]
        pages = [owners[k][0] for k in idx]
        turn = choose_turns([texts[k] for k in idx], other, widths, pages,
                            flipped=flags[idx], prior=UPRIGHT_PRIOR)
        for j in np.flatnonzero(turn):
            k = idx[j]
            crops[k], texts[k], flags[k] = turned[j], other[j], not flags[k]

    def recognize(self, crops, owners, items) -> list[tuple[str, float]]:
        """Text and score of every crop, in batches of similar width. A set with a fallback
        recognizer (``ch-tiny``) reads the crops its own recognizer reads under
        ``FALLBACK_SCORE`` again with it, and keeps the surer reading."""
        if not crops:
            return []
        t0 = time.perf_counter()
        out = self._read_with("rec", self.alphabet, crops)
        if self.models.rec_fallback is not None:
            idx = [i for i, (text, score) in enumerate(out) if not text or score < FALLBACK_SCORE]
            if idx:
                again = self._read_with("rec-fallback", self._fallback_alphabet(),
                                        [crops[i] for i in idx])
                for i, (text, score) in zip(idx, again, strict=True):
                    if text and score > out[i][1]:
                        out[i] = (text, score)
        self._share(items, owners, "rec", time.perf_counter() - t0)
        return out

    def _read_with(self, which: str, alphabet: list[str], crops) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        rec = self.engine(which)
        height = self.models.rec_height
        widths = [int(np.ceil(height * c.shape[1] / max(1, c.shape[0]))) for c in crops]
        # a crop is read at its own input width (rec.input_width): buckets on a GPU, whose
        # shapes that repeat matter to cuDNN; on the CPU its step, less padding
        bucket = True if self.device != "cpu" else "step"

        def read(idx):
            probs = rec(rec_input([crops[i] for i in idx], height, self.xp, bucket=bucket))
            decoded = ctc_decode(probs, alphabet, np)  # then a display's dropped point
            return idx, [(decimal_point(text, probs[j], alphabet), score)
                         for j, (text, score) in enumerate(decoded)]

        batches = plan_batches(widths, self.rec_batch, self.rec_columns, bucket=bucket)
        pool = self._rec_pool() if len(batches) > 1 else None
        for idx, decoded in (pool.map(read, batches) if pool else map(read, batches)):
            for i, d in zip(idx, decoded, strict=True):
                out[i] = d
        return out

    def _rec_pool(self) -> ThreadPoolExecutor | None:
        """On the CPU, recognition batches run ``rec_workers`` at a time (each on a session
        of one intra-op thread: small batches split poorly across threads, whole batches
        side by side keep the cores busy); None on a GPU."""
        if self.device != "cpu" or self.rec_workers < 2:
            return None
        with self._lock:
            if getattr(self, "_rec_executor", None) is None:
                self._rec_executor = ThreadPoolExecutor(self.rec_workers,
                                                        thread_name_prefix="skiff-ocr-rec")
            return self._rec_executor

    @staticmethod
    def _share(items, owners, stage, seconds):
        if not owners:
            return
        for pos, _ in owners:
            items[pos].timings[stage] = items[pos].timings.get(stage, 0.0) + seconds / len(owners)

    @staticmethod
    def _picture(it: _Item, crop: np.ndarray, text: str, score: float) -> bool:
        """Whether a one-character reading is a picture on a page of print: read unsurely
        (under ``PICTURE_SCORE``) from a box at least ``PICTURE_SIDE`` times the page's text
        height on its short side. The detector boxes a blurred photo or a chart whole, and
        the recognizer gives such a box a character ("國" at 0.69 for the picture above a
        caption); a large single character on a page (a sign's "福") reads surely."""
        height = it.timings.get("text_height")
        return (len(text.strip()) == 1 and score < PICTURE_SCORE and bool(height)
                and min(crop.shape[:2]) >= PICTURE_SIDE * height)

    def _assemble(self, it: _Item, mine, owners, crops, texts, flipped, share, keep_pixels):
        """The result of one image from its crops (``mine``: their indices)."""
        timings = {k: round(v, 5) if isinstance(v, float) else v for k, v in it.timings.items()
                   if v is not None}
        timings["load"] = round(it.load_s, 5)
        if it.error is not None:
            return OcrResult(it.label, error=it.error, timings=timings, elapsed_s=it.load_s,
                             device=self.device)
        lines, boxes, flips = [], [], []
        kept = [k for k in mine if texts[k][0] and texts[k][1] >= self.min_score]
        for k in kept:
            text, score = texts[k]
            if is_speck(crops[k], text) or is_shape_line(text) or \
                    (len(kept) > 1 and self._picture(it, crops[k], text, score)):
                continue
            text = letter_spaces(cell_spaces(text, crops[k]), crops[k])
            box = it.boxes[owners[k][1]][0]
            lines.append(TextLine(box.round(1).tolist(), text, score))
            boxes.append(box)
            flips.append(bool(flipped[k]))
        angles = [reading_angle(b, f) for b, f in zip(boxes, flips, strict=True)]
        rows = reading_rows(boxes, shape=it.bgr.shape[:2], angles=angles,
                            chars=[len(line.text.replace(" ", "")) for line in lines])
        text = monospace_text(rows, boxes, [line.text for line in lines], angles,
                              it.bgr) or \
            "\n".join(" ".join(lines[i].text for i in row) for row in rows)
        for r, row in enumerate(rows):
            for i in row:
                lines[i].row = r
        lines = [lines[i] for row in rows for i in row]
        rgb = it.bgr[..., ::-1] if keep_pixels else None
        return OcrResult(it.label, lines, text, None,
                         timings, elapsed_s=it.load_s + share, size=tuple(it.bgr.shape[:2]),
                         device=self.device, pixels=rgb)
