"""A cancelled folder run goes on where it stopped (round 30, a user's folders): the pages
its JSON lines hold are kept, not read again, and the others read; the resumed file has
every page in the order of the inputs, as the rendered text says."""

from __future__ import annotations

import json

import pytest

from skiff.kernels.ocr.entry import left_to_read, read_done, results_file, run

from .test_entry import ListReporter

WORDS = ["invoice 4821", "total 96.50", "street 17", "order 3390", "paid 2024", "bank 551",
         "net 7702"]


def _page(text):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 28)
    im = Image.new("RGB", (420, 80), "white")
    ImageDraw.Draw(im).text((20, 20), text, font=font, fill="black")
    return im


@pytest.fixture(scope="module")
def folder(tmp_path_factory, fonts):
    d = tmp_path_factory.mktemp("user folder")
    truth = {}
    for k, text in enumerate(WORDS[:3]):
        _page(text).save(d / f"a{k}.png")
        truth[str(d / f"a{k}.png")] = text
    pages = [_page(t) for t in WORDS[3:6]]  # a scanned PDF of three pages
    pages[0].save(d / "b scan.pdf", save_all=True, append_images=pages[1:], resolution=72)
    for k, text in enumerate(WORDS[3:6]):
        truth[f"{d / 'b scan.pdf'}#page={k + 1}"] = text
    _page(WORDS[6]).save(d / "c.png")
    truth[str(d / "c.png")] = WORDS[6]
    return d, truth


def _read(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_a_cut_run_resumed_keeps_what_it_read_and_reads_the_rest(folder, tmp_path):
    d, truth = folder
    out = tmp_path / "res.jsonl"
    # what a job cancelled after four pages (one of the PDF's) left: a line cut short by
    # the kill, and an input that had failed (read again)
    done = [{"image": str(d / "a0.png"), "text": "KEPT a0", "lines": [], "error": None,
             "unread": 0, "elapsed_s": 0.1},
            {"image": str(d / "a1.png"), "text": "", "lines": [], "error": "disk hiccup",
             "unread": 0, "elapsed_s": 0.1},
            {"image": str(d / "a2.png"), "text": "KEPT a2", "lines": [], "error": None,
             "unread": 0, "elapsed_s": 0.1},
            {"image": f"{d / 'b scan.pdf'}#page=2", "text": "KEPT p2", "lines": [],
             "error": None, "unread": 0, "elapsed_s": 0.1}]
    out.write_text("".join(json.dumps(r) + "\n" for r in done) + '{"image": "x", "te',
                   encoding="utf-8")
    reporter = ListReporter()
    got = run({"inputs": [str(d)], "device": "cpu", "out": str(out), "threads": 1,
               "overlays": 0, "resume_from": str(out)}, reporter)
    records = _read(out)
    assert [r["image"] for r in records] == list(truth)  # input order, pages in order
    by = {r["image"]: r for r in records}
    kept = {str(d / "a0.png"): "KEPT a0", str(d / "a2.png"): "KEPT a2",
            f"{d / 'b scan.pdf'}#page=2": "KEPT p2"}
    for label, text in kept.items():  # not read again
        assert by[label]["text"] == text
    for label, text in truth.items():  # the others read, as rendered
        if label not in kept:
            assert by[label]["text"] == text and by[label]["error"] is None, by[label]
    assert got.images == len(truth) and got.errors == 0 and got.kept == len(kept)
    assert got.to_json()["kept"] == len(kept)
    progress = [e for e in reporter.events if e[0] == "progress"]
    assert progress and max(e[2] or 0 for e in progress) == len(truth)  # the whole job (r30j)


def test_what_is_left_of_a_folder(folder, tmp_path):
    d, truth = folder
    items = [str(d / "a0.png"), str(d / "b scan.pdf"), str(d / "c.png")]
    part = tmp_path / "r.jsonl.part1"  # a rank's part of a job of --np 2 never joined
    part.write_text(json.dumps({"image": f"{d / 'b scan.pdf'}#page=3", "error": None}) + "\n"
                    + json.dumps({"image": str(d / "c.png"), "error": "boom"}) + "\n"
                    + json.dumps({"image": str(d / "other.png"), "error": None}) + "\n")
    done = read_done(str(tmp_path / "r.jsonl"), items)
    assert list(done) == [f"{d / 'b scan.pdf'}#page=3"]
    assert left_to_read(items, done) == [str(d / "a0.png"), f"{d / 'b scan.pdf'}#page=1",
                                         f"{d / 'b scan.pdf'}#page=2", str(d / "c.png")]
    assert results_file({"out": "/x/t.txt"}, "/runs/j") == "/runs/j/results.jsonl"
    assert results_file({"out": "/x/t.jsonl"}, "/runs/j") == "/x/t.jsonl"
    assert results_file({"out": None}, "/runs/j") == "/runs/j/results.jsonl"
