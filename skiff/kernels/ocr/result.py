"""What OCR returns: :class:`TextLine` and :class:`OcrResult`, with JSON and notebook views."""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field

import numpy as np

__all__ = ["TextLine", "OcrResult", "OcrResults", "draw_boxes", "line_records",
           "LINE_COLUMNS", "lines_frame"]

# a row of the table of lines (to_pandas): the file, its page, the line's place and box
LINE_COLUMNS = ("file", "page", "row", "line", "text", "score", "x0", "y0", "x1", "y1",
                "error")


def _count(n: int, word: str, plural: str | None = None) -> str:
    """``1 image``, ``2 images``: a count and its noun."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def line_records(doc: dict) -> list[dict]:
    """One dict per text line of a JSON record (:meth:`OcrResult.to_json`), in reading
    order: ``file`` (the path, without ``#page=N``), ``page`` (from 1; None for an image
    that has no pages), ``row`` (lines of one row share it), ``line`` (its index on the
    page), ``text``, ``score``, the box's extent ``x0, y0, x1, y1`` in image pixels, and
    ``error`` (None). An image that could not be read gives one dict with ``error`` set and
    no text; a page read where nothing looked like text, one dict with no text and no line
    (so that a table of a folder has every page read: a blank sheet is not a lost page)."""
    label = str(doc.get("image"))
    file, _, page = label.rpartition("#page=")
    if not (file and page.isdigit()):
        file, page = label, None
    page = int(page) if page else None
    if doc.get("error"):
        return [{**dict.fromkeys(LINE_COLUMNS), "file": file, "page": page, "text": "",
                 "error": str(doc["error"])}]
    if not doc.get("lines"):  # a blank page: its row, read, without text (round 45)
        return [{**dict.fromkeys(LINE_COLUMNS), "file": file, "page": page, "text": ""}]
    out = []
    for k, line in enumerate(doc.get("lines") or []):
        xs = [float(p[0]) for p in line["box"]]
        ys = [float(p[1]) for p in line["box"]]
        out.append({"file": file, "page": page, "row": int(line.get("row", 0)), "line": k,
                    "text": line.get("text", ""), "score": float(line.get("score", 0.0)),
                    "x0": min(xs), "y0": min(ys), "x1": max(xs), "y1": max(ys),
                    "error": None})
    return out


def lines_frame(docs):
    """A pandas DataFrame of :func:`line_records` over JSON records ``docs`` (columns
    :data:`LINE_COLUMNS`). Raises ``ImportError`` naming pandas when it is missing."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the notebook extras
        raise ImportError("to_pandas needs pandas: pip install pandas") from None
    rows = [rec for doc in docs for rec in line_records(doc)]
    # the same types whatever the rows hold: whole numbers (missing as <NA>), floats, and
    # text as Python objects (an error None where there is none)
    kinds = {"page": "Int64", "row": "Int64", "line": "Int64", "score": float, "x0": float,
             "y0": float, "x1": float, "y1": float}
    return pd.DataFrame({c: pd.Series([r[c] for r in rows], dtype=kinds.get(c, object))
                         for c in LINE_COLUMNS})


@dataclass
class TextLine:
    """One line of text: ``box`` is four ``[x, y]`` corners (tl, tr, br, bl) in image pixels,
    ``text`` what was read, ``score`` the recognizer's mean character confidence (0..1),
    ``row`` the row of the page it belongs to (0 first, in reading order: a table's cells
    in one row share it)."""

    box: list
    text: str
    score: float
    row: int = 0

    def to_json(self) -> dict:
        return {"box": [[round(float(x), 1), round(float(y), 1)] for x, y in self.box],
                "text": self.text, "score": round(float(self.score), 4), "row": int(self.row)}


@dataclass
class OcrResult:
    """The text of one image.

    Attributes
    ----------
    image : str or None
        Where the image came from (a path, or a label such as ``"<array 0>"``).
    lines : list of TextLine
        In reading order.
    text : str
        The page's rows in reading order, joined by ``"\\n"``; the lines of a row (a
        table's cells, a receipt's item and price) are joined by a space.
    error : str or None
        Why the image could not be read (then ``lines`` is empty).
    timings : dict
        Seconds per stage (load, det, cls, rec, ...), this image's share of its batch.
    unread : int
        Regions the detector found that read as nothing or under the pipeline's
        ``min_score`` (dropped: print too faint, or a script the model does not read).
    """

    image: str | None
    lines: list[TextLine] = field(default_factory=list)
    text: str = ""
    error: str | None = None
    timings: dict = field(default_factory=dict)
    elapsed_s: float = 0.0
    size: tuple | None = None
    device: str = "cpu"
    pixels: np.ndarray | None = field(default=None, repr=False)  # RGB, kept for display only
    unread: int = 0
    # the resolution a PDF page was rendered at, to render it alike when drawn again
    pdf_dpi: float | None = field(default=None, repr=False)
    # one line each: what the page holds that the model set cannot read (a script it has
    # no characters for, ``script_mix.unread_ink``); in the JSON record when there are any
    warnings: list[str] = field(default_factory=list, repr=False)

    @property
    def rows(self) -> list[list[TextLine]]:
        """The lines grouped by row, in reading order: a table's rows as lists of cells
        (``[[c.text for c in row] for row in result.rows]``)."""
        out: list[list[TextLine]] = []
        for line in self.lines:
            if out and out[-1][0].row == line.row:
                out[-1].append(line)
            else:
                out.append([line])
        return out

    def to_json(self) -> dict:
        """The JSONL record: ``{"image", "file", "page", "size", "dpi", "text", "lines",
        "error", "unread", "elapsed_s"}`` (and ``"warnings"`` when there are any): ``file``
        the image's path without ``#page=N`` (what a script opens), ``page`` the page
        number of a ``file#page=N`` label (from 1; None for an image that has no pages, as
        :func:`line_records` reads it), ``size``
        the ``[height, width]`` in pixels the page was read at (the boxes' frame; None when
        it could not be read), ``dpi`` the resolution a PDF page was rendered at (None for
        other images)."""
        file, _, page = str(self.image).rpartition("#page=")
        paged = bool(file) and page.isdigit()
        dpi = None if self.pdf_dpi is None else float(self.pdf_dpi)
        # "file": the path to open (a PDF's or TIFF's page label is no file; round 45)
        return {"image": self.image, "file": file if paged else self.image,
                "page": int(page) if paged else None,
                "size": [int(v) for v in self.size[:2]] if self.size is not None else None,
                "dpi": int(dpi) if dpi is not None and dpi.is_integer() else dpi,
                "text": self.text,
                "lines": [line.to_json() for line in self.lines], "error": self.error,
                "unread": int(self.unread), "elapsed_s": round(float(self.elapsed_s), 4),
                **({"warnings": [str(w) for w in self.warnings]} if self.warnings else {})}

    def to_pandas(self):
        """Its lines as a table, a row each (:meth:`OcrResults.to_pandas`)."""
        return lines_frame([self.to_json()])

    def write_hocr(self, path) -> str:
        """Write it as hOCR (``--out FILE.hocr``'s format, :func:`.hocr.write_hocr`);
        returns ``path``."""
        return _write("hocr", [self], path)

    def write_tsv(self, path) -> str:
        """Write it as Tesseract's TSV (``--out FILE.tsv``'s format, pytesseract's
        ``image_to_data``: :func:`.hocr.write_tsv`); returns ``path``."""
        return _write("tsv", [self], path)

    def __iter__(self):
        """The lines, in reading order: ``for line in result: print(line.text)``."""
        return iter(self.lines)

    def _rgb(self):
        if self.pixels is not None:
            return self.pixels
        # where it was read (a job's relative input joined to the folder it started in:
        # after a %cd the label as written names another file), else its label
        source = getattr(self, "source", None) or self.image
        if source and not str(source).startswith("<"):
            try:  # read again the way the pipeline did (EXIF, alpha, a PDF page at its dpi)
                from .images import PDF_DPI, iter_pages

                bgr = next(iter_pages(source, pdf_dpi=self.pdf_dpi or PDF_DPI))[0]
            except Exception:
                return None
            if self.size is not None and tuple(bgr.shape[:2]) != tuple(self.size):
                return None  # the file changed since it was read: its boxes are elsewhere
            return bgr[..., ::-1]
        return None

    def draw(self, *, max_side: int | None = None):
        """The image with each line's box and index drawn, as a PIL image (shrunk to
        ``max_side`` pixels if given). Raises ``ValueError`` when the pixels are gone (a
        folder run keeps them for the first few images) and the file cannot be read again."""
        from PIL import Image

        rgb = self._rgb()
        if rgb is None or rgb.size == 0:
            raise ValueError(f"no pixels to draw for {self.image!r}: the result keeps them "
                             "only for the first images of a run, and the file is not readable "
                             "(or no longer the image it read)")
        png = draw_boxes(rgb, self.lines, max_side=max_side or max(rgb.shape[:2]))
        return Image.open(io.BytesIO(base64.b64decode(png)))

    def save_overlay(self, path) -> str:
        """Write :meth:`draw` to ``path`` (the format from its extension, e.g. ``.png``);
        returns the path."""
        self.draw().save(str(path))
        return str(path)

    def _repr_html_(self) -> str:
        parts = [f"<div><b>{html.escape(str(self.image))}</b> · {len(self.lines)} lines · "
                 f"{self.elapsed_s:.3f} s on {html.escape(self.device)}</div>"]
        if self.error:
            parts.append(f"<div style='color:#b00'>error: {html.escape(self.error)}</div>")
        for message in self.warnings:
            parts.append(f"<div style='color:#a60'>warning: {html.escape(str(message))}</div>")
        rgb = self._rgb()
        if rgb is not None and rgb.size and min(rgb.shape[:2]) > 1:
            png = draw_boxes(rgb, self.lines, max_side=900)
            parts.append(f"<img src='data:image/png;base64,{png}' style='max-width:100%'/>")
        rows = "".join(
            f"<tr><td>{i}</td><td style='text-align:left'>{html.escape(line.text)}</td>"
            f"<td>{line.score:.3f}</td></tr>" for i, line in enumerate(self.lines))
        parts.append("<table><tr><th>#</th><th>text</th><th>score</th></tr>" + rows + "</table>")
        return "\n".join(parts)

    def __repr__(self) -> str:
        head = f"OcrResult({self.image!r}, {len(self.lines)} lines, {self.elapsed_s:.3f} s"
        if self.error:
            return head + f", error={self.error!r})"
        return head + ")" + ("\n" + self.text if self.text else "")

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


class OcrResults(list):
    """Results of several images with a combined view (the first few drawn)."""

    show = 4

    @property
    def text(self) -> str:
        """Every image's text, in input order, separated by an empty line."""
        return "\n\n".join(r.text for r in self)

    def to_json(self) -> list:
        return [r.to_json() for r in self]

    def to_pandas(self):
        """A table of every text line, a row each (:func:`line_records`: file, page, row,
        line, text, score, box x0 y0 x1 y1, error), for pandas:
        ``results.to_pandas().groupby("file").text.apply("\\n".join)``."""
        return lines_frame(r.to_json() for r in self)

    def write_hocr(self, path) -> str:
        """Write every result as a page of one hOCR document (``--out FILE.hocr``)."""
        return _write("hocr", list(self), path)

    def write_tsv(self, path) -> str:
        """Write every result as a page of one Tesseract TSV table (``--out FILE.tsv``,
        pytesseract's ``image_to_data``; ``pandas.read_csv(path, sep="\\t", quoting=3)``)."""
        return _write("tsv", list(self), path)

    def write_jsonl(self, path) -> str:
        """Write one JSON line per result (the ``--out`` format) to ``path``; returns it."""
        import json

        with open(path, "w", encoding="utf-8") as fh:
            for r in self:
                fh.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")
        return str(path)

    def _repr_html_(self) -> str:
        errors = sum(1 for r in self if r.error)
        head = f"<div><b>{_count(len(self), 'image')}</b>, {_count(errors, 'error')}</div>"
        body = "".join(r._repr_html_() for r in self[: self.show])
        more = f"<div>… {len(self) - self.show} more</div>" if len(self) > self.show else ""
        return head + body + more

    def __repr__(self) -> str:
        return "\n".join(repr(r) for r in self)


def _write(kind: str, results: list, path) -> str:
    """``results`` written by :mod:`.hocr` as ``kind`` ("hocr" or "tsv"), PDF pages at the
    resolution they were read at."""
    from . import hocr

    dpi = next((float(r.pdf_dpi) for r in results if r.pdf_dpi is not None), 200.0)
    write = hocr.write_hocr if kind == "hocr" else hocr.write_tsv
    return write([r.to_json() for r in results], str(path), pdf_dpi=dpi)


def draw_boxes(rgb: np.ndarray, lines: list[TextLine], *, max_side: int = 900) -> str:
    """PNG (base64) of ``rgb`` with each line's box and index drawn; shrunk to ``max_side``."""
    from PIL import Image, ImageDraw

    rgb = rgb[..., :3]
    # the pipeline keeps BGR pixels and shows them as a reversed view: shrink the BGR
    # memory as it lies (copying a 12-MP reversed view took 0.3-0.5 s) and swap after
    swap = not rgb.flags.c_contiguous and rgb[..., ::-1].flags.c_contiguous
    work = rgb[..., ::-1] if swap else np.ascontiguousarray(rgb)
    s = min(1.0, max_side / max(rgb.shape[:2]))
    if s < 1:  # shrunk by OpenCV first: an integer factor by area (its fast path), the
        import cv2  # rest linearly (a 12-MP photo's overlay took 0.65 s through PIL)

        h, w = work.shape[:2]
        k = int(1 / s)
        if k >= 2:
            work = cv2.resize(work, (max(1, w // k), max(1, h // k)),
                              interpolation=cv2.INTER_AREA)
        work = cv2.resize(work, (max(1, int(w * s)), max(1, int(h * s))),
                          interpolation=cv2.INTER_LINEAR)
    if swap:
        work = work[..., ::-1]
    img = Image.fromarray(np.ascontiguousarray(work).astype(np.uint8, copy=False))
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        pts = [(float(x) * s, float(y) * s) for x, y in line.box]
        draw.polygon(pts, outline=(230, 30, 30))
        draw.text((pts[0][0] + 1, max(0, pts[0][1] - 11)), str(i), fill=(230, 30, 30))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)  # level 6 took 0.5 s on a noisy photo
    return base64.b64encode(buf.getvalue()).decode("ascii")
