"""Kind ``ocr``: ``%ocr`` / ``python -m skiff ocr`` / the OCR form.

``%ocr PATH|GLOB|VAR ... [--lang SET] [--device DEV] [--batch-size B]
[--out FILE.jsonl|.txt|.csv|.hocr|.tsv|-]
[--det-model F.onnx] [--rec-model F.onnx|DIR] [--dict F.txt] [--no-cls] [--no-det] [--no-words]
[--min-score X] [--det-params K=V,...] [--pdf-dpi D] [--pages 1-3,7] [--password PW]
[--precision auto|int8|fp32|hybrid] [--np N] [--wait] [-o NAME]``.
Inputs are image or PDF files (a PDF, multi-page TIFF or animated GIF gives one result per page,
``file.pdf#page=N``; ``--pages`` reads only some of them), folders (their image and PDF
files), glob patterns (``**`` for subfolders), or (in a notebook) a variable holding an
image array, a PIL image, a path or a list of them.
``--lang`` picks a model set from the registry (``ch``: PP-OCRv6, default; ``ch-v4``:
PP-OCRv4 lite; ``ch-tiny``: PP-OCRv6 tiny, 2-4x RapidOCR's speed on print in bulk, the
``ocr-tiny`` extra); ``--det-model/--rec-model/--dict`` swap in a user's own ONNX files;
``--precision`` says how the detector runs on the CPU (auto: the int8 twin of the default
set's detector, :mod:`skiff.kernels.ocr.quantize`); ``--no-det`` reads each image whole as
one line (crops already cut out: no detector); ``--no-words`` keeps each unsure line as the
recognizer's best classes give it (not read again with what text usually says,
:mod:`skiff.kernels.ocr.beam`: part numbers, codes; a user's own ``--rec-model`` reads so
already). Images held in notebook variables are
read by a thread job of this kernel, since their pixels live here.
"""

from __future__ import annotations

import os
import shlex

from skiff.grammar.common import (
    command,
    device_option,
    did_you_mean,
    launch_options,
    nonneg_float,
    positive_int,
    unknown_name,
    was_given,
)
from skiff.kernels.backend.devices import DEFAULT_DEVICE

from .base import JobRequest, Kind, figure

__all__ = ["COMMAND", "KIND", "to_config", "model_set_names", "is_image", "lines_table_html"]


# the languages %ocr --lang names after the model sets, in PaddleOCR's words (the 'ch' set
# reads them and more: skiff/kernels/ocr/models.py READ_BY_CH); the OCR form lists them too
LANGS_LISTED = ("en", "japan", "chinese_cht", "latin", "fr", "de", "es", "it", "pt", "nl")


def model_set_names() -> tuple[str, ...]:
    from skiff.kernels.ocr.models import available_model_sets

    return available_model_sets()  # shipped sets and those registered by %train ocr-rec


@command("ocr", help="Read the text in images and PDFs: files, folders, glob patterns or "
                     "notebook variables; with --out, their text (FILE.txt) or one JSON line "
                     "per image or page.")
@launch_options
@device_option
def COMMAND(p):
    # built when the grammar is first used: %load_ext skiff need not import the OCR kernels
    from skiff.kernels.ocr.quantize import PRECISIONS

    p.add_argument("inputs", nargs="+", metavar="PATH|GLOB|VAR",
                   help="image or PDF files, folders, patterns like 'scans/**/*.png', or a "
                        "notebook variable holding an image, PIL image, path or list of them")
    p.add_argument("--lang", default="ch", metavar="SET",
                   help=f"model set: {', '.join(model_set_names())} (default ch; a language "
                        f"it reads, such as en, japan or fr, picks ch)")
    p.add_argument("--batch-size", type=positive_int, default=8, metavar="B",
                   help="images read together (default 8)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="FILE.txt: the text of each image (a '=== image ===' line before "
                        "each when there are several); FILE.csv: each row of a page a CSV "
                        "row, its cells columns (led by the image's name when there are "
                        "several); FILE.hocr: hOCR as Tesseract writes it (pages, lines and "
                        "words with their boxes); FILE.tsv: Tesseract's TSV (pytesseract's "
                        "image_to_data: a row per page, block, line and word, with boxes); "
                        "'-': that text on stdout (the summary "
                        "on stderr); FILE.json: one JSON array of the records; any "
                        "other name: one JSON line per image (default: the run folder's "
                        "results.jsonl; from a terminal, one image's text is printed too)")
    p.add_argument("--det-model", default=None, metavar="F.onnx",
                   help="your own DB detection model")
    p.add_argument("--rec-model", default=None, metavar="F.onnx|DIR",
                   help="your own CTC recognition model (another language), or the folder "
                        "`train ocr-rec --out DIR` wrote (its rec.onnx)")
    p.add_argument("--dict", default=None, metavar="F.txt",
                   help="the recognizer's characters, one a line (default: the model's "
                        "'character' metadata)")
    p.add_argument("--no-cls", action="store_true",
                   help="skip the 0/180 degree direction model")
    p.add_argument("--no-det", action="store_true",
                   help="each image is one line already cut out (a crop): read it whole, "
                        "without the detector")
    p.add_argument("--no-words", action="store_true",
                   help="keep unsure lines as the recognizer read them (codes, part "
                        "numbers): not read again with common words and character pairs")
    p.add_argument("--min-score", type=nonneg_float, default=0.5, metavar="X",
                   help="drop lines read with a lower confidence (default 0.5)")
    p.add_argument("--det-params", type=det_params_arg, default=None, metavar="K=V,...",
                   help="the detector's knobs, as RapidOCR's: thresh (0.3), box_thresh "
                        "(0.5), unclip_ratio (1.6), max_candidates (1000), limit (960: "
                        "limit_side_len), target (18: the text height it reads at)...")
    p.add_argument("--pdf-dpi", type=positive_int, default=200, metavar="D",
                   help="resolution PDF pages are rendered at, 36-600 (default 200)")
    p.add_argument("--password", default=None, metavar="PW",
                   help="opens password-protected PDFs (others open as ever); a PDF it does "
                        "not open is one error line and the other files are read. Kept off "
                        "disk and screen (*** in the run folder, jobs show, --dry-run; "
                        "jobs resume asks for it again); or set SKIFF_PDF_PASSWORD in the "
                        "environment").secret = "SKIFF_PDF_PASSWORD"  # skiff/jobs/secret.py
    p.add_argument("--pages", default=None, metavar="LIST",
                   help="pages of PDFs, multi-page TIFFs and animations (frames) to read, "
                        "counted from 1: 3, 1-5, 2,4,9- (9 to the last); other images are "
                        "read whole "
                        "(default: every page)")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="CPU threads per model (default: up to 4)")
    p.add_argument("--precision", default="auto", choices=PRECISIONS,
                   help="detector arithmetic on the CPU: auto (the default set's detector "
                        "as its int8 twin, built once per machine), int8, fp32, hybrid (auto, "
                        "and the recognizer as its int8 twin on clean images over 480 px, "
                        "built once per machine in a few minutes; texts may differ a little) "
                        "(default auto)")


def _file(option: str, value: str | None) -> str | None:
    if value is None:
        return None
    path = os.path.expanduser(str(value))
    if option.endswith("-model") and os.path.isdir(path):  # a fine-tune's -o folder
        from skiff.kernels.ocr.models import model_file

        which = "det" if option == "--det-model" else "rec"
        try:
            path = str(model_file(path, which))
        except IsADirectoryError as exc:
            job = _run_folder_kind(path)
            if job is not None:  # a job's id or run folder that holds no such model
                raise ValueError(f"{option}: the {job} job {os.path.basename(path)} "
                                 f"({path}) wrote no "
                                 f"{which}.onnx (it has not finished, it failed, or it "
                                 "trains no OCR model): give a `train ocr-rec` job that "
                                 "ended, or an .onnx file") from None
            raise ValueError(f"{option}: {exc}") from None
    if not os.path.isfile(path):
        raise ValueError(f"{option}: no such file, got {value!r} (an .onnx file, the folder "
                         "`train ocr-rec --out DIR` wrote, or that job's id as `jobs ls` "
                         "shows it)")
    if option.endswith("-model") and not path.lower().endswith(".onnx"):
        raise ValueError(f"{option}: an ONNX model file (.onnx) is expected, got {value!r}")
    return path


def _run_folder_kind(path: str) -> str | None:
    """``train ocr-rec`` (kind and model) where ``path`` is a job's run folder, else None."""
    import json

    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("kind"), str):
        return None
    model = (meta.get("config") or {}).get("model") if isinstance(meta.get("config"),
                                                                  dict) else None
    return f"{meta['kind']} {model}" if isinstance(model, str) else meta["kind"]


# what --out writes: the text, a page's rows as CSV, else a JSON line per image
# (kept with the kernel's entry.WRITTEN: tests/kinds/test_ocr_out_tsv_r35h8.py)
OUT_SUFFIXES = (".txt", ".text", ".csv", ".hocr", ".tsv", ".jsonl", ".json", ".ndjson", ".log",
                "")


def _missing_input(inputs: list[str], exc: FileNotFoundError) -> Exception:
    """The input that is not there said as every front says a missing file: where a
    relative name was looked for, the closest name there (``scan1.pgn`` -> ``scan1.png``);
    a pattern that matches nothing, an address: as the reader said them."""
    import glob

    from skiff.grammar.common import missing_file, split_path

    split = split_path(inputs)  # one path split at its spaces: `%ocr {f}`, f = 'scans dir'
    if split:
        first = next(w for w in inputs if not os.path.exists(os.path.expanduser(w)))
        return FileNotFoundError(f"no such file, folder or pattern: {first!r}; {split}")
    for item in inputs:  # a bare word (no dot, no folder) may be a mistyped variable
        if not os.path.exists(os.path.expanduser(item)) and not glob.has_magic(item) and \
                "://" not in item and ("." in item or os.sep in item) and \
                f"{item!r}" in str(exc):
            return missing_file(item, "file, folder or pattern", ": ")
    return exc


# RapidOCR's / PaddleOCR's names for DetParams' knobs
_DET_ALIASES = {"det_db_thresh": "thresh", "det_db_box_thresh": "box_thresh",
                "det_db_unclip_ratio": "unclip_ratio", "limit_side_len": "limit",
                "det_limit_side_len": "limit", "max_candidates": "max_candidates"}
_DET_UNIT = ("thresh", "box_thresh")   # probabilities: in [0, 1]


def det_params_arg(text) -> str:
    """``--det-params box_thresh=0.6,unclip_ratio=2.0`` checked, as text (a form renders it
    back into the line); the config holds :func:`parse_det_params`'s dict."""
    return ",".join(f"{k}={v}" for k, v in parse_det_params(text).items())


def parse_det_params(text) -> dict:
    """``KEY=VALUE`` pairs naming fields of the detector's ``DetParams`` (RapidOCR's names
    too: ``det_db_box_thresh``, ``limit_side_len``), each value of its field's type and in
    range; a dict (a resumed job's config) is checked the same way."""
    import argparse
    import dataclasses

    from skiff.kernels.ocr.det import DetParams

    fields = {f.name: f for f in dataclasses.fields(DetParams)}
    pairs = (list(text.items()) if isinstance(text, dict) else
             [p.partition("=")[::2] for p in (q.strip() for q in str(text).split(",")) if p])
    out: dict = {}
    for key, value in pairs:
        key, value = _DET_ALIASES.get(str(key).strip(), str(key).strip()), str(value).strip()
        if key not in fields:
            raise argparse.ArgumentTypeError(str(unknown_name("detector parameter", key,
                                                              sorted(fields))))
        kind = int if isinstance(getattr(DetParams, key), int) else float
        try:
            number = kind(float(value)) if kind is int and float(value).is_integer() \
                else kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{key} is {'an integer' if kind is int else 'a number'}, got {value!r} "
                f"(KEY=VALUE pairs, like box_thresh=0.6,unclip_ratio=2.0)") from None
        if not number > 0 or (key in _DET_UNIT and number > 1):
            raise argparse.ArgumentTypeError(
                f"{key} must be {'in (0, 1]' if key in _DET_UNIT else 'positive'}, got "
                f"{value!r}")
        out[key] = number
    if not out:
        raise argparse.ArgumentTypeError("expected KEY=VALUE pairs, like "
                                         "box_thresh=0.6,unclip_ratio=2.0")
    return out


def _out_file(out: str | None) -> str | None:
    """``--out``: a file skiff can write, checked before any image is read."""
    if out is None or out == "-":
        return out
    path = os.path.abspath(os.path.expanduser(out))
    if os.path.isdir(path):
        raise ValueError(f"--out must be a file, got the folder {out!r}")
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in OUT_SUFFIXES:
        searchable = (" (for a searchable PDF: write FILE.hocr and give it and the scans to "
                      "OCRmyPDF's hocrtransform or hocr-tools' hocr-pdf)"
                      if suffix == ".pdf" else "")
        raise ValueError(f"--out {out!r}: skiff writes FILE.txt (the text), FILE.csv (rows "
                         f"and cells), FILE.hocr (Tesseract's hOCR: lines and words with "
                         f"boxes), FILE.tsv (Tesseract's TSV, pytesseract's image_to_data), "
                         f"FILE.json (a JSON array) or FILE.jsonl (a JSON line per "
                         f"image), not "
                         f"{suffix}{searchable}")
    parent = os.path.dirname(path)
    while parent and not os.path.exists(parent):  # folders --out would create
        parent = os.path.dirname(parent) if os.path.dirname(parent) != parent else ""
    if not parent or not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise ValueError(f"--out {out!r}: cannot write there ({parent or '/'} is not a "
                         "writable folder)")
    return out


def to_config(values: dict, *, check_inputs: bool = True) -> dict:
    """The ``ocr`` kernel config from parsed values (checks the model set and files; the
    inputs too unless ``check_inputs`` is false, for images held in notebook variables)."""
    names = model_set_names()
    lang = values.get("lang", "ch")
    if lang not in names:
        from skiff.kernels.ocr.models import NOT_READ, READ_BY_CH, get_model_set

        if str(lang).lower() in READ_BY_CH:  # --lang en, japan, fr: the 'ch' set reads them
            lang = "ch"
        elif str(lang).lower() in NOT_READ:
            try:
                get_model_set(lang)
            except ValueError as exc:
                raise ValueError(f"--lang {lang}: {exc}") from None
        else:
            # the words %ocr takes: the sets, then the languages 'ch' reads (`--lang englsh`
            # was "unknown model set 'englsh': choose from ch, ch-v4, ch-tiny", no word of
            # en or english, which it takes; round 48)
            from skiff.grammar.common import did_you_mean

            close = did_you_mean(lang, names) or did_you_mean(lang, sorted(READ_BY_CH))
            raise ValueError(f"--lang: unknown model set {lang!r}{close}: choose "
                             f"from {', '.join(names)}, or a language the 'ch' set reads: "
                             f"{', '.join(LANGS_LISTED)}, ...")
    score = float(values.get("min_score", 0.5))
    if not 0 <= score <= 1:
        raise ValueError(f"--min-score must be between 0 and 1, got {score!r}")
    dpi = int(values.get("pdf_dpi", 200))
    if not 36 <= dpi <= 600:
        raise ValueError(f"--pdf-dpi must be between 36 and 600, got {dpi!r}")
    pages = values.get("pages")
    if pages is not None:
        from skiff.kernels.ocr.entry import parse_pages

        parse_pages(pages)  # ValueError names the part that is no page or range
        pages = ",".join(str(pages).split())
    if values.get("dict") and not values.get("rec_model"):
        # the shipped recognizers carry their own dictionary: the job failed at once on
        # "rec model has 18710 classes but the dictionary gives 2 characters"
        raise ValueError(f"--dict {values['dict']} names the characters of a recognizer of "
                         f"your own (--rec-model F.onnx); --lang {lang}'s has its own "
                         f"dictionary: add --rec-model, or drop --dict")
    if values.get("det_model") and values.get("no_det"):   # it was read by nothing
        raise ValueError(f"--det-model {values['det_model']} is the detector's, and --no-det "
                         f"reads each image whole without one: drop one of them")
    out = _out_file(values.get("out"))
    inputs = [str(v) for v in (values.get("inputs") or [])]
    if not inputs:
        raise ValueError("give at least one image, folder or pattern")
    if check_inputs:
        from skiff.kernels.ocr.entry import expand_inputs

        try:  # FileNotFoundError names the first that matches nothing
            found = expand_inputs(inputs)
        except FileNotFoundError as exc:
            raise _missing_input(inputs, exc) from None
        pdfs = [p for p in found if p.lower().endswith(".pdf")]
        if values.get("no_det") and pdfs:
            raise ValueError(f"--no-det reads each image whole as one line already cut out; "
                             f"{pdfs[0]!r} is a PDF of pages: drop --no-det to find its lines")
        _check_page_options(values, found)
    return {
        "inputs": inputs,
        "model": lang,
        "device": values.get("device") or DEFAULT_DEVICE,
        "batch_size": int(values.get("batch_size", 8)),
        "out": None if not out or out == "-" else os.path.abspath(os.path.expanduser(out)),
        "det_model": _file("--det-model", values.get("det_model")),
        "rec_model": _file("--rec-model", values.get("rec_model")),
        "dict": _file("--dict", values.get("dict")),
        "use_cls": not values.get("no_cls", False),
        "use_det": not values.get("no_det", False),
        "words": False if values.get("no_words") else None,  # None: the pipeline's rule
        "min_score": score,
        "threads": values.get("threads"),
        "pdf_dpi": dpi,
        "pages": pages or None,
        **({"password": str(values["password"])} if values.get("password") else {}),
        "precision": values.get("precision") or "auto",
        **({"det_params": parse_det_params(values["det_params"])}   # only when given
           if values.get("det_params") else {}),
        # relative inputs are read from here, whatever folder the process is in by then (a
        # %cd while a thread job reads); the results keep them as written
        **({"cwd": _cwd()} if _cwd() else {}),
        # --out -: the text goes to stdout (the summary says so; the JSON lines stay)
        **({"text_to": "stdout"} if out == "-" else {}),
    }


def _cwd() -> str | None:
    """The process's folder, or None where it was removed under the shell."""
    try:
        return os.getcwd()
    except OSError:
        return None


def _check_page_options(values: dict, found: list[str]) -> None:
    """``--pages`` (PDFs, multi-page TIFFs) and ``--pdf-dpi`` (PDFs) given for inputs that
    have no pages went nowhere without a word: refused, even typed at their default. A file
    with no suffix (``ocr -``'s standard input) may be either: let through."""
    unknown = any(not os.path.splitext(str(p))[1] for p in found)
    kinds = (("pages", "--pages", None, (".pdf", ".tif", ".tiff"), "a PDF or TIFF of pages"),
             ("pdf_dpi", "--pdf-dpi", 200, (".pdf",), "a PDF"),
             ("password", "--password", None, (".pdf",), "a PDF"))
    for name, flag, default, suffixes, what in kinds:
        if unknown or any(str(p).lower().endswith(suffixes) for p in found):
            continue
        if was_given(values, name, default):
            shown = os.path.basename(str(found[0])) if found else "none"
            more = f" and {len(found) - 1} more" if len(found) > 1 else ""
            raise ValueError(f"{flag} is for {what}, and no input is one ({shown}{more}): "
                             f"drop {flag}")


# notebook objects -----------------------------------------------------------------------------
def is_image(obj) -> bool:
    """An image a notebook can read: a 2-D/3-D array, a PIL image, a path held in a
    variable, or an encoded image's bytes (``open(f, 'rb').read()``, a BytesIO)."""
    if isinstance(obj, (str, os.PathLike)):  # a path held in a variable: read like a file
        return True
    if isinstance(obj, (bytes, bytearray, memoryview)) or (
            hasattr(obj, "read") and hasattr(obj, "seek")):
        return True
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):
        return len(obj.shape) in (2, 3)
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - pillow is a core dependency
        return False
    return isinstance(obj, Image.Image)


def _variable_images(names: list[str], user_ns: dict) -> list | None:
    """The images held by notebook variables ``names``, or None when they are not variables.
    Mixing variables and paths is refused."""
    found = [n for n in names if (n.isidentifier() or n.startswith("[")) and n in user_ns]
    if not found:
        return None
    if len(found) != len(names):
        raise ValueError(f"give either notebook variables or paths, not both; got {names!r}")
    images = []
    for name in names:
        value = user_ns[name]
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        bad = [type(v).__name__ for v in items if not is_image(v)]
        if bad or not items:
            raise TypeError(f"variable {name!r} must hold an image array, PIL image, path, "
                            f"encoded bytes or a list of them, got "
                            f"{bad[0] if bad else 'an empty list'}")
        for item in items:  # a path held in a variable is refused as one on the line is
            if isinstance(item, (str, os.PathLike)) and \
                    not os.path.isfile(os.path.expanduser(os.fspath(item))):
                what = "a folder" if os.path.isdir(os.path.expanduser(os.fspath(item))) \
                    else "no such file"
                raise FileNotFoundError(
                    f"variable {name!r} holds the string {os.fspath(item)!r}, {what}: a "
                    f"variable gives an image array, PIL image, encoded bytes or the path of "
                    f"an image file (for a folder or pattern, write it on the line)")
        images.extend(items)
    return images


def _variable_hint(names: list[str], user_ns: dict | None) -> str:
    """``", nor a notebook variable (did you mean 'img'?)"`` for the first of ``names`` that
    could be a variable's name and is no path, over the variables holding images."""
    if not user_ns:
        return ""
    def pixels(v) -> bool:  # an array or a PIL image (not a module with .shape and .dtype)
        return not isinstance(v, (str, os.PathLike, type(os))) and \
            isinstance(getattr(v, "shape", None), tuple) and is_image(v) or \
            type(v).__module__.startswith("PIL.")

    held = [k for k, v in user_ns.items() if not k.startswith("_") and (
        pixels(v) or (isinstance(v, (list, tuple)) and v and all(map(pixels, v))))]
    for name in names:
        if name.isidentifier() and not os.path.exists(name):
            hint = did_you_mean(name, held)
            return f", nor a notebook variable{hint}" if hint else ""
    return ""


def lines_table_html(result: dict | None, limit: int = 200) -> str:
    """HTML table of the lines an OCR job read (from its ``result.json``)."""
    import html
    from pathlib import Path

    rows = []
    for item in (result or {}).get("results", []):
        image = html.escape(Path(str(item.get("image"))).name)
        if item.get("error"):
            rows.append(f"<tr><td>{image}</td><td colspan=2 style='color:#d62728'>"
                        f"{html.escape(str(item['error']))}</td></tr>")
        for line in item.get("lines", []):
            rows.append(f"<tr><td>{image}</td><td>{html.escape(str(line.get('text', '')))}"
                        f"</td><td>{float(line.get('score', 0)):.3f}</td></tr>")
    if not rows:
        return "<i>no lines read</i>"
    more = f"<tr><td colspan=3>… {len(rows) - limit} more</td></tr>" if len(rows) > limit else ""
    return ("<table class='skiff-ocr-lines'><tr><th>image</th><th>text</th><th>score</th></tr>"
            + "".join(rows[:limit]) + more + "</table>")


class OcrKind(Kind):
    name = "ocr"
    command = COMMAND
    entry = "skiff.kernels.ocr.entry:run"
    cell = False
    show_value = True

    def result_html(self, job) -> str | None:
        """The lines it read, image by image, beside the overlays of the view."""
        return lines_table_html(job.result)

    def to_config(self, values: dict) -> dict:
        return to_config(values)

    def summary(self, result: dict) -> list[str]:
        images, errors = result.get("images", 0), result.get("errors", 0)
        read = f"{figure(images - errors)} of {figure(images)}" if errors else figure(images)
        # pages of documents are said as pages of their files: '45 of 47 pages read from
        # 33 files', not '45 of 47 images' (round 45); a file a page, or not known: images
        files = result.get("files")
        several = type(files) is int and files > 0 and files != images
        noun = "page" if several else "image"
        read += f" {noun}{'' if images == 1 else 's'} read"
        if several:
            read += f" from {figure(files)} file{'' if files == 1 else 's'}"
        count = result.get("lines", 0)
        lines = [f"{read}, {figure(count)} line{'' if count == 1 else 's'} of text"
                 + (f" ({figure(errors)} could not be read)" if errors else "")]
        if result.get("kept"):  # jobs resume: pages read by the run it went on with
            lines.append(f"{figure(result['kept'])} of them kept from the run it resumed, "
                         "not read again")
        timing = f"{figure(result.get('seconds', 0.0))} s"
        if result.get("images_per_s"):
            timing += f" ({figure(result['images_per_s'])} {noun}s/s)"
        lines.append(f"{timing} on {result.get('device', '?')} with {result.get('model', '?')}")
        skipped = result.get("skipped") or []
        if skipped:  # what a folder held besides images and PDFs: not read, said so
            from skiff.kernels.ocr.entry import skipped_line

            lines.append(skipped_line([str(p) for p in skipped]))
        if result.get("silent"):  # empty pages where something looked like text
            from skiff.kernels.ocr.entry import silent_line

            lines.append(silent_line(int(result["silent"]), int(result.get("unread") or 0),
                                     str(result.get("model", "?")), bool(result.get("whole"))))
        if result.get("short") and result.get("short_line"):  # --pages past their ends
            lines.append(str(result["short_line"]))
        if result.get("blank"):  # pages where nothing looked like text: named (round 45)
            from skiff.kernels.ocr.entry import blank_line

            lines.append(blank_line(int(result["blank"]), list(result.get("blank_pages") or [])))
        if result.get("text_out"):
            kinds = {".csv": "table", ".hocr": "hOCR", ".tsv": "TSV", ".json": "JSON"}
            what = kinds.get(os.path.splitext(str(result["text_out"]))[1].lower(), "text")
            lines.append(f"{what}: {result['text_out']}")
        elif result.get("out"):
            lines.append(f"text: {result['out']}")
        return lines

    def summary_of(self, job, result: dict) -> list[str]:
        """:meth:`summary`; with ``--out -`` the text went to stdout, not to the JSON lines
        the summary named as "text: .../results.jsonl" (they stay in the run folder)."""
        lines = self.summary(result)
        config = getattr(job, "config", None) or {}
        jsonl = (result or {}).get("out") if isinstance(result, dict) else None
        if config.get("text_to") == "stdout" and jsonl and f"text: {jsonl}" in lines:
            lines[lines.index(f"text: {jsonl}")] = (f"text: to stdout (its JSON lines: "
                                                    f"{jsonl})")
        return lines

    def terminal_text(self, job, values: dict) -> tuple[str | None, bool]:
        """The text read: alone on stdout with ``--out -``; after the summary when the
        command read one image and wrote no file of its own."""
        from skiff.kernels.ocr.entry import STDOUT, text_of

        result = job.result or {}
        jsonl, out = result.get("out"), values.get("out")
        if not jsonl or not os.path.exists(jsonl) or (out and out != STDOUT):
            return None, False
        if out == STDOUT:
            return text_of(jsonl), True
        if result.get("images") == 1 and not result.get("errors"):
            return text_of(jsonl), False
        return None, False

    def cell_text(self, job) -> str | None:
        """``%ocr ... --out - --wait``: the text read, printed in the cell as the terminal
        prints it on stdout (before: the run's repr, and no text)."""
        from skiff.kernels.ocr.entry import STDOUT

        if (getattr(job, "config", None) or {}).get("text_to") != "stdout":
            return None
        text, alone = self.terminal_text(job, {"out": STDOUT})
        return text if alone else None

    def cell_note(self, job) -> str | None:
        if (getattr(job, "config", None) or {}).get("text_to") != "stdout":
            return None
        return ("--out -: the text is printed here when the job ends with --wait; without "
                "it the view shows the lines as they are read, and the job's value holds "
                "the text (-o NAME: NAME.value.text)")

    def failures(self, job) -> list[str]:
        """The images that could not be read, from the JSONL the job wrote."""
        result = job.result or {}
        if not result.get("errors") or not result.get("out"):
            return []
        import json

        failed = []
        try:
            with open(result["out"], encoding="utf-8") as fh:
                for line in fh:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and record.get("error"):
                        failed.append(f"{record.get('image')}: {record['error']}")
        except OSError as exc:
            return [f"{_inputs(result['errors'])} (cannot read {result['out']}: {exc})"]
        return failed or [_inputs(result["errors"])]

    def preparse(self, line: str, user_ns: dict) -> tuple[str, dict]:
        """``%ocr [page, crop] --out -``: a list written on the line, of images held in
        the notebook, stands in as a variable (a bracket that is no such list, a glob's
        ``[ab]*.png``, is left as it was)."""
        text = line.strip()
        if not text.startswith("[") or not user_ns:
            return line, user_ns
        cuts = [i for i in range(len(text)) if text.startswith(" -", i)] + [len(text)]
        for cut in cuts:
            expr = text[:cut].strip()
            try:
                value = eval(compile(expr, "<%ocr inputs>", "eval"), dict(user_ns))  # noqa: S307
            except Exception:  # not Python (a glob), or names no variable: a path then
                continue
            if isinstance(value, (list, tuple)) and value and all(map(is_image, value)):
                return f"{shlex.quote(expr)} {text[cut:]}", {**user_ns, expr: list(value)}
            return line, user_ns
        return line, user_ns

    def prepare(self, values: dict, *, cell: str | None = None, user_ns: dict | None = None,
                where: str = "thread") -> JobRequest:
        if cell is not None:
            raise ValueError("%ocr is a line magic: give paths, patterns or variables")
        images = _variable_images(values["inputs"], user_ns or {})
        if images is None:
            try:
                return JobRequest("ocr", to_config(values))
            except FileNotFoundError as exc:  # a mistyped variable, perhaps: name the closest
                raise FileNotFoundError(f"{exc}{_variable_hint(values['inputs'], user_ns)}") \
                    from None
        config = to_config(values, check_inputs=False)
        config["inputs"] = [f"<variable {n}>" for n in values["inputs"]]

        def job(cfg, reporter):
            from skiff.kernels.ocr.entry import run

            return run({**cfg, "images": images}, reporter)

        local = ("images held in notebook variables are read on a thread of this kernel; "
                 "drop --np/--runner process")
        return JobRequest("ocr", config, fn=job, local_only=local,
                          label=f"%ocr {' '.join(values['inputs'])}")

    def resume_config(self, job) -> dict:
        """``jobs resume ID``: an OCR job that stopped (cancelled, failed, its kernel gone)
        or could not read some inputs goes on with the same inputs and options; the pages
        its JSON lines hold, read without an error, are kept and not read again
        (``resume_from``, :func:`skiff.kernels.ocr.entry.read_done`), the others read."""
        from skiff.kernels.ocr.entry import results_file

        config = {k: v for k, v in dict(job.config).items() if k != "resume_from"}
        if any(str(p).startswith("<variable") for p in config.get("inputs") or []):
            raise ValueError(f"job {job.id} read images held in notebook variables, which it "
                             "did not keep: run %ocr on them again")
        result = job.result or {}
        if job.status == "done" and not result.get("errors"):
            again = job.meta.get("command")
            raise ValueError(f"job {job.id} read all its {figure(result.get('images', 0))} "
                             f"images: nothing to resume"
                             + (f"; to read them again: {again}" if again else ""))
        error = str(getattr(job, "error", None) or "").strip().split("\n", 1)[0]
        if (job.status == "failed" and job.result is None and not getattr(job, "progress", 0)
                and error.split(":", 1)[0] in _SETUP_ERRORS):
            # failed setting up (a --dict that does not fit the model, a model file that is
            # no ONNX): resumed with the same options it failed the same way, and its own
            # summary offered `jobs resume` again
            again = (job.meta or {}).get("command")
            raise ValueError(f"job {job.id} failed before reading an image ({error}): the "
                             f"same options fail the same way; fix them and run "
                             + (f"the command again ({again})" if again else "it again"))
        import glob

        cwd = config.get("cwd")  # the folder it started in (round 31), where it reads on
        started = (job.meta or {}).get("cwd")
        if not cwd and isinstance(started, str) and os.path.isdir(started):
            cwd = config["cwd"] = started  # a job from before round 31: where it started
        if cwd and not os.path.isdir(cwd):  # gone: read from here, as before round 31
            config.pop("cwd")
            cwd = None
        for item in config.get("inputs") or []:  # as written: relative to where it started
            item = os.path.expanduser(str(item))
            at = os.path.join(cwd, item) if cwd else item
            if not os.path.isabs(item) and not os.path.exists(at) and \
                    not (glob.has_magic(item) and glob.glob(item, root_dir=cwd,
                                                            recursive=True)):
                raise ValueError(f"job {job.id} read {item!r}, a path relative to the folder "
                                 f"it was started in, and {os.getcwd()} has none: resume it "
                                 "from that folder (its pages read are matched by their "
                                 "paths as written)")
        config["resume_from"] = results_file(config, job.run_dir)
        return config

    kernel_logs_plan = True  # the job logs what it reads: the launch's note is the dry run's

    def check_launch(self, config: dict, *, ranks: int) -> str | None:
        """``--device auto`` is resolved at launch and the job gets the device: kept as
        ``device_asked`` so its log says why (``on cpu (auto: no GPU, ...)``, not ``(as
        asked)``). Returns what the job would read (:func:`entry.reading_note`, round 45)."""
        from skiff.kernels.backend.devices import DEFAULT_DEVICE

        asked = config.get("device")
        if str(DEFAULT_DEVICE if asked is None else asked).strip().lower() == DEFAULT_DEVICE:
            config["device_asked"] = DEFAULT_DEVICE
        # what it would read, for --dry-run's "plan:" line (the job logs its own count, so
        # the launch does not: kernel_logs_plan); a backlog is checked before it is read
        from skiff.kernels.ocr.entry import reading_note

        return reading_note(config)

    def launch_device(self, spec: str | None, *, ranks: int = 1,
                      gpus: int | None = None) -> tuple[str, str]:
        """``auto`` is a GPU only where onnxruntime has its CUDA provider too."""
        from skiff.kernels.ocr import resolve_ocr_device

        if gpus is not None:
            return super().launch_device(spec, ranks=ranks, gpus=gpus)
        return resolve_ocr_device(spec)


KIND = OcrKind()

# the errors of a job that could not set up (its options or model files): not worth a resume
_SETUP_ERRORS = ("ValueError", "TypeError", "FileNotFoundError", "ModuleNotFoundError",
                 "ImportError", "InvalidArgument", "InvalidGraph", "NoSuchFile")


def _inputs(n) -> str:
    return f"{n} input{'' if n == 1 else 's'}"
