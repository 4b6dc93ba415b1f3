"""``--pages``: some pages of PDFs and multi-page TIFFs, the rest of the inputs whole."""

from __future__ import annotations

import json

import pytest

from skiff.kernels.ocr.entry import parse_pages, run, select_pages
from skiff.kernels.ocr.synth import char_accuracy

from .test_entry import ListReporter

WORDS = ["Section one opens", "Second page here", "Third page text", "Fourth and last"]


@pytest.fixture(scope="module")
def docs(tmp_path_factory, fonts):
    from PIL import Image, ImageDraw, ImageFont

    d = tmp_path_factory.mktemp("pages")
    face = ImageFont.truetype(fonts["latin"], 28)
    pages = []
    for text in WORDS:
        im = Image.new("RGB", (420, 90), "white")
        ImageDraw.Draw(im).text((20, 25), text, font=face, fill="black")
        pages.append(im)
    pages[0].copy().save(d / "scan.tif", save_all=True, append_images=pages[1:3],
                         compression="tiff_lzw")
    pages[0].copy().save(d / "doc.pdf", save_all=True, append_images=pages[1:],
                         resolution=150)
    pages[3].save(d / "one.png")
    return d


def test_parse_pages():
    assert parse_pages("3") == [(3, 3)]
    assert parse_pages(" 1-2 , 4,9-") == [(1, 2), (4, 4), (9, None)]
    for bad in ("0", "3-1", "a", "1-2-3", "", "2,,3", "-4"):
        with pytest.raises(ValueError, match="--pages"):
            parse_pages(bad)


def test_select_pages(docs):
    pdf, tif, png = str(docs / "doc.pdf"), str(docs / "scan.tif"), str(docs / "one.png")
    assert select_pages([pdf, png], None) == [pdf, png]
    assert select_pages([pdf, tif, png], "2-3") == [f"{pdf}#page=2", f"{pdf}#page=3",
                                                     f"{tif}#page=2", f"{tif}#page=3", png]
    assert select_pages([pdf, tif], "3-") == [f"{pdf}#page=3", f"{pdf}#page=4",
                                              f"{tif}#page=3"]
    # none of the pages asked for: the first, whose result says how many there are
    assert select_pages([tif], "7,9") == [f"{tif}#page=7"]


def test_run_reads_only_the_pages_asked_for(docs, tmp_path):
    out = tmp_path / "r.jsonl"
    result = run({"inputs": [str(docs)], "device": "cpu", "threads": 2, "overlays": 0,
                  "out": str(out), "pages": "2,4"}, ListReporter(run_dir=tmp_path))
    got = {d["image"].split("/")[-1]: d for d in map(json.loads, out.read_text().splitlines())}
    # the TIFF has no page 4: its page 2 alone (a folder of documents of different lengths)
    assert sorted(got) == ["doc.pdf#page=2", "doc.pdf#page=4", "one.png", "scan.tif#page=2"]
    assert result.images == 4 and result.errors == 0
    for name, truth in [("doc.pdf#page=2", WORDS[1]), ("doc.pdf#page=4", WORDS[3]),
                        ("scan.tif#page=2", WORDS[1]), ("one.png", WORDS[3])]:
        assert char_accuracy(got[name]["text"], truth) >= 0.9, (name, got[name]["text"])


def test_the_option_is_checked_before_reading(docs):
    from skiff.kinds.ocr import COMMAND, to_config

    ns = COMMAND.parse(f"{docs} --pages 1-2,5")
    config = to_config({k: v for k, v in vars(ns).items()
                        if k not in ("np", "runner", "wait", "output")})
    assert config["pages"] == "1-2,5"
    assert to_config({"inputs": [str(docs)]})["pages"] is None
    with pytest.raises(ValueError, match="'x' is not a page"):
        to_config({"inputs": [str(docs)], "pages": "1,x"})


def test_a_page_beyond_the_document_is_an_error_line(docs, tmp_path):
    out = tmp_path / "r.jsonl"
    result = run({"inputs": [str(docs / "scan.tif")], "device": "cpu", "threads": 2,
                  "overlays": 0, "out": str(out), "pages": "5"}, ListReporter(run_dir=tmp_path))
    (doc,) = map(json.loads, out.read_text().splitlines())
    assert result.errors == 1 and "has 3 pages, asked for page 5" in doc["error"]


def test_the_python_call_takes_pages(docs):
    import skiff

    pdf, png = str(docs / "doc.pdf"), str(docs / "one.png")
    got = skiff.ocr(pdf, pages="2-3", device="cpu", threads=2)
    assert [r.image.split("/")[-1] for r in got] == ["doc.pdf#page=2", "doc.pdf#page=3"]
    assert [char_accuracy(r.text, t) >= 0.9 for r, t in zip(got, WORDS[1:3], strict=True)] \
        == [True, True], [r.text for r in got]
    one = skiff.ocr(pdf, pages=4, device="cpu", threads=2)  # one page: one result
    assert one.image.endswith("doc.pdf#page=4") and char_accuracy(one.text, WORDS[3]) >= 0.9
    listed = skiff.ocr([pdf, png], pages=[1], device="cpu", threads=2)
    assert [r.image.split("/")[-1] for r in listed] == ["doc.pdf#page=1", "one.png"]
    # "4-": to each document's end, and the 3-page TIFF (none of them) its error, unread:
    # two pages read fewer than "3-" (round 46), the open range still checked
    folder = skiff.ocr(str(docs), pages="4-", device="cpu", threads=2)
    assert [r.image.split("/")[-1] for r in folder] == ["doc.pdf#page=4", "one.png",
                                                       "scan.tif#page=4"]
    assert [r.error is None for r in folder] == [True, True, False]
    assert "has 3 pages, asked for page 4" in folder[2].error
    with pytest.raises(ValueError, match="--pages"):
        skiff.ocr(pdf, pages="0", device="cpu")


def test_an_animation_gives_each_frame_as_a_page(fonts, tmp_path):
    """An animated GIF (and APNG) was read as its first frame only; its frames are pages now,
    as a multi-page TIFF's are, and ``--pages`` picks among them."""
    from PIL import Image, ImageDraw, ImageFont

    import skiff
    from skiff.kernels.ocr.entry import count_pages

    face = ImageFont.truetype(fonts["latin"], 28)
    frames = []
    for text in WORDS[:3]:
        im = Image.new("RGB", (420, 90), "white")
        ImageDraw.Draw(im).text((20, 25), text, font=face, fill="black")
        frames.append(im)
    gif, png = tmp_path / "anim.gif", tmp_path / "anim.png"
    frames[0].save(gif, save_all=True, append_images=frames[1:], duration=100)
    frames[0].save(png, save_all=True, append_images=frames[1:], duration=100)
    frames[0].save(tmp_path / "still.gif")
    assert [count_pages(str(p)) for p in (gif, png, tmp_path / "still.gif")] == [3, 3, 1]
    out = tmp_path / "r.jsonl"
    result = run({"inputs": [str(gif)], "device": "cpu", "threads": 2, "overlays": 0,
                  "out": str(out)}, ListReporter(run_dir=tmp_path))
    docs = list(map(json.loads, out.read_text().splitlines()))
    assert result.images == 3 and result.errors == 0
    assert [d["image"].split("/")[-1] for d in docs] == [f"anim.gif#page={k}" for k in (1, 2, 3)]
    assert [char_accuracy(d["text"], t) >= 0.9 for d, t in zip(docs, WORDS, strict=False)] \
        == [True] * 3, [d["text"] for d in docs]
    second = skiff.ocr(str(png), pages=2, device="cpu", threads=2)
    assert second.image.endswith("anim.png#page=2") and char_accuracy(second.text, WORDS[1]) >= 0.9
