"""Round 36: ``--out FILE.csv`` of a spreadsheet's screenshot whose "Total" header is set
left in its cell over amounts set right (``grid._column_of``): the header overlaps no
column's cells and stood nearer the column before it, so it went under "Mar". Oracle: the
drawn sheet (bench_ocr_user36's scene), cell by cell."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.ocr.grid import grid_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


def _line(text, x0, x1, row):
    return {"text": text, "row": row, "box": [[x0, 0], [x1, 0], [x1, 10], [x0, 10]]}


def test_a_left_set_header_over_right_set_amounts_takes_their_column():
    # boxes as skiff read the scene: amounts end at 339, 479, 619, 758; "Total" 630-675
    lines = [_line("Region", 22, 82, 0), _line("Q1 2026", 371, 452, 0),
             _line("Total", 630, 675, 0)]
    for r, (name, *nums) in enumerate([("North", "1,204", "1,318", "1,297", "3,819"),
                                       ("South", "988", "1,041", "1,120", "3,149")], 1):
        lines.append(_line(name, 22, 78, r))
        for j, t in enumerate(nums):
            right = (339, 479, 619, 758)[j]
            lines.append(_line(t, right - 10 * len(t), right, r))
    got = grid_rows(lines)
    assert got[0] == ["Region", "", "Q1 2026", "", "Total"]
    assert got[1] == ["North", "1,204", "1,318", "1,297", "3,819"]


def test_a_header_between_two_left_set_columns_goes_to_the_nearer():
    lines = [_line("Name", 10, 60, 0), _line("City", 160, 200, 0)]
    for r, (a, b) in enumerate([("Ann Lee", "Oslo"), ("Bo Yu", "Lima"), ("Cy Ito", "Rome")], 1):
        lines += [_line(a, 10, 10 + 12 * len(a), r), _line(b, 210, 210 + 12 * len(b), r)]
    assert grid_rows(lines)[0] == ["Name", "City"]


def test_the_sheet_read_and_written_as_csv_rows(pipe):
    pytest.importorskip("onnxruntime")
    import bench_ocr_user36 as user36

    try:
        im, truth = user36.spreadsheet_merged_header()
    except OSError as exc:
        pytest.skip(f"fonts not installed: {exc}")
    result = pipe(np.asarray(im.convert("RGB")))
    rows = grid_rows([{"text": ln.text, "row": ln.row, "box": ln.box} for ln in result.lines])
    assert rows[0][0] == "Region" and rows[0][-1] == "Total"
    assert rows[1] == ["", "Jan", "Feb", "Mar", ""]
    assert [" ".join(c for c in r if c) for r in rows[2:5]] == truth[2:5]
