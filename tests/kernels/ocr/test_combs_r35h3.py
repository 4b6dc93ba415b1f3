"""Comb fields (one character a box) joined into one line (round 35, ``combs.join_combs``).

The oracle is the drawn truth: each character is drawn in its own cell of a comb, its box
the glyph's own ink box from PIL, and the pieces given to ``join_combs`` as the detector
and recognizer leave them (one character a box, or several with spaces read between them).
"""

from __future__ import annotations

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from skiff.kernels.ocr.combs import comb_cells, join_combs  # noqa: E402

FACES = ["/usr/share/fonts/truetype/dejavu/DejaVuSerifCondensed-Italic.ttf",
         "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
         "/usr/share/fonts/truetype/liberation2/LiberationMono-Regular.ttf"]


def _font(k: int, size: int):
    try:
        return ImageFont.truetype(FACES[k % len(FACES)], size)
    except OSError:
        pytest.skip("fonts not installed")


def _box(x0, y0, x1, y1):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float64)


def comb(value: str, *, size=24, cell=36, full=False, face=0, label="Name", ground=255):
    """A form line: ``label`` then a comb of ``len(value) + 2`` cells holding ``value``
    (a space leaves its cell blank); the pieces are one a character, ink boxes padded."""
    im = Image.new("RGB", (160 + (len(value) + 3) * cell, 120), (ground,) * 3)
    d = ImageDraw.Draw(im)
    f = _font(face, size)
    lf = _font(1, 20)
    d.text((10, 40), label, font=lf, fill=0)
    x0, y = 140, 30
    n = len(value) + 2
    top = y if full else y + int(0.7 * (size + 16))
    d.line((x0, y + size + 16, x0 + n * cell, y + size + 16), fill=0, width=1)
    for k in range(n + 1):
        d.line((x0 + k * cell, top, x0 + k * cell, y + size + 16), fill=0, width=1)
    if full:
        d.line((x0, y, x0 + n * cell, y), fill=0, width=1)
    boxes, texts = [_box(*d.textbbox((10, 40), label, font=lf))], [label]
    for k, ch in enumerate(value):
        if ch == " ":
            continue
        w = d.textlength(ch, font=f)
        at = (x0 + k * cell + (cell - w) / 2, y + 4)
        d.text(at, ch, font=f, fill=(20, 30, 120))
        bx = d.textbbox(at, ch, font=f)
        boxes.append(_box(bx[0] - 2, bx[1] - 2, bx[2] + 2, bx[3] + 2))
        texts.append(ch)
    return np.asarray(im), boxes, texts


def _merged(boxes, texts, groups):
    """Pieces ``groups`` (runs of indices) boxed together, read with spaces between."""
    nb, nt = [], []
    for g in groups:
        pts = np.concatenate([boxes[i] for i in g])
        (x0, y0), (x1, y1) = pts.min(0), pts.max(0)
        nb.append(_box(x0, y0, x1, y1))
        nt.append(" ".join(texts[i] for i in g))
    return nb, nt


def _read(image, boxes, texts):
    rows = [list(range(len(boxes)))]
    out, _ = join_combs(rows, boxes, texts, image)
    return " ".join(t for t in out if t)


@pytest.mark.parametrize("value", ["MUELLER", "80331", "14031988", "K7Q"])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("face,size,cell", [(0, 24, 36), (1, 20, 30), (2, 28, 44)])
def test_comb_one_piece_a_character(value, full, face, size, cell):
    image, boxes, texts = comb(value, size=size, cell=cell, full=full, face=face)
    assert " ".join(texts) != f"Name {value}" or len(value) == 1
    assert _read(image, boxes, texts) == f"Name {value}"


def test_comb_pieces_read_with_spaces_inside():
    """The detector boxed "MUE" "L" "L" together and the recognizer read "MUE L L"."""
    image, boxes, texts = comb("MUELLER")
    nb, nt = _merged(boxes, texts, [[0], [1, 2, 3, 4, 5], [6], [7]])
    nt[1] = "MUE L L"
    assert _read(image, nb, nt) == "Name MUELLER"


def test_blank_cell_is_a_space():
    image, boxes, texts = comb("VAN DER", label="Surname")
    assert _read(image, boxes, texts) == "Surname VAN DER"


def test_comb_turned_a_little():
    """A phone's photo: the form turned 2 degrees, the boxes turned with it."""
    image, boxes, texts = comb("80331", size=24, cell=36)
    h, w = image.shape[:2]
    turned = np.asarray(Image.fromarray(image).rotate(2, Image.BICUBIC, fillcolor=(255,) * 3))
    t = np.deg2rad(2)
    c = np.array([w / 2, h / 2])
    rot = np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
    moved = [(b - c) @ rot.T + c for b in boxes]
    assert _read(turned, moved, texts) == "Name 80331"


def test_letter_spaced_capitals_stay():
    """No line under them: not a comb."""
    im = Image.new("RGB", (700, 100), (255,) * 3)
    d = ImageDraw.Draw(im)
    f = _font(1, 28)
    boxes, texts = [], []
    for k, ch in enumerate("OPEN"):
        bx = d.textbbox((30 + 44 * k, 30), ch, font=f)
        d.text((30 + 44 * k, 30), ch, font=f, fill=0)
        boxes.append(_box(*bx))
        texts.append(ch)
    assert _read(np.asarray(im), boxes, texts) == "O P E N"


def test_ruled_table_stays():
    """Words in ruled cells: the column rules run on below the row, and a cell holds more
    than one character."""
    im = Image.new("RGB", (700, 200), (255,) * 3)
    d = ImageDraw.Draw(im)
    f = _font(1, 20)
    xs = [20, 120, 220, 320, 420]
    for y in (20, 80, 140):
        d.line((20, y, 420, y), fill=0, width=2)
    for x in xs:
        d.line((x, 20, x, 140), fill=0, width=2)
    boxes, texts = [], []
    for j, word in enumerate(["A", "B", "Maths", "C"]):
        bx = d.textbbox((xs[j] + 10, 40), word, font=f)
        d.text((xs[j] + 10, 40), word, font=f, fill=0)
        boxes.append(_box(*bx))
        texts.append(word)
    assert _read(np.asarray(im), boxes, texts) == "A B Maths C"


def test_grid_of_single_digits_stays():
    """A sudoku's row: the rules run on above and below each row."""
    im = Image.new("RGB", (500, 300), (255,) * 3)
    d = ImageDraw.Draw(im)
    f = _font(1, 28)
    for k in range(6):
        d.line((20 + 50 * k, 20, 20 + 50 * k, 270), fill=0, width=2)
        d.line((20, 20 + 50 * k, 270, 20 + 50 * k), fill=0, width=2)
    boxes, texts = [], []
    for k, ch in enumerate("5379"):
        at = (35 + 50 * (k + (k > 1)), 78)
        d.text(at, ch, font=f, fill=0)
        boxes.append(_box(*d.textbbox(at, ch, font=f)))
        texts.append(ch)
    assert _read(np.asarray(im), boxes, texts) == "5 3 7 9"


def test_dark_ground_is_no_form():
    image, boxes, texts = comb("80331")
    assert comb_cells(255 - image.mean(2), 130, 500, 34, 62, 28) is None


def test_comb_form_end_to_end():
    """The pipeline's own boxes and readings of a drawn comb form, joined as
    ``OcrPipeline`` joins them (rows from the result's lines)."""
    from skiff.kernels.ocr import OcrPipeline

    image, boxes, texts = comb("80331", label="Postcode")
    r = next(iter(OcrPipeline("ch", threads=1).run([image])))
    rows: dict[int, list[int]] = {}
    for k, line in enumerate(r.lines):
        rows.setdefault(line.row, []).append(k)
    out, _ = join_combs(list(rows.values()), [np.asarray(line.box) for line in r.lines],
                        [line.text for line in r.lines], image)
    assert " ".join(t for t in out if t) == "Postcode 80331"
