"""Job entry for kind ``ocr``: read files, folders, globs (or in-memory images), write JSONL.

``config`` (from :func:`skiff.kinds.ocr.to_config`)::

    {"inputs": ["scans/", "*.png", "page.jpg"], "model": "ch", "device": "auto",
     "batch_size": 8, "out": "results.jsonl" or None, "det_model": None, "rec_model": None,
     "dict": None, "use_cls": True, "use_det": True, "words": None, "min_score": 0.5,
     "threads": None, "overlays": 4, "pdf_dpi": 200, "pages": None or "1-3,7"}

A thread job from the notebook may pass ``config["images"]``: a list of arrays, PIL images or
paths.
Every image gives one JSON line (an unreadable one a line with ``error`` set); the first
``overlays`` images are also drawn with their boxes as PNG artifacts.
"""

from __future__ import annotations

import glob
import html
import itertools
import json
import os
import re
import time
from pathlib import Path

from skiff.kernels.backend.devices import DEFAULT_DEVICE

from .det import DetParams
from .hocr import HOCR_SUFFIXES, TSV_SUFFIXES, write_hocr, write_tsv
from .images import (
    PAGED_SUFFIXES,
    frame_count,
    is_pdf,
    pdf_document,
    pdf_password,
    pdf_scale,
    pixel_stretch,
)
from .pipeline import OcrPipeline, takes_work
from .result import OcrResult, OcrResults, draw_boxes

__all__ = ["run", "expand_inputs", "count_pages", "parse_pages", "select_pages", "OcrRun",
           "IMAGE_EXTENSIONS", "write_text", "write_array", "results_file", "read_done",
           "left_to_read", "skipped_line", "silent_line", "blank_line", "page_pixels",
           "reading_note"]

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".jpe", ".jfif", ".bmp", ".dib", ".tif", ".tiff",
                    ".webp", ".gif", ".pbm", ".pgm", ".ppm", ".pnm", ".tga", ".jp2", ".j2k",
                    ".jpx", ".jpf", ".avif", ".heic", ".heif", ".pdf")
BLANK_NAMES = 5  # blank pages named in a job's summary (the JSON lines hold every one)
KEEP = 50  # results kept in memory for display; the JSONL file has all of them
# what a page's own part of its time (found, read, its line written) is worth in pixels, the
# ETA's guess until a job's batches tell (JobState fits it): a sparse page of print costs
# ~0.43 s a page and ~0.07 s a MP on the CPU (6 MP a page), a dense one ~0.4 s and ~0.9 s a MP
# (0.4 MP): 1.5 MP keeps the ETA of either within 2x after its first batch (round 44)
PAGE_WORK = 1.5e6
# the pixels of a file the job cannot size from its header (damaged, empty, not an image):
# it gives its error line without decoding anything (round 45)
UNREAD_WORK = 1.0
AGAIN = " (named again)"  # ends a skipped input that an earlier one named (skipped_line)
TEXT_SUFFIXES = (".txt", ".text")  # --out FILE.txt: the text itself (write_text)
STDOUT = "-"  # --out -: the text on the terminal's stdout (the CLI prints text_of)
CSV_SUFFIXES = (".csv",)  # --out FILE.csv: each row of a page a CSV row, its cells columns
ARRAY_SUFFIXES = (".json",)  # --out FILE.json: one JSON array of the records (json.load)
# --out files made from the JSON lines at the end (those kept in the run folder)
WRITTEN = TEXT_SUFFIXES + CSV_SUFFIXES + HOCR_SUFFIXES + TSV_SUFFIXES + ARRAY_SUFFIXES


def _count(n: int, word: str, plural: str | None = None) -> str:
    """``1 image``, ``2 images``: a count and its noun."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _names_suffix(pattern: str) -> bool:
    """Whether a glob pattern's last part names a suffix of its own (``*.png``, ``scan?.dat``,
    ``*.[jp][pn]g``): its matches are what the user asked for, whatever they hold. ``*``,
    ``**/*`` and ``page*`` do not, and pick images and PDFs as a folder does."""
    suffix = Path(pattern).suffix
    return bool(suffix) and suffix != ".*" and not suffix.endswith("*")


def _at(path: str, cwd: str | None) -> str:
    """Where ``path`` is: a relative one from ``cwd`` (the folder a job started in), so that
    a ``%cd`` in the notebook while a thread job reads changes nothing; else as it is."""
    path = str(path)
    return os.path.join(cwd, path) if cwd and not os.path.isabs(path) else path


def natural_key(name: str) -> tuple:
    """Sort key of a file name in the order a file manager shows it: the numbers in it by
    value (``scan 2.png`` before ``scan 10.png``, where plain sorting put ``scan 10``, ``scan
    11`` ... between ``scan 1`` and ``scan 2``: a scanner's pages read out of order; round
    45), the rest as characters; names equal so (``p01``, ``p1``) by their characters."""
    parts = re.split(r"([0-9]+)", str(name))
    return tuple(int(part) if k % 2 else part for k, part in enumerate(parts)), str(name)


def _readable(path: str) -> bool:
    """Whether a folder's entry (or a pattern's match) is an input: a file, or a link to
    none (a broken link gets its error line, where it was left out unsaid: round 48); not a
    folder, pipe or socket (reading a pipe would wait for a writer)."""
    return os.path.isfile(path) or (os.path.islink(path) and not os.path.exists(path))


def expand_inputs(inputs: list[str], skipped: list[str] | None = None,
                  cwd: str | None = None) -> list[str]:
    """Paths from files, folders (their image and PDF files, sorted with numbers by value:
    :func:`natural_key`) and glob patterns (their matches sorted so), in order.

    A plain file is kept whatever its extension (it gets an error line if it is no image);
    a folder contributes the files with an image or PDF extension (its other files and its
    subfolders, hidden ones aside, are appended to ``skipped`` when it is given, a subfolder
    with a trailing ``/``, for the job to name) and a pattern (``**`` reaches into
    subfolders) the files it matches: all of them where its last part names a suffix
    (``*.png``, ``*.dat``), else, as a folder, its images and PDFs (``DIR/**/*``: the other
    files go to ``skipped``). Raises ``FileNotFoundError`` naming a path or pattern
    that matches nothing, or a folder without images. Relative inputs are looked for in
    ``cwd`` when it is given; the paths come back as written (relative ones relative). A file
    named twice (a folder and a file in it, overlapping patterns) comes once, where first
    named; the later naming goes to ``skipped`` ending with :data:`AGAIN`.
    """
    paths: list[str] = []
    for item in inputs:
        item = os.path.expanduser(str(item))
        at = _at(item, cwd)
        if os.path.isdir(at):
            names = sorted((p.name for p in Path(at).iterdir() if not p.name.startswith(".")),
                           key=natural_key)
            entries = [Path(item) / name for name in names]  # as written: relative stays so
            dirs = {name for name in names if os.path.isdir(os.path.join(at, name))}
            files = [p for p in entries if p.name not in dirs and
                     _readable(os.path.join(at, p.name))]
            found = [str(p) for p in files if p.suffix.lower() in IMAGE_EXTENSIONS]
            if skipped is not None:  # a pipe or socket named .png is no file: named, not read
                kept = {p.name for p in files}
                skipped.extend(str(p) + os.sep if p.name in dirs else str(p) for p in entries
                               if p.name in dirs or p.suffix.lower() not in IMAGE_EXTENSIONS
                               or p.name not in kept)
            if not found:
                raise FileNotFoundError(
                    f"no image or PDF files in folder {item!r} (looked for "
                    f"{', '.join(IMAGE_EXTENSIONS)}; use {os.path.join(item, '**', '*.png')!r} "
                    "for subfolders)")
            paths.extend(found)
        elif os.path.exists(at):
            paths.append(item)
        elif _PAGE_REF.match(item) and os.path.isfile(_at(_PAGE_REF.match(item)["path"], cwd)):
            paths.append(item)  # a page's label as the results give it: that page alone
        elif glob.has_magic(item):
            found = sorted((p for p in glob.glob(item, root_dir=cwd or None, recursive=True)
                            if _readable(_at(p, cwd))), key=natural_key)
            if not found:
                raise FileNotFoundError(f"no files match {item!r}")
            if not _names_suffix(item):  # 'scans/**/*' as a folder: its images and PDFs
                others = [p for p in found if Path(p).suffix.lower() not in IMAGE_EXTENSIONS]
                found = [p for p in found if Path(p).suffix.lower() in IMAGE_EXTENSIONS]
                if skipped is not None:
                    skipped.extend(others)
                if not found:
                    raise FileNotFoundError(
                        f"no image or PDF files match {item!r} (looked for "
                        f"{', '.join(IMAGE_EXTENSIONS)})")
            paths.extend(found)
        elif re.match(r"^[a-z][a-z0-9+.-]*://", item, re.I):
            raise FileNotFoundError(f"{item!r} is an address: skiff reads files here and "
                                    f"fetches nothing; download it first (curl -O ...) and "
                                    f"give the file")
        else:
            raise FileNotFoundError(f"no such file, folder or pattern: {item!r}")
    # a file named twice (a folder and a file in it, two patterns that overlap, 'a.png' and
    # './a.png') is read once, where first named: it was read as often as named (round 48)
    seen: set[str] = set()
    once: list[str] = []
    for path in paths:
        key = os.path.normcase(os.path.abspath(_at(path, cwd)))
        page = _PAGE_REF.match(path)
        whole = os.path.normcase(os.path.abspath(_at(page["path"], cwd))) \
            if page and not os.path.exists(_at(path, cwd)) else None
        if key in seen or whole in seen:  # (a page of a document named whole before it)
            if skipped is not None:
                skipped.append(path + AGAIN)
            continue
        seen.add(key)
        once.append(path)
    return once


def count_pages(path: str) -> int:
    """Pages in a PDF or multi-page TIFF, frames in an animation (GIF, APNG, WebP), else 1
    (1 also for anything unreadable)."""
    try:
        if is_pdf(path):
            with pdf_document(path) as doc:
                return max(1, len(doc))
        if path.lower().endswith(PAGED_SUFFIXES):
            from PIL import Image

            with Image.open(path) as im:
                return frame_count(im)
    except Exception:
        return 1
    return 1


_PAGE_REF = re.compile(r"^(?P<path>.+)#page=(?P<page>[0-9]+)$")


def page_pixels(item, pdf_dpi: float = 200) -> list[float] | None:
    """The pixels of each page ``item`` gives (what the job reads, in order), read cheaply:
    an image file's size from its header (no decoding; a multi-page TIFF's or an
    animation's each page), a PDF page's from its box at ``pdf_dpi``, a ``file#page=N``
    label that page, an array's or a PIL image's shape. None where it cannot be read so
    (bytes, an unreadable or missing file): the job then reports no work, never a wrong one.
    """
    try:
        if isinstance(item, (str, os.PathLike)):
            path, only = os.path.expanduser(str(item)), None
            match = _PAGE_REF.match(path)
            if match and not os.path.exists(path) and os.path.exists(match["path"]):
                path, only = match["path"], int(match["page"])
            if not os.path.isfile(path):
                return None
            if is_pdf(path):
                with pdf_document(path) as doc:
                    out = []
                    for k in [only] if only else range(1, len(doc) + 1):
                        if not 1 <= k <= len(doc):
                            return None
                        page = doc[k - 1]
                        try:
                            w, h = page.get_size()
                        finally:
                            page.close()
                        scale = pdf_scale(w, h, dpi=float(pdf_dpi))
                        out.append(float(round(w * scale) * round(h * scale)))
                    return out or None
            import warnings

            from PIL import Image

            from .images import HEIF_SUFFIXES, _heif_opener

            if Path(path).suffix.lower() in HEIF_SUFFIXES:  # as the job opens it
                _heif_opener()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                with Image.open(path) as im:
                    frames = frame_count(im)
                    if only is not None and not 1 <= only <= frames:
                        return None
                    if frames == 1 or im.format != "TIFF":  # an animation: one size
                        sx, sy = pixel_stretch(im.info.get("dpi"))
                        return [float(im.width * im.height * sx * sy)] * \
                            (1 if only or frames == 1 else frames)
                    out = []
                    for k in [only] if only else range(1, frames + 1):
                        im.seek(k - 1)  # a TIFF page's header, not its pixels
                        sx, sy = pixel_stretch(im.info.get("dpi"))
                        out.append(float(im.width * im.height * sx * sy))
                    return out
        size = getattr(item, "size", None)
        if isinstance(size, tuple) and len(size) == 2 and hasattr(item, "mode"):  # PIL
            return [float(size[0] * size[1])]
        shape = getattr(item, "shape", None)
        if shape is not None and len(shape) >= 2 and not isinstance(item, (bytes, str)):
            return [float(shape[0] * shape[1])]
    except Exception:
        return None
    return None


def job_pixels(items: list, pdf_dpi: float = 200, cwd: str | None = None) -> list | None:
    """:func:`page_pixels` of each of ``items`` (relative paths read from ``cwd``), or None
    where any of them that is not a path cannot be read so. A path that cannot (a damaged,
    empty or missing file, a page a document lacks) ends at once with its error line: its
    one page weighs ``UNREAD_WORK``, and the job's other pages keep their pixels (one such
    file in a folder took the whole job's ETA back to counting pages, round 45)."""
    out = []
    for item in items:
        path = isinstance(item, (str, os.PathLike))
        pages = page_pixels(_at(item, cwd) if path else item, pdf_dpi)
        if not pages or not all(p > 0 for p in pages):
            if not path:
                return None
            pages = [UNREAD_WORK]
        out.append(pages)
    return out


_PAGES = re.compile(r"^\s*([0-9]+)\s*(?:(-)\s*([0-9]*)\s*)?$")


def parse_pages(spec: str) -> list[tuple[int, int | None]]:
    """``--pages``: ``"3"``, ``"1-5"``, ``"1,4,9-"`` (to the last page) as ranges of pages
    counted from 1, ``(first, last)`` with ``last`` None for the last page. Raises
    ``ValueError`` naming the part that is not a page or range."""
    ranges: list[tuple[int, int | None]] = []
    for part in str(spec).split(","):
        m = _PAGES.match(part)
        if not m or int(m[1]) < 1 or (m[3] and int(m[3]) < int(m[1])):
            raise ValueError(f"--pages: {part.strip()!r} is not a page or a range of pages "
                             f"(pages count from 1: 3, 1-5, 2,4,9- for 9 to the last)")
        first = int(m[1])
        ranges.append((first, first) if not m[2] else (first, int(m[3]) if m[3] else None))
    return ranges


def select_pages(paths: list[str], spec: str | None, cwd: str | None = None,
                 short: list | None = None) -> list[str]:
    """``paths`` with each PDF, multi-page TIFF and animation replaced by its pages in ``spec``
    (:func:`parse_pages`), as ``"file.pdf#page=N"`` labels in the order asked; other images
    stay as they are. A document with none of the pages asked for gives the first of them,
    so that its result says how many pages it has; with ``short`` (a list) it is left out
    and ``(path, its pages)`` added there instead: a folder of PDFs of different lengths
    reads the pages that exist and notes the rest (round 45)."""
    if not spec:
        return list(paths)
    ranges = parse_pages(spec)
    out: list[str] = []
    for path in paths:
        at = _at(path, cwd)
        multi = path.lower().endswith(PAGED_SUFFIXES) and count_pages(at) > 1
        if not is_pdf(at) and not multi:  # unreadable: its own error line says why
            out.append(path)
            continue
        n = count_pages(at)
        pages = [k for a, b in ranges for k in range(a, min(n, b or n) + 1)]
        if not pages and short is not None and n > 0:
            short.append((path, n))
            continue
        out.extend(f"{path}#page={k}" for k in (pages or [ranges[0][0]]))
    return out


def short_line(short: list, spec: str | None) -> str:
    """One line naming the documents with none of the pages ``--pages`` asked for (not
    read): ``2 documents have none of pages 10-: fax batch.tif (4 pages), a.pdf (2 pages)``."""
    shown = [f"{os.path.basename(str(p))} ({_count(int(n), 'page')})" for p, n in short[:5]]
    more = ", ..." if len(short) > 5 else ""
    have = "has" if len(short) == 1 else "have"
    return (f"{_count(len(short), 'document')} {have} none of --pages {spec}, not read: "
            f"{', '.join(shown)}{more}")


class OcrRun:
    """The outcome of an OCR job: counts, throughput, where the JSONL went, and the first
    results (all of them for up to ``KEEP`` images)."""

    def __init__(self, results: OcrResults, *, images: int, errors: int, lines: int,
                 seconds: float, out: str | None, device: str, model: str,
                 skipped: list[str] | None = None, text_out: str | None = None,
                 silent: int = 0, unread: int = 0, kept: int = 0, whole: bool = False,
                 blank: list[str] | None = None, files: int | None = None,
                 short: tuple[int, str] | None = None):
        self.results = results
        # the documents with none of the pages --pages asked for, not read: (how many, the
        # line naming them) (round 45)
        self.short = short or (0, None)
        # the files the pages came from (a PDF's 12 pages are 12 results, one file); None
        # for notebook objects
        self.files = files
        self.kept = kept  # pages a resumed job kept from the run it goes on with (not read)
        self.text_out = text_out  # the file --out wrote (FILE.txt text, FILE.csv rows), else None
        self.skipped = list(skipped or [])  # what the folders held besides images (subfolder/)
        self.images, self.errors, self.lines = images, errors, lines
        # images that gave no line though the detector found regions in them, and those
        # regions: read as nothing or under min_score (too faint, or a script the model lacks)
        self.silent, self.unread = silent, unread
        # pages read without an error where nothing looked like text: a separator sheet, a
        # scan that came out white (their labels; round 45)
        self.blank = list(blank or [])
        self.whole = whole  # --no-det: each image read whole, no detector ran
        self.seconds, self.out, self.device, self.model = seconds, out, device, model

    @property
    def text(self) -> str:
        return "\n\n".join(r.text for r in self.results)

    def to_pandas(self):
        """Every text line the job read, a row each (file, page, row, line, text, score,
        box x0 y0 x1 y1, error): from its JSON lines when it wrote them (all its images),
        else the results it kept (the first ``KEEP``)."""
        from .result import lines_frame

        if self.out and os.path.exists(self.out):
            return lines_frame(_records(self.out))
        return self.results.to_pandas()

    def __getitem__(self, i) -> OcrResult:
        return self.results[i]

    def __len__(self) -> int:
        return len(self.results)

    def to_json(self) -> dict:
        return {"images": self.images, "errors": self.errors, "lines": self.lines,
                "seconds": round(self.seconds, 3),
                "images_per_s": round((self.images - self.kept) / self.seconds, 3)
                if self.seconds else None, "kept": self.kept,
                "out": self.out, "device": self.device, "model": self.model,
                "skipped": self.skipped, "text_out": self.text_out,
                "silent": self.silent, "unread": self.unread, "whole": self.whole,
                "blank": len(self.blank), "blank_pages": self.blank[:BLANK_NAMES],
                "files": self.files, "short": self.short[0], "short_line": self.short[1],
                "results": self.results.to_json()}

    def _repr_html_(self) -> str:
        head = (f"<div><b>OCR</b>: {pages_files(self.images, self.files)}, "
                f"{_count(self.lines, 'line')}, {_count(self.errors, 'error')}, "
                f"{self.seconds:.2f} s on {html.escape(self.device)}"
                + (f", written to <code>{html.escape(self.out)}</code>" if self.out else "")
                + "</div>")
        if self.silent:
            said = silent_line(self.silent, self.unread, self.model, self.whole)
            head += f"<div>{html.escape(said)}</div>"
        if self.blank:
            head += f"<div>{html.escape(blank_line(len(self.blank), self.blank))}</div>"
        if self.short[1]:
            head += f"<div>{html.escape(self.short[1])}</div>"
        return head + self.results._repr_html_()

    def __repr__(self) -> str:
        return (f"OcrRun({_count(self.images, 'image')}, {_count(self.lines, 'line')}, "
                f"{_count(self.errors, 'error')}, {self.seconds:.2f} s, "
                f"device={self.device!r}, out={self.out!r})")

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


_CACHE: dict[tuple, OcrPipeline] = {}  # the last pipelines used, so a notebook loads once


def _pipeline(config: dict) -> OcrPipeline:
    keys = ("model", "device", "batch_size", "threads", "det_model", "rec_model", "dict",
            "use_cls", "use_det", "words", "min_score", "pdf_dpi", "precision",
            "det_params")
    key = tuple(str(config.get(k)) for k in keys)
    if key not in _CACHE:
        while len(_CACHE) >= 2:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = _new_pipeline(config)
    return _CACHE[key]


def _new_pipeline(config: dict) -> OcrPipeline:
    return OcrPipeline(config.get("model", "ch"), device=config.get("device") or DEFAULT_DEVICE,
                       batch_size=int(config.get("batch_size", 8)),
                       threads=config.get("threads"), det_model=config.get("det_model"),
                       rec_model=config.get("rec_model"), dict=config.get("dict"),
                       use_cls=config.get("use_cls", True),
                       use_det=config.get("use_det", True),
                       words=config.get("words"),
                       min_score=float(config.get("min_score", 0.5)),
                       pdf_dpi=float(config.get("pdf_dpi") or 200),
                       precision=config.get("precision") or "auto",
                       # --det-params: the detector's knobs (RapidOCR's box_thresh, ...)
                       params=(DetParams(**config["det_params"])
                               if config.get("det_params") else None))


def device_reason(config: dict, pipe) -> str:
    """Why the job reads on ``pipe.device``: a job launched with ``--device auto`` gets the
    device resolved at launch (its config's ``device_asked`` says auto was asked), which
    the pipeline would call "as asked"; it is said as auto's reason instead."""
    reason = pipe.device_reason
    if reason == "as asked" and str(config.get("device_asked") or "").lower() == "auto":
        from .engine import resolve_ocr_device

        device, why = resolve_ocr_device("auto")
        if device == pipe.device:
            return why
    return reason


def run(config: dict, reporter) -> OcrRun:
    """Read every input and report progress per image; see the module docstring. The
    config's ``password`` opens password-protected PDFs for every look at them (pages read,
    page counts, the ETA's sizes, hOCR's page sizes)."""
    with pdf_password(config.get("password")):
        return _run(config, reporter)


def _run(config: dict, reporter) -> OcrRun:
    pipe = _pipeline(config)
    images = config.get("images")
    # relative paths are read from the folder the job started in (a %cd in the notebook
    # while a thread job reads moves nothing) and recorded as written
    cwd = config.get("cwd")
    skipped: list[str] = []
    short: list = []  # documents with none of the pages asked for: noted, not read
    if images is not None:
        items = list(images) if isinstance(images, (list, tuple)) else [images]
        keep_pixels = True
    else:
        items = select_pages(expand_inputs(config.get("inputs") or [], skipped, cwd),
                             config.get("pages"), cwd, short=short)
        keep_pixels = False
        if skipped and reporter.rank == 0:  # said once, in the log and the summary
            reporter.log(skipped_line(skipped), level="warning")
        if short and items and reporter.rank == 0:
            reporter.log(short_line(short, config.get("pages")), level="warning")
    if not items and short:  # every document short of the pages asked: each its error
        # line ("'a.pdf' has 1 page, asked for page 5"), the job fails (a page asked of
        # one document that lacks it is no folder's difference in lengths)
        items, short = select_pages([p for p, _n in short], config.get("pages"), cwd), []
    total = len(items)
    if not items:
        raise ValueError("no images to read: give files, folders or patterns")
    out = config.get("out")  # (--out - is None here: the CLI prints the text from the JSONL)
    text_out = None
    if out and Path(out).suffix.lower() in WRITTEN:  # the JSON lines beside
        text_out = out
        out = str(Path(reporter.run_dir) / "results.jsonl") if reporter.run_dir is not None \
            else f"{text_out}.jsonl"
    if out is None and reporter.run_dir is not None:
        out = str(Path(reporter.run_dir) / "results.jsonl")
    final_out, rank, world = out, reporter.rank, reporter.world_size
    kept_records: list[dict] = []
    every = [str(item) for item in items] if images is None else []
    if images is None and config.get("resume_from"):  # jobs resume: what was read is kept
        done = read_done(config["resume_from"], every)
        kept_records = list(done.values())
        items = left_to_read(every, done, cwd)
        if reporter.rank == 0:
            reporter.log(f"resuming: {len(kept_records)} pages read by the earlier job kept "
                         f"from {config['resume_from']}, {len(items)} inputs left to read")
        if world > 1:  # every rank has read the parts before any rank writes its own
            from mpi4py import MPI

            MPI.COMM_WORLD.Barrier()
    if world > 1:  # ranks share the images round-robin; rank 0 joins their JSONL parts
        items = items[rank::world]
        out = f"{final_out}.part{rank}" if final_out else None
        split = getattr(reporter, "split_progress", None)
        if split is not None:  # the job's progress counts every rank's part, not rank 0's
            split()
    if images is None:  # a PDF or TIFF of several pages gives one result per page
        total = sum(count_pages(_at(p, cwd)) for p in items)
    reason = device_reason(config, pipe)
    reporter.info(device=pipe.device, device_reason=reason, images=len(items),
                  **{f"model_{k}": v for k, v in pipe.models.describe().items()})
    # 'OCR of 15 pages of 13 files', not '13 images', where documents give several pages
    said = pages_files(total, file_count(items, cwd)) if images is None else \
        _count(len(items), "image")
    reporter.log(f"OCR of {said} with {pipe.models.name} on {pipe.device} ({reason})")
    overlays = int(config.get("overlays", 4))
    kept = OcrResults()
    n = errors = lines = silent = unread = 0
    blank: list[str] = []  # pages read where the detector found nothing
    drawn = 0  # overlay images written
    t0 = time.perf_counter()
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    fh = open(out, "w", encoding="utf-8") if out else None
    if kept_records and rank == 0:  # first, so that a second cancel loses none of them
        for record in kept_records:
            n += 1
            errors += record.get("error") is not None
            lines += len(record.get("lines") or [])
            unread += int(record.get("unread") or 0)
            silent += bool(record.get("unread")) and not record.get("lines")
            if _is_blank(record):
                blank.append(str(record.get("image")))
            if fh is not None:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            if len(kept) < KEEP:
                kept.append(_result_of(record))
        if fh is not None:
            fh.flush()
    # a resumed job's progress counts the whole job, the pages kept as done ("13/20", not
    # "1/8"); ranks that share the work each add a share of them, since the job's progress
    # sums the ranks' parts and its rate scales rank 0's by its part of the whole
    offset = len(kept_records) // world + (rank < len(kept_records) % world)
    # the work (pixels) of each page this rank reads, and of its share of the kept pages:
    # the ETA weighs a large page more than a small image; None where a size is unknown
    pdf_dpi = float(config.get("pdf_dpi") or 200)
    work = job_pixels(items, pdf_dpi, cwd) if items and takes_work(reporter) else None
    kept_work = 0.0
    if work is not None and offset:
        kept_px = job_pixels([r["image"] for r in kept_records], pdf_dpi, cwd)
        if kept_px is None:
            work = None
        else:  # this rank's share of the kept pages' work
            kept_work = sum(map(sum, kept_px)) * offset / len(kept_records)
    counted = _Flushed(_Kept(reporter, offset, kept_work) if offset else reporter)
    if offset and not items:  # nothing left to read: the bar says so
        reporter.progress(offset, offset, unit="image")
    elif items and hasattr(reporter, "info"):
        # the models are made: the first images' time counts from here (a batch's results
        # come out together, so the gaps between them are no rate: round 43, JobState._from)
        # with the pipeline's batch (its results come out together) and a page's own part
        # of the time in pixels, which JobState fits from the batches' times (round 44)
        reporter.info(progress_from={"done": offset,
                                     "work": kept_work if work is not None else None,
                                     "batch": int(getattr(pipe, "step", 1) or 1),
                                     "per_unit": PAGE_WORK})
    try:
        written = _Written(items, cwd)
        for result in (pipe.run(written.read, reporter=counted, total=total,
                                keep_pixels=keep_pixels or overlays > 0, work=work)
                       if items else ()):
            label = written.label(result.image)
            if label != result.image:  # where it was read: what OcrResult._rgb may read again
                result.source, result.image = result.image, label
            n += 1
            errors += result.error is not None
            lines += len(result.lines)
            unread += result.unread
            silent += bool(result.unread) and not result.lines
            if result.error is None and not result.lines and not result.unread:
                blank.append(str(result.image))
            if fh is not None:  # flushed: a killed job keeps every page it read
                fh.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
                fh.flush()
            # the first pages read, numbered from 1: a damaged file is no page drawn (a
            # folder led by two of them had overlay-003 and -004 alone; round 45)
            if drawn < overlays and result.error is None \
                    and reporter.run_dir is not None and rank == 0:
                drawn += 1
                _overlay(result, drawn, reporter)
            if not keep_pixels or n > 8:  # flat memory: pixels only for the first few
                result.pixels = None
            if len(kept) < KEEP:
                kept.append(result)
    finally:
        if fh is not None:
            fh.close()
    seconds = time.perf_counter() - t0
    if world > 1:
        n, errors, lines, silent, unread = _join_ranks(final_out, world,
                                                       (n, errors, lines, silent, unread))
        out = final_out
    if (kept_records or world > 1) and out and every and rank == 0:
        # the results in the order of the inputs: kept ones were written first, and ranks'
        # parts were joined a line from each in turn (a PDF's pages are several lines)
        _in_input_order(out, every)
    if world > 1 and out and rank == 0 and os.path.exists(out):  # every rank's blank pages
        blank = [str(r.get("image")) for r in _records(out) if _is_blank(r)]
    elif (kept_records or world > 1) and out and rank == 0 and os.path.exists(out):
        order = {str(r.get("image")): k for k, r in enumerate(_records(out))}
        blank.sort(key=lambda label: order.get(label, len(order)))  # in the inputs' order
    reporter.metric("images_per_s", (n - len(kept_records)) / seconds if seconds else 0.0)
    reporter.metric("errors", errors)
    if out and reporter.run_dir is not None and rank == 0:
        reporter.artifact("results.jsonl", out, kind="jsonl")
    if text_out and rank == 0:
        suffix = Path(text_out).suffix.lower()
        table = suffix in CSV_SUFFIXES
        if suffix in HOCR_SUFFIXES or suffix in TSV_SUFFIXES:
            (write_hocr if suffix in HOCR_SUFFIXES else write_tsv)(
                _records(out), text_out, pdf_dpi=float(config.get("pdf_dpi") or 200))
        elif suffix in ARRAY_SUFFIXES:
            write_array(out, text_out)
        else:
            (write_csv if table else write_text)(out, text_out)
        if reporter.run_dir is None:  # no run folder to keep the JSON lines in
            os.remove(out)
            out = None
        else:
            reporter.artifact(f"results{suffix if suffix in WRITTEN else '.txt'}",
                              text_out, kind="text")
    return OcrRun(kept, images=n, errors=errors, lines=lines, seconds=seconds, out=out,
                  skipped=skipped, text_out=text_out, silent=silent, unread=unread,
                  blank=blank if rank == 0 else [],
                  device=pipe.device, model=pipe.models.name,
                  kept=len(kept_records) if rank == 0 else 0, whole=not pipe.use_det,
                  files=file_count(every, cwd) if every else None,
                  short=(len(short), short_line(short, config.get("pages")))
                  if short and rank == 0 else None)


class _Written:
    """The items a job reads, relative paths joined to ``cwd`` (:func:`_at`: ``read``), and
    the labels of their results as the user wrote them (``label``: a page of a document as
    ``written.pdf#page=N``)."""

    def __init__(self, items: list, cwd: str | None):
        self.read = [_at(item, cwd) if isinstance(item, (str, os.PathLike)) else item
                     for item in items]
        self._back = {str(at): str(item) for at, item in zip(self.read, items)
                      if isinstance(item, (str, os.PathLike)) and str(at) != str(item)}

    def label(self, label):
        if not self._back or not isinstance(label, str):
            return label
        if label in self._back:
            return self._back[label]
        base, sep, page = label.rpartition("#page=")
        return f"{self._back[base]}{sep}{page}" if sep and base in self._back else label


class _Kept:
    """``reporter`` whose progress adds ``offset`` (pages a resumed job kept) to done and
    total, and ``work`` (their pixels) to ``work`` and ``work_total`` where given;
    everything else is the reporter's."""

    def __init__(self, reporter, offset: int, work: float = 0.0):
        self._reporter, self._offset, self._work = reporter, int(offset), float(work)
        self.takes_work = takes_work(reporter)
        self.takes_ready = _takes_ready(reporter)

    def progress(self, done, total=None, **kwargs):
        if kwargs.get("work") is not None and kwargs.get("work_total") is not None:
            kwargs["work"] += self._work
            kwargs["work_total"] += self._work
        return self._reporter.progress(done + self._offset,
                                       None if total is None else total + self._offset,
                                       **kwargs)

    def __getattr__(self, name):
        return getattr(self._reporter, name)


def _takes_ready(reporter) -> bool:
    """Whether ``reporter.progress`` takes ``ready`` (the units of a batch read and not yet
    given out: the job's ETA counts them done; ``RunReporter``'s, round 45); a wrapper here
    says so for what it wraps, since its own ``progress`` takes any keyword."""
    known = getattr(reporter, "takes_ready", None)
    if isinstance(known, bool):
        return known
    import inspect

    try:
        return "ready" in inspect.signature(reporter.progress).parameters
    except (TypeError, ValueError, AttributeError):
        return False


class _Flushed:
    """``reporter`` whose ``check`` (the pipeline's, before each batch) first writes the
    progress its rate limit held back: a batch's results are given out together, and the
    last of them, held, was replaced by the next batch's first, so the job's rate had the
    first result's work over the whole batch's time (round 43). Everything else is the
    reporter's."""

    def __init__(self, reporter):
        self._reporter = reporter
        self.takes_work = takes_work(reporter)
        self.takes_ready = _takes_ready(reporter)

    def check(self):
        flush = getattr(self._reporter, "flush", None)
        if callable(flush):
            flush()
        return self._reporter.check()

    def __getattr__(self, name):
        return getattr(self._reporter, name)


def results_file(config: dict, run_dir) -> str:
    """Where a job run with ``config`` in ``run_dir`` wrote its JSON lines: its ``--out``,
    else (no ``--out``, or a ``.txt``/``.csv`` one) the run folder's ``results.jsonl``."""
    out = config.get("out")
    if out and Path(out).suffix.lower() not in WRITTEN:
        return str(out)
    return str(Path(run_dir) / "results.jsonl")


def _labels(jsonl: str) -> list[str]:
    """``jsonl`` and the parts of ranks that had not been joined (a job of ``--np N``
    stopped before its end)."""
    return [jsonl] + sorted(glob.glob(glob.escape(jsonl) + ".part[0-9]*"))


def read_done(jsonl: str, items: list[str]) -> dict[str, dict]:
    """The records of an earlier run's results (``jsonl`` and its ranks' parts) that read
    one of ``items`` (or a page of one) without an error, by image label. A line cut short
    by a killed job, or a record of another input, is left out; a missing file gives none."""
    wanted = set(items)
    bases = {item for item in items if "#page=" not in item}
    done: dict[str, dict] = {}
    for path in _labels(jsonl):
        try:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    label = record.get("image") if isinstance(record, dict) else None
                    if not isinstance(label, str) or record.get("error") is not None:
                        continue
                    base = label.rsplit("#page=", 1)[0]
                    if label in wanted or base in bases:
                        done[label] = record
        except OSError:
            continue
    return done


def left_to_read(items: list[str], done: dict, cwd: str | None = None) -> list[str]:
    """``items`` less what ``done`` holds (:func:`read_done`): a document some of whose
    pages were read gives its other pages as ``file.pdf#page=N``."""
    pages: dict[str, set[int]] = {}
    for label in done:
        base, _, page = label.rpartition("#page=")
        if base and page.isdigit():
            pages.setdefault(base, set()).add(int(page))
    left: list[str] = []
    for item in items:
        if item in done:
            continue
        if "#page=" not in item and item in pages:
            left.extend(f"{item}#page={k}" for k in range(1, count_pages(_at(item, cwd)) + 1)
                        if k not in pages[item])
        else:
            left.append(item)
    return left


def _result_of(record: dict) -> OcrResult:
    """An :class:`OcrResult` (no pixels) from its JSON record."""
    from .result import TextLine

    lines = [TextLine(line["box"], line["text"], float(line.get("score", 0.0)),
                      int(line.get("row", 0))) for line in record.get("lines") or []]
    return OcrResult(record.get("image"), lines, record.get("text", ""),
                     error=record.get("error"), unread=int(record.get("unread") or 0),
                     elapsed_s=float(record.get("elapsed_s") or 0.0),
                     size=tuple(record["size"]) if record.get("size") else None,
                     pdf_dpi=record.get("dpi"))


def _in_input_order(out: str, items: list[str]) -> None:
    """Rewrite ``out`` with its records in the order of ``items`` (a document's pages in
    page order), a resumed job's kept records and new ones having been written apart."""
    rank = {item: i for i, item in enumerate(items)}

    def key(record: dict) -> tuple:
        label = str(record.get("image"))
        base, _, page = label.rpartition("#page=")
        if label in rank:
            return rank[label], 0
        return (rank.get(base, len(items)), int(page) if page.isdigit() else 0)

    records = sorted(_records(out), key=key)  # stable: ties keep their order
    tmp = f"{out}.sorting"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    os.replace(tmp, out)


def _records(jsonl: str) -> list[dict]:
    """The JSON records of a results file, one a line (blank lines skipped)."""
    with open(jsonl, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def text_of(jsonl: str) -> str:
    """The text of the results in ``jsonl``: one image's text as it is; several, each after
    a line ``=== image ===`` and followed by an empty line (an image that could not be read
    says why there). Ends with a newline."""
    docs = _records(jsonl)
    if len(docs) == 1 and not docs[0].get("error"):
        return docs[0]["text"] + "\n"
    parts = []
    for doc in docs:
        body = f"(not read: {doc['error']})" if doc.get("error") else doc["text"]
        parts.append(f"=== {doc['image']} ===\n{body}\n\n")
    return "".join(parts)


def write_text(jsonl: str, path: str) -> str:
    """The text of the results in ``jsonl`` (:func:`text_of`) written to ``path``. Returns
    ``path``."""
    text = text_of(jsonl)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def write_array(jsonl: str, path: str) -> str:
    """The records of ``jsonl`` as one JSON array written to ``path`` (what ``json.load``
    and ``pandas.read_json`` read; a ``.json`` file of JSON lines was neither). Returns
    ``path``."""
    records = _records(jsonl)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(records, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    return path


def write_csv(jsonl: str, path: str) -> str:
    """The results in ``jsonl`` as a table written to ``path``: each row of a page (its
    lines side by side: a table's cells, a receipt's item and price) one CSV row, its lines
    the columns (:func:`.grid.grid_rows`: the rows of a table keep their empty cells, each
    cell in its column). One image: its rows alone; several: each row led by the image's name (an
    image that could not be read: one row saying why; a page without text: its name
    alone, so that every page read has a row), every row padded with empty cells to
    the widest (``pandas.read_csv(path, header=None)`` reads it). UTF-8 with a byte-order
    mark, so a spreadsheet opens Chinese text as such. Returns ``path``."""
    import csv

    from .grid import grid_rows

    docs = _records(jsonl)
    rows: list[list[str]] = []
    alone = len(docs) == 1 and not docs[0].get("error")
    for doc in docs:
        lead = [] if alone else [doc["image"]]
        if doc.get("error"):
            rows.append(lead + [f"(not read: {doc['error']})"])
            continue
        page_rows = grid_rows(doc.get("lines") or [])  # a table's cells in its columns
        if not page_rows and lead:  # a blank page keeps its row: read, no text (round 45)
            page_rows = [[]]
        for row in page_rows:
            rows.append(lead + row)
    # every row as wide as the widest: a reader that takes the first row's width (pandas'
    # read_csv) refused a file whose later rows had more cells ("Expected 2 fields ...")
    width = max((len(row) for row in rows), default=0)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8-sig", newline="") as fh:
        csv.writer(fh).writerows(row + [""] * (width - len(row)) for row in rows)
    return path


def skipped_line(skipped: list[str]) -> str:
    """One line naming what the folders given held besides images and PDFs (a subfolder
    ends with a separator) and the inputs named again (ending with :data:`AGAIN`): ``skipped
    2 files that are not an image or PDF: notes.txt, logo.svg; 1 subfolder not read: 2024/
    (DIR/**/* reads subfolders); 1 file named more than once, read once: a.png``."""
    again = list(dict.fromkeys(os.path.normpath(p.removesuffix(AGAIN)) for p in skipped
                               if p.endswith(AGAIN)))  # each file once
    folders = [p for p in skipped if p.endswith(("/", os.sep))]
    files = [p for p in skipped if p not in folders and not p.endswith(AGAIN)]

    def names(paths):
        shown = [os.path.basename(p.rstrip("/" + os.sep)) + ("/" if p in folders else "")
                 for p in paths[:5]]
        return ", ".join(shown) + (", ..." if len(paths) > 5 else "")

    parts = []
    if files:
        parts.append(f"skipped {len(files)} file{'s' * (len(files) != 1)} that "
                     f"{'are' if len(files) != 1 else 'is'} not an image or PDF: {names(files)}")
    if folders:
        parts.append(f"{len(folders)} subfolder{'s' * (len(folders) != 1)} not read: "
                     f"{names(folders)} (DIR/**/* reads subfolders)")
    if again:
        parts.append(f"{_count(len(again), 'file')} named more than once, read once: "
                     f"{names(again)}")
    return "; ".join(parts)


def _is_blank(record: dict) -> bool:
    """Whether a JSON record is a page read without an error where the detector found
    nothing (no line, no region read as nothing)."""
    return (isinstance(record, dict) and record.get("error") is None
            and not record.get("lines") and not record.get("unread"))


def blank_line(count: int, labels: list[str]) -> str:
    """One line naming the pages read without an error where nothing looked like text
    (``2 pages had nothing that looked like text: scan.tif#page=3, report.pdf#page=5``), so
    that a blank sheet or a scan that came out white is seen among a folder's pages."""
    shown = [os.path.basename(str(label)) for label in labels[:BLANK_NAMES]]
    more = ", ..." if count > len(shown) else ""
    return (f"{_count(count, 'page')} had nothing that looked like text: "
            f"{', '.join(shown)}{more}")


def file_count(items: list[str], cwd: str | None = None) -> int:
    """The files ``items`` (paths, pages as ``doc.pdf#page=3``) come from."""
    return len({p.rpartition("#page=")[0] if _PAGE_REF.match(p) and
                not os.path.exists(_at(p, cwd)) else p for p in map(str, items)})


def pages_files(pages: int, files: int | None) -> str:
    """'5 images' where each file gave one result (or the files are not known); '47 pages
    of 33 files' where a document gave several."""
    if files is None or files == pages:
        return _count(pages, "image")
    return f"{_count(pages, 'page')} of {_count(files, 'file')}"


def reading_note(config: dict) -> str | None:
    """What a job of ``config`` would read, for its dry run (``plan: reads 38 files, 53
    pages; skipped 2 files that are not an image or PDF: notes.txt, truth.json``): its inputs
    expanded and its ``--pages`` chosen as the job does. None for notebook objects, a
    resumed job, or inputs that cannot be listed (the launch said why)."""
    if config.get("images") is not None or config.get("resume_from"):
        return None
    cwd = config.get("cwd")
    skipped: list[str] = []
    with pdf_password(config.get("password")):
        try:
            found = expand_inputs(config.get("inputs") or [], skipped, cwd)
            short: list = []
            items = select_pages(found, config.get("pages"), cwd, short=short)
        except (OSError, ValueError):
            return None
        pages = sum(count_pages(_at(p, cwd))
                    if "#page=" not in p or os.path.exists(_at(p, cwd)) else 1 for p in items)
    files = file_count(items, cwd)
    note = f"reads {_count(files, 'file')}, {_count(pages, 'page')}"
    note += f"; {short_line(short, config.get('pages'))}" if short else ""
    return note + (f"; {skipped_line(skipped)}" if skipped else "")


def silent_line(silent: int, unread: int, model: str, whole: bool = False) -> str:
    """Why images gave no text though something in them looked like text: said once, in the
    summary and the notebook's view (a page of a script the model does not read comes back
    empty, not as an error)."""
    images = "1 image" if silent == 1 else f"{silent} images"
    regions = "1 region" if unread == 1 else f"{unread} regions"
    found = (f"read whole (--no-det), {'it was' if silent == 1 else 'each was'}" if whole else
             f"though the detector found {regions} in {'it' if silent == 1 else 'them'}, each")
    return (f"{images} gave no text, {found} read as nothing or under --min-score "
            f"(print too faint or small, or a script {model!r} does not read: "
            "%train ocr-rec adds one from labelled crops)")


def _join_ranks(out: str | None, world: int, counts: tuple) -> tuple:
    """Gather the ranks' counts on rank 0 and merge their parts into ``out`` in input order
    (rank r read images r, r + world, ...)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    gathered = comm.gather(counts, root=0)
    if comm.Get_rank() != 0:
        return counts
    if out:
        parts = [open(f"{out}.part{r}", encoding="utf-8") for r in range(world)]
        with open(out, "w", encoding="utf-8") as fh:
            for lines in itertools.zip_longest(*parts):
                fh.writelines(line for line in lines if line)
        for r, part in enumerate(parts):
            part.close()
            os.remove(f"{out}.part{r}")
    return tuple(int(sum(c[k] for c in gathered)) for k in range(len(counts)))


def _overlay(result: OcrResult, n: int, reporter) -> None:
    import base64

    rgb = result._rgb()
    if rgb is None or min(rgb.shape[:2]) < 2:
        return
    path = Path(reporter.run_dir) / f"overlay-{n:03d}.png"
    path.write_bytes(base64.b64decode(draw_boxes(rgb, result.lines, max_side=1200)))
    reporter.artifact(path.name, path, kind="image")
