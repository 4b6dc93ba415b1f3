"""``--out FILE.csv`` read back in pandas (round 30, a user's folders): a title row of one
cell above a table of three, a cell holding a comma and a quote, two images. Every row is
as wide as the widest, so ``pandas.read_csv(f, header=None)`` reads the file (it refused
one whose later rows were wider), and each cell is the text rendered there."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr.entry import run

from .test_entry import ListReporter

pd = pytest.importorskip("pandas")

TABLE = [["Quarterly statement"], ["Item", "Qty", "Amount"], ["Rent, office", "1", "1200"],
         ['Desk "oak"', "2", "340"]]


def _render(rows, path):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 22)
    im = Image.new("RGB", (640, 40 + 46 * len(rows)), "white")
    draw = ImageDraw.Draw(im)
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            draw.text((30 + 230 * c, 24 + 46 * r), cell, font=font, fill="black")
    im.save(path)


def test_a_csv_of_ragged_rows_reads_in_pandas(tmp_path, fonts):
    _render(TABLE, tmp_path / "a.png")
    _render([["Thank you"]], tmp_path / "b.png")
    out = tmp_path / "rows.csv"
    run({"inputs": [str(tmp_path / "a.png"), str(tmp_path / "b.png")], "device": "cpu",
         "out": str(out), "threads": 1, "overlays": 0}, ListReporter())
    raw = out.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw  # what spreadsheets expect
    frame = pd.read_csv(out, header=None, encoding="utf-8-sig", dtype=str,
                        keep_default_na=False)
    want = [[str(tmp_path / "a.png"), *row] for row in TABLE] + \
        [[str(tmp_path / "b.png"), "Thank you"]]
    width = max(map(len, want))
    assert frame.shape == (len(want), width)
    assert frame.values.tolist() == [row + [""] * (width - len(row)) for row in want]


def test_out_json_is_one_json_array(tmp_path, fonts):
    """``--out FILE.json`` was JSON lines under a .json name: ``json.load`` and
    ``pandas.read_json`` refused it ("Extra data", "Trailing data"). It is now one array of
    the same records as the run folder's JSON lines, each with the text rendered."""
    import json

    _render([["Thank you"]], tmp_path / "a.png")
    _render([["Rent, office"]], tmp_path / "b.png")
    (tmp_path / "c.png").write_bytes(b"")
    out, runs = tmp_path / "out" / "r.json", tmp_path / "run"
    runs.mkdir()
    reporter = ListReporter(run_dir=str(runs))
    run({"inputs": [str(tmp_path)], "device": "cpu", "out": str(out), "threads": 1,
         "overlays": 0}, reporter)
    records = json.loads(out.read_text(encoding="utf-8"))
    lines = [json.loads(line) for line in open(runs / "results.jsonl", encoding="utf-8")]
    assert records == lines and [r["text"] for r in records] == ["Thank you", "Rent, office", ""]
    assert records[2]["error"] and "empty" in records[2]["error"]
    frame = pd.read_json(out)
    assert frame.shape[0] == 3 and frame.text.tolist()[:2] == ["Thank you", "Rent, office"]
