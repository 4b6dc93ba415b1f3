"""``--out FILE.csv``: a table's rows keep their empty cells, each cell in its column (round
24: "Netto, € 5.116,05" landed under "Menge" and a merged header in column A)."""

from __future__ import annotations

import numpy as np

from skiff.kernels.ocr.grid import grid_rows


def _line(text, x0, x1, row, y=0):
    return {"text": text, "row": row,
            "box": [[x0, y], [x1, y], [x1, y + 20], [x0, y + 20]], "score": 1.0}


def test_empty_cells_stay_in_their_columns():
    lines = [_line("Invoice 2024-17", 20, 300, 0),                      # a title: as it is
             _line("Artikel", 20, 120, 1), _line("Menge", 300, 360, 1),
             _line("Preis", 420, 480, 1), _line("Summe", 560, 640, 1),
             _line("Stuhl", 20, 90, 2), _line("4", 340, 352, 2),
             _line("120,00", 420, 490, 2), _line("480,00", 570, 640, 2),
             _line("Rabatt", 20, 100, 3), _line("-10 %", 420, 480, 3),
             _line("-48,00", 575, 640, 3),
             _line("Netto", 20, 90, 4), _line("432,00", 570, 640, 4),
             _line("Danke!", 20, 110, 5)]
    assert grid_rows(lines) == [
        ["Invoice 2024-17"],
        ["Artikel", "Menge", "Preis", "Summe"],
        ["Stuhl", "4", "120,00", "480,00"],
        ["Rabatt", "", "-10 %", "-48,00"],
        ["Netto", "", "", "432,00"],
        ["Danke!"]]


def test_a_merged_header_goes_to_the_column_it_covers_most_and_odd_rows_stay_as_they_come():
    lines = [_line("Region", 20, 100, 0), _line("Revenue (USD, thousands)", 230, 520, 0),
             _line("Q1", 220, 260, 1), _line("Q2", 420, 460, 1), _line("North", 20, 90, 1),
             _line("East", 20, 80, 2), _line("12.5", 220, 270, 2), _line("9.1", 420, 460, 2)]
    rows = grid_rows(lines)
    assert rows[1] == ["North", "Q1", "Q2"] and rows[2] == ["East", "12.5", "9.1"]
    assert rows[0][0] == "Region" and "Revenue (USD, thousands)" in rows[0][1:]
    # the fullest rows disagree on their columns (cells overlapping): written as they come
    clash = [_line("a", 0, 100, 0), _line("b", 90, 200, 0), _line("c", 0, 50, 1),
             _line("d", 40, 60, 1)]
    assert grid_rows(clash) == [["a", "b"], ["c", "d"]]


def test_a_rendered_invoice_with_empty_cells_in_csv(tmp_path, fonts):
    import csv

    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr.entry import run

    from .test_entry import ListReporter

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 20)
    table = [["Item", "Qty", "Price", "Amount"], ["Chair", "4", "120.00", "480.00"],
             ["Discount", "", "-10%", "-48.00"], ["Net", "", "", "432.00"]]
    page = Image.new("RGB", (720, 60 + 44 * len(table)), "white")
    draw = ImageDraw.Draw(page)
    for r, row in enumerate(table):
        for c, cell in enumerate(row):
            if cell:
                draw.text((30 + 170 * c, 30 + 44 * r), cell, font=font, fill="black")
    page.save(tmp_path / "invoice.png")
    out = tmp_path / "invoice.csv"
    run({"inputs": [str(tmp_path / "invoice.png")], "device": "cpu", "out": str(out),
         "threads": 2, "overlays": 0}, ListReporter())
    assert list(csv.reader(out.open(encoding="utf-8-sig", newline=""))) == table
    assert np.array(table).shape == (4, 4)
