"""Round 45 (h2): a folder's pages in the records a user greps and tables.

- A page read where nothing looked like text keeps a row in ``to_pandas()`` (text "",
  line <NA>), as an unreadable file keeps one (error set): a folder's table had no row for
  a blank sheet, so ``groupby(["file", "page"])`` counted fewer pages than were read.
- A record has ``file``, the path to open: a PDF's or TIFF's page is labelled
  ``scan.tif#page=2``, which no script can open.
Oracle: the pages rendered here, one of them blank."""

from __future__ import annotations

import json

import pytest

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def scan(tmp_path_factory, fonts):
    from PIL import Image, ImageDraw, ImageFont

    import skiff

    d = tmp_path_factory.mktemp("pages")
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 26)
    pages = [Image.new("RGB", (320, 60), "white") for _ in range(3)]
    ImageDraw.Draw(pages[0]).text((12, 14), "total 96.50", font=font, fill="black")
    ImageDraw.Draw(pages[2]).text((12, 14), "order 3390", font=font, fill="black")
    pages[0].save(d / "scan.tif", save_all=True, append_images=pages[1:])
    pages[0].save(d / "one.png")
    return d, skiff.ocr([str(d / "scan.tif"), str(d / "one.png")], threads=1)


def test_a_blank_page_keeps_its_row(scan):
    _, results = scan
    frame = results.to_pandas()
    assert frame.page.tolist()[:3] == [1, 2, 3]
    blank = frame[frame.page == 2].iloc[0]
    assert blank.text == "" and pd.isna(blank.line) and blank.error is None
    assert frame.text.tolist() == ["total 96.50", "", "order 3390", "total 96.50"]


def test_a_record_names_the_file_to_open(scan):
    d, results = scan
    records = [json.loads(json.dumps(r.to_json())) for r in results]
    assert [(r["file"], r["page"]) for r in records] == \
        [(str(d / "scan.tif"), k) for k in (1, 2, 3)] + [(str(d / "one.png"), None)]
    from PIL import Image

    for r in records:  # the file opens, and the page's size is the record's
        with Image.open(r["file"]) as im:
            im.seek((r["page"] or 1) - 1)
            assert [im.height, im.width] == r["size"]
