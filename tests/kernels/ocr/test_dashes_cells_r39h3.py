"""Round 39 (h3): a table cell's lone dash that the detector boxed not at all
(`cell_dashes.cell_dashes`), and which dash a lone mark's ink says (DejaVu's en dash).

The oracle is the renderer: a timetable or spreadsheet drawn with PIL, each value cell's
box its drawn text's rectangle (a detector's box), the dash cells given no box."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.cell_dashes import cell_dashes
from skiff.kernels.ocr.marks import EN_DASH, lone_dashes

FONTS = "/usr/share/fonts/truetype/"
LIB_SANS = FONTS + "liberation2/LiberationSans-Regular.ttf"
LIB_SERIF = FONTS + "liberation2/LiberationSerif-Regular.ttf"
DEJAVU = FONTS + "dejavu/DejaVuSans.ttf"
DEJAVU_SERIF = FONTS + "dejavu/DejaVuSerif.ttf"
DEJAVU_BOLD = FONTS + "dejavu/DejaVuSans-Bold.ttf"
DASHES = ("-", "\u2013", "\u2014", "\u2212", "\u4e00")


def face(path: str, px: int):
    try:
        return ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")


def table_page(rows: list[list[str]], path: str, px: int, rules: bool = False,
               boxed_dashes: bool = False, extra=None):
    """``rows`` of cells drawn as a timetable (the first column flush left, the others
    flush right in columns 4.5 digit heights wide); the boxes a detector gives the cells
    that are not a lone dash (their ink's rectangle with a margin of px // 4), as rows of
    indices in reading order."""
    f = face(path, px)
    step, col = int(2.2 * px), int(4.5 * px)
    width = 7 * px + col * (len(rows[0]) - 1) + 40
    im = Image.new("RGB", (width, step * len(rows) + 2 * px), "white")
    d = ImageDraw.Draw(im)
    boxes, texts, order = [], [], []
    for r, row in enumerate(rows):
        y = px + r * step
        mine = []
        for j, cell in enumerate(row):
            if j == 0:
                x = 20
            else:
                right = 7 * px + j * col
                x = right - d.textlength(cell if cell not in DASHES else "00:00", font=f)
                if cell in DASHES:  # a dash stands in the middle of its column
                    x += (d.textlength("00:00", font=f) - d.textlength(cell, font=f)) / 2
            d.text((x, y), cell, font=f, fill=(0, 0, 0))
            if cell in DASHES and not boxed_dashes:
                continue
            x0, y0, x1, y1 = d.textbbox((x, y), cell, font=f)
            m = px // 4
            boxes.append(np.array([[x0 - m, y0 - m], [x1 + m, y0 - m], [x1 + m, y1 + m],
                                   [x0 - m, y1 + m]], float))
            texts.append(cell)
            mine.append(len(boxes) - 1)
        order.append(mine)
        if rules:
            d.line((10, y + step - px // 2, width - 10, y + step - px // 2), fill=(160, 160, 160))
    if extra is not None:
        extra(d, f)
    return np.asarray(im)[:, :, ::-1].copy(), boxes, texts, order


def insert(rows, boxes, texts, found):
    """The page's text with ``found`` inserted as the pipeline wires it."""
    rows = [list(r) for r in rows]
    texts, found = found
    texts = list(texts)
    for r, place, _box, t in found:
        texts.append(t)
        rows[r].insert(place, len(texts) - 1)
    return "\n".join(" ".join(texts[i] for i in row) for row in rows)


TIMES = [["Kiel Hbf", "06:02", "06:40", "07:12"],
         ["Raisdorf", "06:11", "{d}", "07:21"],
         ["Preetz", "06:19", "{d}", "{d}"],
         ["Plön", "{d}", "07:05", "07:38"]]


@pytest.mark.parametrize(("path", "px", "dash"), [
    (LIB_SANS, 22, "\u2013"), (LIB_SERIF, 26, "\u2014"), (LIB_SANS, 30, "-"),
    (DEJAVU, 22, "\u2013"), (DEJAVU_SERIF, 30, "\u2013"), (DEJAVU, 26, "-")])
def test_unboxed_dash_cells_found(path, px, dash):
    rows = [[c.format(d=dash) for c in row] for row in TIMES]
    page, boxes, texts, order = table_page(rows, path, px, rules=px == 26)
    found = cell_dashes(order, boxes, texts, page)
    assert insert(order, boxes, texts, found) == "\n".join(" ".join(r) for r in rows)


def test_a_row_of_dashes_alone():
    """A station where no train stops: its row has one box, its three cells dashes."""
    rows = [["Kiel Hbf", "06:02", "06:40", "07:12"], ["Preetz", "\u2013", "\u2013", "\u2013"],
            ["Plön", "06:30", "07:05", "07:38"]]
    page, boxes, texts, order = table_page(rows, LIB_SANS, 24)
    found = cell_dashes(order, boxes, texts, page)
    assert insert(order, boxes, texts, found) == "\n".join(" ".join(r) for r in rows)


def test_boxed_dashes_and_plain_tables_unchanged():
    """A dash a box already holds, a table with no dash, a rule under each row, a mark
    outside every column and a CJK page add nothing."""
    rows = [[c.format(d="\u2013") for c in row] for row in TIMES]
    page, boxes, texts, order = table_page(rows, LIB_SANS, 22, boxed_dashes=True)
    assert cell_dashes(order, boxes, texts, page)[1] == []
    plain = [["Kiel Hbf", "06:02", "06:40"], ["Preetz", "06:19", "06:52"],
             ["Plön", "06:30", "07:05"]]

    def stray(d, f):  # a dash left of the times' columns, under no box of another row
        d.text((5 * 22, 22 + 2.2 * 22), "\u2013", font=f, fill=(0, 0, 0))

    page, boxes, texts, order = table_page(plain, LIB_SANS, 22, rules=True, extra=stray)
    assert cell_dashes(order, boxes, texts, page)[1] == []
    page, boxes, texts, order = table_page(
        [[c.format(d="\u2013") for c in row] for row in TIMES], LIB_SANS, 22)
    texts[0] = "基尔站"
    assert cell_dashes(order, boxes, texts, page)[1] == []
    assert cell_dashes(order, boxes, texts, None) == (texts, [])


@pytest.mark.parametrize(("path", "px"), [(DEJAVU, 22), (DEJAVU, 30), (DEJAVU_SERIF, 26)])
def test_dejavu_en_dash_is_wider_than_its_hyphen(path, px):
    """DejaVu Sans and Serif draw "–" 0.38-0.50 of a digit's height wide less its thickness
    and "-" 0.19-0.27 (14-40 px): a lone cell's ink tells them apart, read or found."""
    for dash in ("-", "\u2013"):
        rows = [["Preetz", "06:19", dash, "06:57"], ["Plön", "06:30", "07:05", "07:38"]]
        page, boxes, texts, order = table_page(rows, path, px, boxed_dashes=True)
        read = ["\u4e00" if t == dash else t for t in texts]
        assert lone_dashes(order, boxes, read, page) == texts
        page, boxes, texts, order = table_page(rows, path, px)
        assert insert(order, boxes, texts, cell_dashes(order, boxes, texts, page)) == \
            "\n".join(" ".join(r) for r in rows)


def test_bold_dejavu_en_dash_stays_a_hyphen():
    """DejaVu Sans Bold's "–" spans no more than the hyphens of CJK serif faces (Noto Serif
    CJK's reach 0.32, AR PL UKai's 0.54 with the line's digits): under ``EN_DASH`` it is
    written "-", as its ink cannot say otherwise."""
    rows = [["Preetz", "06:19", "\u2013", "06:57"], ["Plön", "06:30", "07:05", "07:38"]]
    page, boxes, texts, order = table_page(rows, DEJAVU_BOLD, 22)
    found = cell_dashes(order, boxes, texts, page)
    assert [t for _, _, _, t in found[1]] == ["-"]
    assert EN_DASH == pytest.approx(0.38)


def test_a_pages_lone_dashes_written_alike():
    """The same "–" drawn in four cells of a DejaVu Sans 18 px timetable spans 0.31-0.44 by
    where the pixel grid falls: read one by one, some were written "-" (round 39's drawn
    timetables: "Plön - 21:37 -" under "Preetz 16:49 – 16:20"). Alike, their median says."""
    rows = [["Kiel Hbf", "08:53", "18:01", "\u2013"], ["Preetz", "16:49", "\u2013", "16:20"],
            ["Plön", "\u2013", "21:37", "\u2013"]]
    page, boxes, texts, order = table_page(rows, DEJAVU, 18, boxed_dashes=True)
    read = ["-" if t == "\u2013" and k > 6 else t for k, t in enumerate(texts)]
    assert read != texts
    assert cell_dashes(order, boxes, read, page) == (texts, [])
