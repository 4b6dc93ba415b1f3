"""The OCR pipeline: load → detect → crop → direction → recognize → lines in reading order.

One :class:`OcrPipeline` holds the three models (loaded on first use) and reads images one
batch at a time: detection runs on images grouped by input size, direction and recognition
on all crops of the batch at once, sorted by width. A loader thread decodes the next images
while the models run, and nothing of an image is kept after its result is handed out, so
memory stays flat over long folders.

The detection passes live in :mod:`.detecting` and the reading of the boxes (crops,
directions, recognition, second readings) in :mod:`.reading`, as mixins of
:class:`OcrPipeline`; decoding the inputs in :mod:`.images`, the reading order of a page's
lines in :mod:`.layout`, the device choice in :mod:`.engine`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE

from . import denoise
from .arrows import row_arrows
from .blocks import block_rows
from .cell_dashes import cell_dashes
from .checkboxes import SIGNS, box_before, checkbox_text
from .combs import join_combs
from .det import DetParams
from .detecting import DetectionPasses
from .engine import (
    MemoryGate,
    OnnxEngine,
    default_threads,
    give_back_memory,
    resolve_ocr_device,
)
from .glare import read_glare
from .images import PDF_DPI, ImageError, PixelBudget, is_pdf, iter_pages, pdf_password
from .item import Item
from .keycaps import dangling_keys
from .layout import is_amounts, monospace_text, overlap_repeats, reading_rows
from .letter_case import letter_case
from .marks import (
    box_marks,
    could_be_box,
    cross_marks,
    degree_signs,
    edge_dashes,
    empty_brackets,
    en_dashes,
    footnote_marks,
    fraction_echoes,
    full_width_colons,
    lone_dashes,
    page_number_spaces,
    tick_marks,
)
from .models import ModelSet, get_model_set, read_alphabet
from .page_words import doubled_letters
from .panels import leader_stubs, panel_rows
from .quantize import PRECISIONS, QuantizeError, int8_detector, int8_recognizer
from .reading import LineReading
from .rec import (
    is_leader_line,
    is_rule_line,
    is_shape_line,
    is_speck,
    reading_angle,
    row_leaders,
    sideways_page,
    strip_leader,
)
from .registers import join_registers
from .result import OcrResult, TextLine
from .script_mix import greek_warning, unread_ink, user_stacklevel
from .spacing import _cjk_char, cell_spaces, digit_spaces, letter_spaces, one_width
from .symbol_shapes import dropped_symbols
from .symbols import inline_symbols, lone_symbol
from .symbols import symbol_page as symbol_page_of
from .turn_bound import settle_unturnable
from .variants import simplified_variants

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
# the engines' working memory held at once by default (MiB): a detection tile of 0.5 MP
# (DetParams.tile_pixels) and a recognition batch of about 1000 columns
WORK_MB = 160.0
# run(keep_pixels=True) keeps the pixels of the first images read from files; later ones
# are read again from their files when drawn (OcrResult._rgb): skiff.ocr on a folder or a
# PDF of hundreds of pages held every page (16 MiB each for A4 at 200 dpi). Arrays, PIL
# images and bytes have no file to go back to and keep theirs.
KEEP_FILE_PIXELS = 8
# decoded pixels in flight (loaded ahead, in detection, in recognition) before the loader
# waits (a larger image is read alone): sixteen A4 pages at 200 dpi (16 MiB each) held up
# to 256 MiB, peak RSS 642-651 MiB against RapidOCR's 498; at 96 MiB 473-480, the same CPU
# (round 31). Small images never reach it (the mixed folder holds under 16 MiB).
AHEAD_MB = 96.0
# precision="hybrid": a line of a clean image that the int8 recognizer reads under this score
# is read again in float32 (0: never). Off: measured on 32 mixed pages (round 32), 0.95
# reads 18% of the columns again (a third of int8's saving) and 3 texts of 32 still differ
# from float32's (4 with none), 0.98 35% (all the saving) and 2 (docs/ocr-int8-rec.md)
HYBRID_LINE = 0.0



def _say(line: str) -> None:
    """A one-off notice (a model being built, a fallback): to stderr, which a job's log
    keeps and a notebook shows."""
    import sys

    print(line, file=sys.stderr, flush=True)


def _progress_takes(reporter, attr: str, names: set, var_keyword: bool) -> bool:
    """Whether ``reporter.progress`` takes the keywords ``names`` (or ``**kwargs`` where
    ``var_keyword``); a wrapper says so for what it wraps by a bool attribute ``attr``."""
    if reporter is None:
        return False
    known = getattr(reporter, attr, None)
    if isinstance(known, bool):
        return known
    import inspect

    try:
        params = inspect.signature(reporter.progress).parameters.values()
    except (TypeError, ValueError, AttributeError):
        return False
    return names <= {p.name for p in params} or \
        (var_keyword and any(p.kind is p.VAR_KEYWORD for p in params))


def takes_ready(reporter) -> bool:
    """Whether ``reporter.progress`` takes ``ready`` (round 45: the units of a batch read and
    not yet given out; ``skiff.jobs.reporter.RunReporter``'s)."""
    return _progress_takes(reporter, "takes_ready", {"ready"}, var_keyword=False)


def takes_work(reporter) -> bool:
    """Whether ``reporter.progress`` takes ``work`` and ``work_total`` (round 32): a
    reporter written before (a notebook's own, a test's) is called without them."""
    return _progress_takes(reporter, "takes_work", {"work", "work_total"}, var_keyword=True)


def _work_of(work: list, where: tuple[int, int] | None, failed: bool) -> float:
    """The work a result of input page ``where`` (input, page) ends: that page's; an error
    ends its input, so the pages it will not give count as read too."""
    if where is None:
        return 0.0
    n, p = where
    if not 0 <= n < len(work):
        return 0.0
    pages = work[n]
    return float(sum(pages[p:])) if failed else float(pages[p]) if p < len(pages) else 0.0


class OcrPipeline(DetectionPasses, LineReading):
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
    use_cls : bool or "always"
        Run the 0/180 degree direction model on each crop (True, default), except with a
        recognizer whose file says its crops come upright (metadata ``skiff_upright``,
        written by ``%train ocr-rec`` where the direction model turned held-out crops of
        the domain that read right as they stand: seven-segment displays, dotted receipts);
        ``"always"`` runs it even then; False never.
    use_det : bool
        Find the lines with the detector (default). False: each image is one line already
        cut out (a crop from your own detector, a labelled dataset's line): it is read
        whole, turned a quarter if taller than wide and by the direction model if
        ``use_cls``, and the detector is never loaded. A crop cut tight to its print, or of
        one character, is often not boxed by the detector at all.
    words : bool, optional
        Read an unsure line again with what text usually says (:mod:`.beam`: Chinese
        character pairs, English words, from ``wordfreq``'s lists): "热顺欢迎" ->
        "热烈欢迎", "No Pakng" -> "No Parking". A line the recognizer is sure of is never
        changed. False: each line as the recognizer's best classes give it (part numbers,
        codes and names in unsure print). None (default): on for the registered sets'
        recognizers, off for a user's own ``rec_model`` or ``dict`` (its own domain or
        language, as it also gets no fallback recognizer).
    min_score : float
        Lines whose recognition score is lower are dropped.
    pdf_dpi : float
        Resolution PDF pages are rendered at (200: a 10-pt line is ~28 px high).
    password : str, optional
        Opens password-protected PDFs (those without one open as ever); a PDF it does not
        open gives a result whose ``error`` says so, and the other inputs are read.
    work_mb : float
        The models' working memory held at once on the CPU (estimated per call): detection
        of the next batch and recognition of this one overlap while they fit in it.
    max_image_mb : float
        Decoded pixels one run holds at once (loaded ahead, in detection, in recognition);
        the loader waits for room before decoding the next image, and an image larger than
        this alone is refused (its result carries the error). The loader waits already at
        ``AHEAD_MB`` (96) in flight, unless the image is read alone.
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

    # crops on pages that no reading the other way up could turn are read once
    # (:mod:`.turn_bound`; False reads them twice, as before round 30: the same texts)
    bound_turns = True

    def __init__(self, model: str | ModelSet = "ch", *, device: str = DEFAULT_DEVICE,
                 batch_size: int = 8, threads: int | None = None, det_model=None,
                 rec_model=None, dict=None, use_cls: bool | str = True, use_det: bool = True,
                 words: bool | None = None, min_score: float = 0.5,
                 params: DetParams | None = None, rec_batch: int | None = None,
                 det_batch: int | None = None, pdf_dpi: float = PDF_DPI,
                 max_image_mb: float = 1024, work_mb: float = WORK_MB,
                 precision: str = "auto", password: str | None = None):
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
        if precision in ("int8", "hybrid") and self.device != "cpu":
            raise ValueError(f"precision {precision!r} runs on the CPU only; {self.device!r} "
                             "runs the float32 models (use precision='auto')")
        self.precision = precision
        self.batch_size = batch_size
        if not 36 <= pdf_dpi <= 600:
            raise ValueError(f"pdf_dpi must be in [36, 600], got {pdf_dpi!r}")
        self.pdf_dpi = float(pdf_dpi)
        self.password = password
        if not max_image_mb > 0:
            raise ValueError(f"max_image_mb must be positive, got {max_image_mb!r}")
        self.max_image_mb = float(max_image_mb)
        self.threads = threads
        if use_cls not in (True, False, "always"):
            raise ValueError(f"use_cls must be True, False or 'always', got {use_cls!r}")
        # a fine-tuned recognizer whose domain the direction model turns over says so
        self.upright_rec = use_cls is True and says_upright(models.rec)
        # a fine-tune whose labels wrote dashes reads its user's "-" and "–": not rewritten
        # from the ink's width (a handwritten hyphen spans an en dash's share: round 45)
        self.learnt_dashes = says_learnt_dashes(models.rec)
        self.use_cls = bool(use_cls) and not self.upright_rec
        self.use_det = use_det
        self.words = (not (rec_model or dict)) if words is None else bool(words)
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
        if not use_det:  # crops: no detection to overlap; 32 at a time fill the recognition
            # batches by width and both workers (300 crops: 6.9 s in steps of 4, 4.8 in 32)
            self.step = max(batch_size, 32)
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
        self._rec_int8 = False  # "rec" means the int8 recognizer (precision="hybrid")

    # models, loaded on first use ---------------------------------------------------------
    def engine(self, which: str) -> OnnxEngine:
        """The engine ``which`` (``det``, ``det-fp32``, ``cls``, ``rec``), made on first use.
        Engines are made under a lock of their own: a thread making one does not hold up a
        thread that wants another (:meth:`preload`)."""
        if which == "rec" and self._rec_int8:  # precision="hybrid", a clean image's crops
            which = "rec-int8"
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
                    bytes_per_element=ENGINE_BYTES.get(which.partition("-")[0], 0.0),
                    arena=which.startswith("rec"), graph_cache=True)
            return self._engines[which]

    def preload(self) -> threading.Thread | None:
        """Make the engines a run needs (detector, direction model, recognizer) on a
        background thread, while the first images are decoded and detected; None when they
        are all made. onnxruntime builds a session without holding the GIL: a fresh
        process saves most of the ~0.25 s the three take on the CPU. A failure is left to
        the call that needs the engine, which raises it where it belongs."""
        wanted = (["det"] if self.use_det else []) + ["rec"] + \
            (["cls"] if self.use_cls and self.models.cls else [])
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
        if which == "rec-int8":
            return int8_recognizer(self.models.path("rec"), log=_say)
        path = self.models.path(which)
        measured = self.models.det_int8 and isinstance(self.models.det, tuple)
        if which != "det" or self.device != "cpu" or self.precision == "fp32" or \
                (self.precision in ("auto", "hybrid") and not measured):
            return path
        try:
            # auto does not spend a failed build's time again; int8 asked for tries again
            return int8_detector(path, log=_say, retry=self.precision == "int8")
        except QuantizeError as exc:
            if self.precision == "int8":
                raise
            _say(f"skiff: {exc}; detection runs in float32")
            if self.precision == "auto":
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
                "direction_model": "off: the recognizer says its crops come upright"
                if self.upright_rec else "on" if self.use_cls else "off",
                "detector": self._engines["det"].path.name if "det" in self._engines else None,
                "providers": {k: e.provider for k, e in self._engines.items()}}

    # precision="hybrid" ------------------------------------------------------------------
    def recognize(self, crops, owners, items, fallback: bool = True,
                  rival=None) -> list[tuple[str, float]]:
        """:meth:`.LineReading.recognize`; with ``precision="hybrid"`` the crops of clean
        images (pixel noise under ``denoise.NOISY``, larger than half the detector's
        ``limit``) are read by the recognizer's int8 twin (:mod:`.quantize_rec`), those of
        noisy or small images and of noisy images' denoised copies in float32,
        and a clean image's line read under ``HYBRID_LINE`` again in float32."""
        if self.precision != "hybrid" or not crops:
            return super().recognize(crops, owners, items, fallback, rival)
        _ = self.alphabet  # from the float32 file's metadata
        noisy = [self._noisy(items[pos]) for pos, _ in owners]
        out: list = [None] * len(crops)
        for as_int8 in (True, False):
            idx = [i for i, n in enumerate(noisy) if n != as_int8]
            if not idx:
                continue
            self._rec_int8 = as_int8
            try:
                part = super().recognize([crops[i] for i in idx], [owners[i] for i in idx],
                                         items, fallback,
                                         None if rival is None else [rival[i] for i in idx])
            finally:
                self._rec_int8 = False
            for i, read in zip(idx, part, strict=True):
                out[i] = read
        if HYBRID_LINE > 0:
            idx = [i for i, n in enumerate(noisy) if not n and out[i][1] < HYBRID_LINE]
            if idx:
                part = super().recognize([crops[i] for i in idx], [owners[i] for i in idx],
                                         items, fallback,
                                         None if rival is None else [rival[i] for i in idx])
                for i, read in zip(idx, part, strict=True):
                    out[i] = read
        return out

    def _noisy(self, it: Item) -> bool:
        """Whether ``it`` is read in float32 under ``precision="hybrid"``: a denoised copy
        of a noisy image (negative index), pixel noise at least ``denoise.NOISY``, or a
        small image (longer side at most half the detector's ``limit``: a display, a label,
        where the recognizer is little of the work and int8 dropped decimal points, round
        32)."""
        return it.index < 0 or max(it.bgr.shape[:2]) <= self.params.limit / 2 or \
            it.noise() >= denoise.NOISY

    # the sentence ------------------------------------------------------------------------
    def __call__(self, image) -> OcrResult:
        """Read one image (path, PIL image or array)."""
        return next(iter(self.run([image], keep_pixels=True)))

    def run(self, images: Iterable, **kw) -> Iterator[OcrResult]:
        """Read many images, yielding one :class:`OcrResult` each, in input order (see
        :meth:`_run`); a password-protected PDF opens with the pipeline's ``password``."""
        with pdf_password(self.password):
            yield from self._run(images, **kw)

    def _run(self, images: Iterable, *, reporter=None, total: int | None = None,
             keep_pixels: bool = False, work: list | None = None) -> Iterator[OcrResult]:
        """Read many images, yielding one :class:`OcrResult` each, in input order.

        A loader thread decodes ahead (two batches at most); an image that cannot be read
        gives a result with ``error`` set and the rest go on. ``work``: for each of
        ``images``, the work of each of its pages (pixels: ``entry.page_pixels``); the
        progress then carries ``work`` (that of the inputs' pages read) and ``work_total``
        for the ETA (``JobState.eta``), where ``reporter.progress`` takes them.
        """
        if work is not None and not takes_work(reporter):
            work = None
        work_total = float(sum(map(sum, work))) if work else 0.0
        if not work_total > 0:
            work = None
        origin: dict[int, tuple[int, int]] = {}  # item index: (input, page of it)
        work_done = 0.0
        loaded: queue.Queue = queue.Queue(maxsize=2 * self.step)
        stop = threading.Event()
        self.budget = budget = PixelBudget(self.max_image_mb * 2**20,
                                           ahead_bytes=AHEAD_MB * 2**20,
                                           on_block=lambda: loaded.put(_FLUSH))

        def loader():
            try:
                k = 0
                for n, item in enumerate(images):
                    for p, loaded_item in enumerate(self._load(k, n, item, budget)):
                        if stop.is_set():  # (a PDF gives one item a page)
                            return
                        origin[loaded_item.index] = (n, p)
                        loaded.put(loaded_item)
                        k += 1
            finally:
                loaded.put(None)

        thread = threading.Thread(target=loader, name="skiff-ocr-loader", daemon=True)
        thread.start()
        preloading = self.preload()

        def batches():
            batch: list[Item] = []
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
        ready_too = takes_ready(reporter)
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
                    for k, (it, result) in enumerate(zip(previous, results)):
                        done += 1
                        # the batch's results read and not yet given out: the job's ETA
                        # counts them done (a batch cut short at the pixel budget too)
                        said = {"ready": len(results) - k - 1} if ready_too else {}
                        if done > KEEP_FILE_PIXELS and result.pixels is not None and \
                                result.image and not result.image.startswith("<"):
                            result.pixels = None  # the file has them (OcrResult._rgb)
                        if work is not None:
                            work_done += _work_of(work, origin.pop(it.index, None),
                                                  it.error is not None)
                        if reporter is None:
                            pass
                        elif work is not None:
                            reporter.progress(done, total, unit="image",
                                              work=min(work_done, work_total),
                                              work_total=work_total, **said)
                        else:
                            reporter.progress(done, total, unit="image", **said)
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

    def _load(self, index: int, number: int, item, budget=None) -> Iterator[Item]:
        """The pages of input ``number`` as items numbered from ``index``; an input that
        cannot be read (or a page of it) gives an item with ``error`` set."""
        t0 = time.perf_counter()
        pages = None
        k = index
        while True:
            try:
                if pages is None:
                    pages = iter_pages(item, pdf_dpi=self.pdf_dpi, budget=budget,
                                       share_grey=True, page_errors=True)
                bgr, label = next(pages)
            except StopIteration:
                return
            except Exception as exc:  # ImageError, or anything else: this input's error item
                label = str(item) if isinstance(item, (str, Path)) else f"<input {number}>"
                if k > index and isinstance(item, (str, Path)):
                    label = f"{item}#page={k - index + 1}"
                why = str(exc) if isinstance(exc, ImageError) else \
                    f"cannot read {label!r}: {type(exc).__name__}: {exc}"
                yield Item(k, label, error=why, load_s=time.perf_counter() - t0)
                return
            if isinstance(bgr, ImageError):  # one page of a PDF that cannot be read
                yield Item(k, label, error=str(bgr), load_s=time.perf_counter() - t0)
                k += 1
                t0 = time.perf_counter()
                continue
            if label in ("<array>", "<PIL image>"):
                label = f"<{label[1:-1]} {number}>"
            if budget is not None:
                budget.add(bgr)
            yield Item(k, label, bgr, load_s=time.perf_counter() - t0)
            k += 1
            t0 = time.perf_counter()

    def read_batch(self, items: list[Item], *, keep_pixels: bool = False) -> list[OcrResult]:
        """Detect, crop, orient and recognize a batch of loaded images."""
        return self._finish_batch(items, *self._detect_batch(items), keep_pixels=keep_pixels)

    def _detect_batch(self, items: list[Item]) -> tuple[list[Item], float]:
        t0 = time.perf_counter()
        good = [it for it in items if it.error is None and min(it.bgr.shape[:2]) >= 4]
        self.detect(good)
        return good, time.perf_counter() - t0

    def _finish_batch(self, items, good, det_s, *, keep_pixels=False) -> list[OcrResult]:
        t0 = time.perf_counter()
        crops, owners, texts, flipped = self._read(good)
        crops, owners, texts, flipped = self._read_denoised(good, crops, owners, texts, flipped)
        # a photo with a glare patch over its print, read again contrast-boosted (glare.py)
        crops, owners, texts, flipped = read_glare(self, good, crops, owners, texts, flipped)
        batch_s = det_s + time.perf_counter() - t0
        pos_of = {id(it): pos for pos, it in enumerate(good)}
        mine: dict[int, list[int]] = {}
        for k, (pos, _) in enumerate(owners):
            mine.setdefault(pos, []).append(k)
        share = batch_s / max(1, len(items))
        return [self._assemble(it, mine.get(pos_of.get(id(it)), []), owners, crops, texts,
                               flipped, share, keep_pixels) for it in items]

    def _read(self, good: list[Item]):
        """Crop, orient and recognize the boxes of detected items: ``(crops, owners,
        texts, flipped)``."""
        crops, owners = self.crop(good)
        flipped, settled = self.directions(crops, owners, good)
        self._turn(crops, flipped)
        texts = self.recognize(crops, owners, good)
        if self.use_cls and self.bound_turns:  # pages no turned reading could turn
            settled = settle_unturnable(texts, flipped, settled, [c.shape[1] for c in crops],
                                        [pos for pos, _ in owners])
        self.read_both_ways(crops, owners, good, flipped, settled, texts)
        if not self.use_det:
            self.read_tall_as_they_are(crops, owners, good, texts)
            self.read_squat_turned(crops, owners, good, texts)
        else:
            self.read_bars_upright(crops, owners, good, texts)
            self.read_sideways_upright(crops, owners, good, texts)
            self.read_squat_columns(crops, owners, good, texts)
        self.read_colour_axis(crops, owners, good, texts)
        self.read_points(crops, owners, good, texts)
        return crops, owners, texts, flipped


    @staticmethod
    def _picture(it: Item, crop: np.ndarray, text: str, score: float) -> bool:
        """Whether a one-character reading is a picture on a page of print: read unsurely
        (under ``PICTURE_SCORE``) from a box at least ``PICTURE_SIDE`` times the page's text
        height on its short side. The detector boxes a blurred photo or a chart whole, and
        the recognizer gives such a box a character ("國" at 0.69 for the picture above a
        caption); a large single character on a page (a sign's "福") reads surely."""
        height = it.timings.get("text_height")
        return (len(text.strip()) == 1 and score < PICTURE_SCORE and bool(height)
                and min(crop.shape[:2]) >= PICTURE_SIDE * height)

    def _assemble(self, it: Item, mine, owners, crops, texts, flipped, share, keep_pixels):
        """The result of one image from its crops (``mine``: their indices)."""
        timings = {k: round(v, 5) if isinstance(v, float) else v for k, v in it.timings.items()
                   if v is not None}
        timings["load"] = round(it.load_s, 5)
        dpi = self.pdf_dpi if _pdf_page(it.label) else None
        if it.error is not None:
            return OcrResult(it.label, error=it.error, timings=timings, elapsed_s=it.load_s,
                             device=self.device, pdf_dpi=dpi)
        lines, boxes, flips, standing, unread_script = [], [], [], [], []
        kept = [k for k in mine if texts[k][0] and texts[k][1] >= self.min_score]
        unread = len(mine) - len(kept)  # found, but read as nothing or under min_score
        # a simplified page's "凈" for "净", where the recognizer gave "净" a share (nothing
        # read again on a page without CJK, or with no traditional-only character)
        for i, t in simplified_variants(self, [texts[k][0] for k in kept],
                                        [crops[k] for k in kept]).items():
            texts[kept[i]] = (t, texts[kept[i]][1])
        cjk_page = any(_cjk_char(c) for k in kept for c in texts[k][0])  # full-width colons
        # a page reading a symbol somewhere ("★", "✓", "•", "©"): lines' dropped symbols
        symbol_page = symbol_page_of(texts[k][0] for k in kept)
        for k in kept:
            text, score = texts[k]
            if is_speck(crops[k], text) or is_shape_line(text) or is_rule_line(text) or \
                    is_leader_line(text) or \
                    (len(kept) > 1 and self._picture(it, crops[k], text, score)):
                continue
            text = strip_leader(letter_spaces(cell_spaces(text, crops[k]), crops[k]))
            text = digit_spaces(text, crops[k])
            text = tick_marks(edge_dashes(text, crops[k]), crops[k])
            text = one_width(page_number_spaces(text, crops[k]))
            text = empty_brackets(text, crops[k])   # monospaced "f( )" -> "f()"
            text = footnote_marks(text, crops[k])   # "notes1" of a raised "1" -> "notes¹"
            if not self.learnt_dashes:   # "8:00 - 18:30" of an en dash's wide ink -> "–"
                text = en_dashes(text, crops[k])
            text = full_width_colons(text, crops[k], cjk_page)   # a CJK form's "Tel：021"
            text = letter_case(text, crops[k])   # a keycap's "ctrl + c" of capital ink
            text = fraction_echoes(text)   # a photo's "1½2" for "½"
            text = lone_symbol(text, crops[k])   # a lone "☀" read "米", "♥" read "V"
            text = dropped_symbols(text, crops[k])   # "☎ 030 ..." read without its "☎"
            if symbol_page:   # "Rating ♥ 4 of 5" read "Rating 4 of 5", "☺" read "©"
                text = inline_symbols(text, crops[k])
            box = it.boxes[owners[k][1]][0]
            if could_be_box(text):
                text = box_marks(text, crops[k], _around(it.bgr, box))
            text = checkbox_text(text, crops[k])
            wide = unread_ink(text, crops[k])
            if wide:
                unread_script.append((text, wide))
            lines.append(TextLine(box.round(1).tolist(), text, score))
            boxes.append(box)
            flips.append(bool(flipped[k]))
            # a tall box's crop is turned to be read, unless it was read as it stands
            # (LineReading.read_bars_upright, read_tall_as_they_are): then taller than wide
            standing.append(crops[k].shape[0] > crops[k].shape[1])
        drop = checkbox_lines(lines, boxes, it.bgr)
        if drop:
            keep = [i for i in range(len(lines)) if i not in drop]
            lines, boxes = [lines[i] for i in keep], [boxes[i] for i in keep]
            flips, standing = [flips[i] for i in keep], [standing[i] for i in keep]
        for line, marked in zip(lines, cross_marks([line.text for line in lines]), strict=True):
            line.text = marked
        # "Mon 13° 7º" (a degree ring read as the ordinal) and "12°℃" (read twice)
        for line, t in zip(lines, degree_signs([line.text for line in lines]), strict=True):
            line.text = t
        sideways = sideways_page(it.boxes)  # (LineReading.crop turned its short boxes too)
        angles = [reading_angle(b, f, s, sideways)
                  for b, f, s in zip(boxes, flips, standing, strict=True)]
        rows = reading_rows(boxes, shape=it.bgr.shape[:2], angles=angles,
                            chars=[len(line.text.replace(" ", "")) for line in lines],
                            numbers=[is_amounts(line.text) for line in lines])
        framed = panel_rows(rows, boxes, it.bgr)
        rows = block_rows(rows, boxes) if framed == rows else framed
        for row in rows:  # a leader boxed with its label, its number boxed apart
            for i, t in zip(row, row_leaders([lines[i].text for i in row]), strict=True):
                lines[i].text = t
        rows = [kept for row in rows if (kept := [i for i in row if lines[i].text])]
        # a mark read twice across two overlapping boxes of a row ("birth: : 14.03")
        for line, t in zip(lines, overlap_repeats(rows, boxes, [line.text for line in lines]),
                           strict=True):
            line.text = t
        # a timetable cell's lone "–" read "一" (CJK one) on a page of no CJK print
        for line, t in zip(lines, lone_dashes(rows, boxes, [line.text for line in lines],
                                              it.bgr), strict=True):
            line.text = t
        # a table cell's lone dash the detector left unboxed ("East 2,105 – – 29.1%"),
        # and the page's lone dashes written alike
        cells, added = cell_dashes(rows, boxes, [line.text for line in lines], it.bgr)
        for line, t in zip(lines, cells, strict=True):
            line.text = t
        for r, place, box, t in added:
            lines.append(TextLine(box.round(1).tolist(), t, 1.0))
            boxes.append(box)
            angles.append(0.0)
            rows[r].insert(place, len(lines) - 1)
        # an arrow the detector left unboxed between two boxes of a row ("HAM → LHR" read
        # "HAM LHR"; only rows of two boxes or more, at least 0.6 of their height apart)
        for line, t in zip(lines, row_arrows(rows, boxes, [line.text for line in lines],
                                             it.bgr), strict=True):
            line.text = t
        # a dot leader's first dot read onto its name ("Croissant. 2.80")
        for line, t in zip(lines, leader_stubs(rows, boxes, [line.text for line in lines],
                                               it.bgr), strict=True):
            line.text = t
        # a key the detector left unboxed after a "+" ("Ctrl +" for "Ctrl + C" on a photo of
        # a shortcut sheet), read from its keycap (only lines ending in "+" are looked at)
        for line, t in zip(lines, dangling_keys(
                rows, boxes, [line.text for line in lines], it.bgr,
                read=lambda cs: [r for r, _ in self._recognize_once(cs, True)]), strict=True):
            line.text = t
        # a comb's one-character boxes ("M U E L L E R" in a form's cells) read as one field
        # (a photographed comb's strokes read as marks inside one box of the whole field:
        # its cells are cut between the strokes and read again by the recognizer)
        combed, joined = join_combs(rows, boxes, [line.text for line in lines], it.bgr,
                                    read=lambda cs: [t for t, _ in self._recognize_once(cs, True)])
        for k, t in enumerate(combed):
            if t != lines[k].text:
                lines[k].text, boxes[k] = t, joined[k]
                lines[k].box = joined[k].round(1).tolist()
        # a register's digits one to a filled cell ("0 4 5 2 3 kWh" on a meter) read as one
        # number, a cell the detector left unboxed read alone
        joined_r, boxed_r = join_registers(
            rows, boxes, [line.text for line in lines], it.bgr,
            read=lambda cs: [t for t, _ in self._recognize_once(cs, True)])
        for k, t in enumerate(joined_r):
            if t != lines[k].text:
                lines[k].text, boxes[k] = t, boxed_r[k]
                lines[k].box = boxed_r[k].round(1).tolist()
        rows = [kept for row in rows if (kept := [i for i in row if lines[i].text])]
        # a word the page prints twice, read once with a doubled letter lost ("amoxicilin"
        # under the title "Amoxicillin")
        for line, t in zip(lines, doubled_letters([line.text for line in lines]), strict=True):
            line.text = t
        text = monospace_text(rows, boxes, [line.text for line in lines], angles,
                              it.bgr) or \
            "\n".join(" ".join(lines[i].text for i in row) for row in rows)
        for r, row in enumerate(rows):
            for i in row:
                lines[i].row = r
        lines = [lines[i] for row in rows for i in row]
        rgb = it.bgr[..., ::-1] if keep_pixels else None
        result = OcrResult(it.label, lines, text, None, timings,
                           elapsed_s=it.load_s + share, size=tuple(it.bgr.shape[:2]),
                           device=self.device, pixels=rgb, unread=unread, pdf_dpi=dpi)
        result.warnings = [script_warning(it.label, t, wide, self.models.name)
                           for t, wide in unread_script]
        greek = next((m for ln in lines if (m := greek_warning(
            it.label, ln.text, self.alphabet, self.models.name))), "")
        if greek:
            result.warnings.append(greek)
        for message in result.warnings:  # pointing at the user's call, not at this line
            warnings.warn(message, UnreadScriptWarning, stacklevel=user_stacklevel())
        return result


class UnreadScriptWarning(UserWarning):
    """A line whose print stands far wider than what was read: a script the model set's
    dictionary lacks (the default ``ch`` reads Chinese, Japanese kana, Latin and Greek;
    not Hangul, Cyrillic, Arabic, Hebrew, Thai or Devanagari)."""


def script_warning(label, text: str, wide: float, model: str) -> str:
    """The one line said for a line :func:`.script_mix.unread_ink` finds unread."""
    shown = text if len(text) <= 40 else text[:37] + "..."
    reads = SCRIPTS_READ.get(model.split("+")[0])
    return (f"{label}: the line read {shown!r} has about {wide:.1f}x more print than it "
            f"read: a script {model!r} does not read"
            + (f" (it reads {reads}; not Hangul, Cyrillic, Arabic, Hebrew)" if reads else "")
            + ": %train ocr-rec adds one from labelled crops")


# what the shipped sets' dictionaries hold (round 35: 0 Hangul, Cyrillic, Arabic, Hebrew,
# Thai or Devanagari characters in any of them; kana 180 in ch, 5 in ch-v4, none in ch-tiny)
SCRIPTS_READ = {"ch": "Chinese, Japanese kana, Latin, Greek",
                "ch-tiny": "Chinese, Latin, Greek; no kana",
                "ch-v4": "Chinese, Latin"}


UPRIGHT_KEY = "skiff_upright"  # a recognizer's metadata: "1" when its crops come upright


# a recognizer's metadata: "1" when a fine-tune's labels wrote dashes (ocr_train's
# export_marks): its "-" and "–" are read as its user labelled them, en_dashes leaves them
DASHES_KEY = "skiff_dashes"


def says_upright(rec) -> bool:
    """Whether the recognizer file ``rec`` (a path; a shipped set's file is not looked at)
    carries ``skiff_upright`` = "1": the direction model is not run before it."""
    return _says(rec, UPRIGHT_KEY)


def says_learnt_dashes(rec) -> bool:
    """Whether the recognizer file ``rec`` carries ``skiff_dashes`` = "1": its dashes are
    kept as it reads them (:func:`en_dashes` not run)."""
    return _says(rec, DASHES_KEY)


def _says(rec, key: str) -> bool:
    if not isinstance(rec, (str, Path)):
        return False
    try:
        import onnx

        model = onnx.load(str(Path(rec).expanduser()), load_external_data=False)
    except Exception:  # noqa: BLE001 - a missing or broken file is reported where it loads
        return False
    return any(p.key == key and p.value.strip() == "1" for p in model.metadata_props)


def _pdf_page(label: str) -> bool:
    """Whether ``label`` names a page of a PDF (``file.pdf#page=N``, the file a PDF by its
    first bytes): its result carries the resolution it was rendered at."""
    base, _, page = str(label).rpartition("#page=")
    return bool(base) and page.isdigit() and is_pdf(base)


BULLETS = "•●·◦▪"  # a line already beginning with a bullet gets no second one


def checkbox_lines(lines, boxes, image) -> set[int]:
    """Write the state of a check box standing just before a line
    (:func:`.checkboxes.box_before`) first in that line's text, where the text begins with
    no box sign; returns the lines to drop: a box boxed apart and read as a mark or two
    ("一1", "V") whose place the frame covers. A frame that another, longer line overlaps
    is no box of this line's."""
    drop: set[int] = set()
    for i, line in enumerate(lines):
        if line.text[:1] in SIGNS:
            continue
        found = box_before(image, boxes[i])
        if found is None:
            continue
        state, (x0, y0, x1, y1) = found
        if state == "•" and line.text[:1] in BULLETS:  # the recognizer read the dot itself
            continue
        over = [j for j in range(len(lines)) if j != i and _overlaps(boxes[j], x0, y0, x1, y1)]
        if any(len(lines[j].text.replace(" ", "")) > 2 or j in drop for j in over):
            continue
        drop.update(over)
        line.text = f"{state} {line.text}"
    return drop


def _overlaps(box, x0, y0, x1, y1) -> bool:
    pts = np.asarray(box, np.float64)
    (a, b), (c, d) = pts.min(0), pts.max(0)
    return a < x1 and c > x0 and b < y1 and d > y0


def _around(image: np.ndarray, box: np.ndarray, margin: float = 0.3) -> np.ndarray:
    """The upright rectangle of ``box`` in ``image`` grown by ``margin`` of its height on
    every side (clipped to the image)."""
    pts = np.asarray(box, np.float64)
    pad = margin * float(pts[:, 1].max() - pts[:, 1].min())
    h, w = image.shape[:2]
    x0, y0 = (int(max(0, np.floor(v - pad))) for v in pts.min(0))
    x1 = int(min(w, np.ceil(pts[:, 0].max() + pad)))
    y1 = int(min(h, np.ceil(pts[:, 1].max() + pad)))
    return image[y0:y1, x0:x1]
