"""A folder's text lines as a pandas table (round 30, a user's folders): ``to_pandas()`` on
a job's outcome, its results or one result gives a row per text line with its file, page,
row and box, and a row saying why for a file that could not be read. Checked against the
text Pillow rendered and the ink box it drew it in."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr.entry import run

from .test_entry import ListReporter

pd = pytest.importorskip("pandas")

PAGES = [[("Invoice 4821", 30, 30), ("Total 96.50", 330, 30), ("Street 17", 30, 90)],
         [("Order 3390", 30, 30)]]


def _draw(items):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 26)
    im = Image.new("RGB", (600, 150), "white")
    draw = ImageDraw.Draw(im)
    inks = []
    for text, x, y in items:
        draw.text((x, y), text, font=font, fill="black")
        inks.append(draw.textbbox((x, y), text, font=font))
    return im, inks


def test_a_folder_as_a_table_of_lines(tmp_path, fonts):
    first, inks = _draw(PAGES[0])
    first.save(tmp_path / "a.png")
    pages = [_draw(items)[0] for items in PAGES]
    pages[0].save(tmp_path / "b.pdf", save_all=True, append_images=pages[1:], resolution=72)
    (tmp_path / "c.jpg").write_bytes(b"")
    outcome = run({"inputs": [str(tmp_path)], "device": "cpu", "out": str(tmp_path / "r.jsonl"),
                   "threads": 1, "overlays": 0, "pdf_dpi": 72}, ListReporter())
    frame = outcome.to_pandas()
    assert list(frame.columns) == ["file", "page", "row", "line", "text", "score", "x0", "y0",
                                   "x1", "y1", "error"]
    a = frame[frame.file == str(tmp_path / "a.png")]
    assert a.text.tolist() == [t for t, _, _ in PAGES[0]]
    assert a.row.tolist() == [0, 0, 1] and a.line.tolist() == [0, 1, 2]
    assert a.page.isna().all() and a.error.isna().all() and a.error.iloc[0] is None
    for (_, got), (x0, y0, x1, y1) in zip(a.iterrows(), inks, strict=True):
        assert got.x0 <= x0 + 2 and got.y0 <= y0 + 2 and got.x1 >= x1 - 2 and got.y1 >= y1 - 2
        assert got.x1 - got.x0 < 1.5 * (x1 - x0) + 20 and 0 < got.score <= 1
    b = frame[frame.file == str(tmp_path / "b.pdf")]
    assert list(zip(b.page, b.text, strict=True)) == \
        [(k + 1, t) for k, items in enumerate(PAGES) for t, _, _ in items]
    c = frame[frame.file == str(tmp_path / "c.jpg")]
    assert len(c) == 1 and c.text.tolist() == [""] and "empty" in c.error.iloc[0]
    # the kept results and one result give the same rows
    pd.testing.assert_frame_equal(outcome.results.to_pandas(), frame)
    pd.testing.assert_frame_equal(outcome[0].to_pandas(), a.reset_index(drop=True))
