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
import itertools
import math
import re
from pathlib import Path

__all__ = ["write_hocr", "write_tsv", "page_size", "HOCR_SUFFIXES", "TSV_SUFFIXES"]

HOCR_SUFFIXES = (".hocr",)
TSV_SUFFIXES = (".tsv",)  # Tesseract's TSV (``tesseract img out tsv``, pytesseract's
# ``image_to_data``): a row per page, block, paragraph, line and word
TSV_HEADER = ("level", "page_num", "block_num", "par_num", "line_num", "word_num", "left",
              "top", "width", "height", "conf", "text")
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


def _words(text: str, bbox: list[int], angle: int = 0) -> list[tuple[str, list[int]]]:
    """The words of a line with their share of its box by characters, laid along the
    line's reading direction: ``angle`` 0 left to right, 180 right to left (a page upside
    down), 270 top to bottom (a page turned clockwise, or a vertical CJK column), 90 bottom
    to top."""
    x0, y0, x1, y1 = bbox
    n = max(1, len(text))
    out = []
    for m in re.finditer(r"\S+", text):
        a, b = m.start() / n, m.end() / n
        if angle == 0:
            wbox = [x0 + (x1 - x0) * a, y0, x0 + (x1 - x0) * b, y1]
        elif angle == 180:
            wbox = [x1 - (x1 - x0) * b, y0, x1 - (x1 - x0) * a, y1]
        elif angle == 270:
            wbox = [x0, y0 + (y1 - y0) * a, x1, y0 + (y1 - y0) * b]
        else:
            wbox = [x0, y1 - (y1 - y0) * b, x1, y1 - (y1 - y0) * a]
        out.append((m.group(), [round(v) for v in wbox]))
    return out


# a line of three characters or more this many times taller than wide stands (a calendar's
# "12" boxed upright is taller than wide, and two characters)
STANDING = 1.5
_WIDE = re.compile(r"[\u3000-\u9fff\uf900-\ufaff\uff00-\uffef]")


def _page_angle(rows: list[list[dict]]) -> int:
    """The reading direction of a page's lines from their boxes and the order of their rows
    (what a record holds: boxes are upright rectangles' corners in image order): most lines
    standing (:data:`STANDING` times taller than wide, three characters or more) read down
    (270) where the rows run right to left or there is one, up (90) where they run left to
    right; lines lying flat read right to left (180) where the rows run from the image's
    bottom up, else 0. A page
    stored sideways or upside down (a PDF page's ``/Rotate``, a scan fed in turned) is read
    turned, and its words' boxes follow (round 34: they were cut across a standing line,
    "Appendix" given 1915-1954 x 187-1022 of a line 103 px wide and 835 tall)."""
    boxes = [(_bbox(line["box"]), len(str(line.get("text", "")).replace(" ", "")))
             for row in rows for line in row]
    long = [b for b, n in boxes if n >= 3]
    if not long:
        return 0
    standing = sum(_standing(b) for b in long)
    firsts = [_bbox(row[0]["box"]) for row in rows if row]
    if 2 * standing > len(long):
        # the order of the standing rows: a heading lying flat over vertical columns (a
        # Japanese notice) is read first, and its place says nothing of theirs
        xs = [(b[0] + b[2]) / 2 for b in firsts if _standing(b)]
        return 90 if len(xs) >= 2 and xs[-1] > xs[0] else 270
    ys = [(b[1] + b[3]) / 2 for b in firsts]
    return 180 if len(ys) >= 2 and all(b < a for a, b in itertools.pairwise(ys)) else 0


def _standing(b: list[int]) -> bool:
    return (b[3] - b[1]) > STANDING * (b[2] - b[0])


def _lying(b: list[int]) -> bool:
    return (b[2] - b[0]) > STANDING * (b[3] - b[1])


def _title(**parts) -> str:
    return "; ".join(f"{k} {v}" for k, v in parts.items())


def _pages(records: list[dict], pdf_dpi: float):
    """Each record's page as hOCR and TSV lay it out: ``(label, (w, h), error, rows)``, a
    row ``(span, textangle, [(word, bbox, conf), ...])`` in reading order."""
    for record in records:
        label = str(record.get("image"))
        lines = record.get("lines") or []
        size = page_size(label, pdf_dpi)
        if size is None and record.get("size"):  # an array read in memory: its [h, w]
            size = (int(record["size"][1]), int(record["size"][0]))
        reach = [_bbox(line["box"]) for line in lines]
        w = max([size[0] if size else 0] + [b[2] for b in reach])
        h = max([size[1] if size else 0] + [b[3] for b in reach])
        rows: dict[int, list[dict]] = {}
        for line in lines:
            rows.setdefault(int(line.get("row", 0)), []).append(line)
        angle = _page_angle(list(rows.values()))
        laid = []
        for row in rows.values():
            box = [_bbox(line["box"]) for line in row]
            span = [min(b[0] for b in box), min(b[1] for b in box),
                    max(b[2] for b in box), max(b[3] for b in box)]
            # a row lying flat on a page of standing ones reads left to right (a heading
            # over vertical columns; round 35: "Notice for 12 May" was laid bottom to top)
            along = 0 if angle in (90, 270) and _lying(span) else angle
            # Tesseract's textangle: the baseline's turn, counterclockwise; none for a
            # vertical CJK column, whose characters stand upright
            turn = along if along and not (along == 270 and any(
                _WIDE.search(str(line.get("text", ""))) for line in row)) else 0
            words = [(word, wbox, float(line.get("score", 0)))
                     for line, lbox in zip(row, box, strict=True)
                     for word, wbox in _words(str(line.get("text", "")), lbox, along)]
            laid.append((span, turn, words))
        yield label, (w, h), record.get("error"), laid


def write_tsv(records: list[dict], path: str, *, pdf_dpi: float = 200) -> str:
    """Write the JSON records of a run to ``path`` as Tesseract's TSV (``tesseract img out
    tsv``; pytesseract's ``image_to_data``, read with ``pandas.read_csv(path, sep="\\t",
    quoting=3)``): its header, then for each page a level-1 row (``page_num`` from 1, the
    page's size), one block and paragraph (levels 2 and 3) around all its lines, a level-4
    row per line (a row of the page: a table's row, its cells' words in it) and a level-5
    row per word with its box (:func:`write_hocr`'s) and the recognizer's confidence 0-100
    (-1 on the other levels, whose text is empty, as Tesseract writes them). A page not
    read has its level-1 row only. Tabs and line breaks inside a word cannot occur (words
    are split at white space). Returns ``path``."""
    out = ["\t".join(TSV_HEADER)]

    def row(*cells) -> None:
        out.append("\t".join(str(c) for c in cells))

    for p, (_, (w, h), _, laid) in enumerate(_pages(records, pdf_dpi), 1):
        row(1, p, 0, 0, 0, 0, 0, 0, w, h, -1, "")
        if not laid:
            continue
        x0 = min(s[0] for s, _, _ in laid)
        y0 = min(s[1] for s, _, _ in laid)
        x1 = max(s[2] for s, _, _ in laid)
        y1 = max(s[3] for s, _, _ in laid)
        row(2, p, 1, 0, 0, 0, x0, y0, x1 - x0, y1 - y0, -1, "")
        row(3, p, 1, 1, 0, 0, x0, y0, x1 - x0, y1 - y0, -1, "")
        for n, (span, _, words) in enumerate(laid, 1):
            row(4, p, 1, 1, n, 0, span[0], span[1], span[2] - span[0], span[3] - span[1],
                -1, "")
            for k, (word, b, conf) in enumerate(words, 1):
                row(5, p, 1, 1, n, k, b[0], b[1], b[2] - b[0], b[3] - b[1],
                    round(100 * conf, 6), word)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("\n".join(out) + "\n")
    return path


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
    for p, (label, (w, h), error, laid) in enumerate(_pages(records, pdf_dpi), 1):
        title = f'image "{label}"; bbox 0 0 {w} {h}; ppageno {p - 1}'
        out.append(f'<div class="ocr_page" id="page_{p}" title="{esc(title)}">')
        if error:
            why = str(error).replace("--", "- -")
            out.append(f"<!-- not read: {esc(why)} -->")
        n = 0
        for r, (span, turn, words) in enumerate(laid, 1):
            lt = f'bbox {" ".join(map(str, span))}' + (f"; textangle {turn}" if turn else "")
            out.append(f'<span class="ocr_line" id="line_{p}_{r}" title="{lt}">')
            for word, wbox, score in words:
                n += 1
                wt = _title(bbox=" ".join(map(str, wbox)), x_wconf=round(100 * score))
                out.append(f'<span class="ocrx_word" id="word_{p}_{n}" '
                           f'title="{wt}">{esc(word)}</span>')
            out.append("</span>")
        out.append("</div>")
    out += ["</body>", "</html>", ""]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out))
    return path
