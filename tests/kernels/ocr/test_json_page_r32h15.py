"""A PDF user's JSON lines say the page, its size and resolution (round 32, h15): a line had
only ``#page=N`` in its label (the pandas table had ``page``), so a user placing boxes back
on the PDF had to render the page again to learn the frame. The oracle: pdfium's own
rendering of each page at the run's dpi (and its page count)."""

from __future__ import annotations

import json

import numpy as np

from skiff.kernels.ocr.entry import _result_of, run
from skiff.kernels.ocr.result import OcrResult

from .test_entry import ListReporter


def _pdf(path, fonts):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(fonts["latin"], 28)
    pages = []
    for text, size in (("Invoice 4821", (420, 90)), ("Total due 17", (300, 160))):
        im = Image.new("RGB", size, "white")
        ImageDraw.Draw(im).text((20, 25), text, font=face, fill="black")
        pages.append(im)
    pages[0].save(path, save_all=True, append_images=pages[1:], resolution=150)
    return str(path)


def test_the_json_lines_of_a_pdf_have_page_size_and_dpi(tmp_path, fonts):
    import pypdfium2 as pdfium

    pdf = _pdf(tmp_path / "doc.pdf", fonts)
    png = tmp_path / "one.png"
    from PIL import Image

    Image.new("RGB", (120, 50), "white").save(png)
    out = tmp_path / "r.jsonl"
    run({"inputs": [pdf, str(png)], "device": "cpu", "threads": 2, "overlays": 0,
         "out": str(out), "pdf_dpi": 120}, ListReporter(run_dir=tmp_path))
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    doc = pdfium.PdfDocument(pdf)
    truth = [doc[k].render(scale=120 / 72).to_numpy().shape[:2] for k in range(len(doc))]
    assert [d["page"] for d in docs] == [1, 2, None]
    assert [d["size"] for d in docs] == [list(truth[0]), list(truth[1]), [50, 120]]
    assert [d["dpi"] for d in docs] == [120, 120, None]
    assert truth[0] != truth[1]  # two page sizes: each its own
    back = _result_of(docs[1])  # a resumed job's kept record says the same
    assert back.to_json() == {**docs[1], "elapsed_s": back.to_json()["elapsed_s"]}


def test_an_array_result_and_an_error_have_no_page():
    rec = OcrResult("<array 0>", size=(30, 40)).to_json()
    assert (rec["page"], rec["size"], rec["dpi"]) == (None, [30, 40], None)
    rec = OcrResult("scan.pdf#page=3", error="damaged", pdf_dpi=200.0).to_json()
    assert (rec["page"], rec["size"], rec["dpi"]) == (3, None, 200)
    assert np.isnan(OcrResult("a#page=x").to_json()["page"] or np.nan)
