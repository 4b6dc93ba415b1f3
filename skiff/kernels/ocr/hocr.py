"""``--out FILE.hocr``: the results as hOCR, the HTML that Tesseract writes (``tesseract
img out hocr``) and that tools turning scans into searchable PDFs read (OCRmyPDF's
``hocrtransform``, hocr-tools' ``hocr-pdf``).

Each image or page is a ``div.ocr_page`` (``bbox 0 0 W H`` of the image as read: its EXIF
turn applied, a PDF page at the run's ``pdf_dpi``), each row a ``span.ocr_line`` with the
box around its lines, and each word an ``ocrx_word`` with the recognizer's confidence as
``x_wconf`` (0-100). The recognizer gives a box per line, not per word: a word's box is its
share of the line's box by characters (spaces counted), as close as a monospaced line.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

__all__ = ["write_hocr", "page_size", "HOCR_SUFFIXES"]

HOCR_SUFFIXES = (".hocr",)
_PAGE = re.compile(r"^(?P<path>.+)#page=(?P<page>[0-9]+)$")


def page_size(label: str, pdf_dpi: float = 200) -> tuple[int, int] | None:
    """``(width, height)`` in pixels of the image ``label`` names as the pipeline read it
    (``file.pdf#page=N`` a PDF page at ``pdf_dpi``, a TIFF page; EXIF turns of a quarter
    swap the two), from the file's header; None when it cannot be read."""
    path, page = label, None
    match = _PAGE.match(label)
    if match and not Path(label).exists():
        path, page = match["path"], int(match["page"])
    try:
        from .images import is_pdf, pdf_document, pdf_scale

        if is_pdf(path):
            with pdf_document(path) as doc:
                w, h = doc[(page or 1) - 1].get_size()
            scale = pdf_scale(w, h, pdf_dpi)  # as the page was rendered (a huge page less),
            return math.ceil(w * scale), math.ceil(h * scale)  # whole pixels as pdfium's
        from PIL import Image

        from .images import pixel_stretch

        with Image.open(path) as im:
            if page:
                im.seek(page - 1)
            w, h = im.size
            sx, sy = pixel_stretch(im.info.get("dpi"))
            w, h = round(w * sx), round(h * sy)
            turned = im.getexif().get(0x0112) in (5, 6, 7, 8)
        return (h, w) if turned else (w, h)
    except Exception:
        return None


def _bbox(box) -> list[int]:
    xs = [float(p[0]) for p in box]
    ys = [float(p[1]) for p in box]
    return [round(min(xs)), round(min(ys)), round(max(xs)), round(max(ys))]


def _words(text: str, bbox: list[int]) -> list[tuple[str, list[int]]]:
    """The words of a line with their share of its box by characters."""
    x0, y0, x1, y1 = bbox
    n = max(1, len(text))
    out = []
    for m in re.finditer(r"\S+", text):
        a = x0 + (x1 - x0) * m.start() / n
        b = x0 + (x1 - x0) * m.end() / n
        out.append((m.group(), [round(a), y0, round(b), y1]))
    return out


def _title(**parts) -> str:
    return "; ".join(f"{k} {v}" for k, v in parts.items())


def write_hocr(records: list[dict], path: str, *, pdf_dpi: float = 200) -> str:
    """Write the JSON records of a run (:meth:`OcrResult.to_json`, one per image or page)
    to ``path`` as one hOCR document, a page per record in their order (an image that could
    not be read: an empty page saying why in a comment). Returns ``path``."""
    esc = html.escape
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" '
           '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">',
           '<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">',
           "<head>", "<title></title>",
           '<meta http-equiv="Content-Type" content="text/html;charset=utf-8"/>',
           '<meta name="ocr-system" content="skiff"/>',
           '<meta name="ocr-capabilities" content="ocr_page ocr_line ocrx_word"/>',
           "</head>", "<body>"]
    for p, record in enumerate(records, 1):
        label = str(record.get("image"))
        lines = record.get("lines") or []
        size = page_size(label, pdf_dpi)
        reach = [_bbox(line["box"]) for line in lines]
        w = max([size[0] if size else 0] + [b[2] for b in reach])
        h = max([size[1] if size else 0] + [b[3] for b in reach])
        title = f'image "{label}"; bbox 0 0 {w} {h}; ppageno {p - 1}'
        out.append(f'<div class="ocr_page" id="page_{p}" title="{esc(title)}">')
        if record.get("error"):
            why = str(record["error"]).replace("--", "- -")
            out.append(f"<!-- not read: {esc(why)} -->")
        rows: dict[int, list[dict]] = {}
        for line in lines:
            rows.setdefault(int(line.get("row", 0)), []).append(line)
        n = 0
        for r, row in enumerate(rows.values(), 1):
            box = [_bbox(line["box"]) for line in row]
            span = [min(b[0] for b in box), min(b[1] for b in box),
                    max(b[2] for b in box), max(b[3] for b in box)]
            out.append(f'<span class="ocr_line" id="line_{p}_{r}" '
                       f'title="bbox {" ".join(map(str, span))}">')
            for line, lbox in zip(row, box, strict=True):
                conf = round(100 * float(line.get("score", 0)))
                for word, wbox in _words(str(line.get("text", "")), lbox):
                    n += 1
                    wt = _title(bbox=" ".join(map(str, wbox)), x_wconf=conf)
                    out.append(f'<span class="ocrx_word" id="word_{p}_{n}" '
                               f'title="{wt}">{esc(word)}</span>')
            out.append("</span>")
        out.append("</div>")
    out += ["</body>", "</html>", ""]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out))
    return path
