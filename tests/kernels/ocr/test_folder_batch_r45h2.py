"""Round 45 (h2): a user's backlog folder read as one job.

- A damaged or empty file among a folder's images took the whole job's ETA back to
  counting pages (``job_pixels`` gave None for all when one file had no size), so 12 PDF
  pages of 3.7 MP among 0.5 MP images were weighed as equals. Now such a file weighs
  ``UNREAD_WORK`` and the other pages keep their pixels. Oracle: Pillow's sizes of the
  files written here, and a fake clock where a page takes time in proportion to its pixels.
- A folder led by a damaged file drew fewer overlays, numbered from where the damaged
  ones stood (``overlay-002.png`` alone for two asked): the first pages read are drawn,
  numbered from 1.
- A page read without an error where nothing looked like text (a separator sheet, a scan
  that came out white) had no row in ``--out FILE.csv`` (it was in the text, hOCR and TSV
  files) and was not named by the summary. Oracle: the pages rendered blank here.
"""

from __future__ import annotations

import csv
import json

import pytest

from skiff.jobs import JobState
from skiff.jobs.events import read_events
from skiff.jobs.reporter import RunReporter
from skiff.kernels.ocr.entry import UNREAD_WORK, job_pixels, run
from skiff.kinds.ocr import KIND


def _page(text, size):
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", size, "white")
    if text:
        font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 26)
        ImageDraw.Draw(im).text((12, 14), text, font=font, fill="black")
    return im


@pytest.fixture(scope="module")
def backlog(tmp_path_factory, fonts):
    d = tmp_path_factory.mktemp("backlog")
    (d / "a empty.jpg").write_bytes(b"")  # a copy that never finished
    _page("total 96.50", (320, 60)).save(d / "b.png")
    _page("", (900, 600)).save(d / "c blank.png")  # a separator sheet
    pages = [_page("order 3390", (300, 56)), _page("", (300, 56))]
    pages[0].save(d / "d scan.tif", save_all=True, append_images=pages[1:])
    return d


def _pixels(path):
    from PIL import Image

    with Image.open(path) as im:
        return float(im.width * im.height)


def test_an_unreadable_file_keeps_the_others_pixels(backlog, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not an image")
    png = backlog / "b.png"
    got = job_pixels([str(backlog / "a empty.jpg"), str(png), str(text),
                      str(tmp_path / "gone.png"), f"{backlog / 'd scan.tif'}#page=9"])
    assert got == [[UNREAD_WORK], [_pixels(png)], [UNREAD_WORK], [UNREAD_WORK], [UNREAD_WORK]]
    assert UNREAD_WORK < 0.001 * _pixels(png)
    assert job_pixels([png.read_bytes()]) is None  # bytes: not sized so, no work at all


@pytest.fixture(scope="module")
def folder_run(backlog, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    run_dir, out = tmp / "run", tmp / "rows.csv"
    reporter = RunReporter(run_dir, max_rate=1e9)
    config = {"inputs": [str(backlog)], "device": "cpu", "threads": 1, "overlays": 2,
              "out": str(out)}
    got = run(config, reporter)
    reporter.flush()
    events = [e for e in read_events(run_dir / "events.jsonl") if e["type"] == "progress"]
    return got, events, out, run_dir


def test_the_folder_reports_its_work_and_the_eta_weighs_it(backlog, folder_run):
    got, events, _, _ = folder_run
    assert got.images == 5 and got.errors == 1
    sizes = [UNREAD_WORK, _pixels(backlog / "b.png"), _pixels(backlog / "c blank.png"),
             300.0 * 56, 300.0 * 56]
    assert [e.get("work_total") for e in events] == [sum(sizes)] * 5
    assert events[-1]["work"] == sum(sizes)
    # a fake clock: each page takes 1 s per small page's pixels; after the first two
    # the 900 x 600 sheet is most of what is left
    per_pixel = 1.0 / sizes[1]
    state, t = JobState(), 100.0
    state.apply({"t": t, "type": "status", "status": "running"})
    for k, event in enumerate(events[:2]):
        t += sizes[k] * per_pixel
        state.apply({**event, "t": t})
    truth = sum(sizes[2:]) * per_pixel
    assert state.eta() == pytest.approx(truth, rel=0.2)


def test_blank_pages_keep_their_rows_and_are_named(backlog, folder_run):
    got, _, out, run_dir = folder_run
    blank = [str(backlog / "c blank.png"), f"{backlog / 'd scan.tif'}#page=2"]
    assert got.blank == blank
    with open(out, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    firsts = [row[0] for row in rows]
    for label in blank:  # one row, the page's name and no text
        assert firsts.count(label) == 1
        assert not any(rows[firsts.index(label)][1:])
    assert firsts.count(f"{backlog / 'd scan.tif'}#page=1") == 1
    # every page the JSON lines hold has a row, in their order
    records = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert list(dict.fromkeys(firsts)) == [r["image"] for r in records]
    summary = KIND.summary(got.to_json())
    said = [x for x in summary if "nothing that looked like text" in x]
    assert said == ["2 pages had nothing that looked like text: c blank.png, d scan.tif#page=2"]


def test_a_resumed_job_names_the_blank_pages_it_kept(backlog, tmp_path):
    earlier = tmp_path / "earlier.jsonl"
    label = f"{backlog / 'd scan.tif'}#page=2"
    earlier.write_text(json.dumps({"image": label, "text": "", "lines": [], "error": None,
                                   "unread": 0, "elapsed_s": 0.1}) + "\n", encoding="utf-8")
    config = {"inputs": [str(backlog / "c blank.png"), str(backlog / "d scan.tif")],
              "device": "cpu", "threads": 1, "overlays": 0, "out": str(earlier),
              "resume_from": str(earlier)}
    got = run(config, RunReporter(tmp_path / "run", max_rate=1e9))
    assert got.kept == 1 and got.images == 3
    assert got.blank == [str(backlog / "c blank.png"), label]  # in the inputs' order


def test_a_scanners_pages_in_their_numbers_order(tmp_path):
    """``scan 1.png`` ... ``scan 12.png`` as a file manager shows them: plain sorting read
    ``scan 10``, ``scan 11``, ``scan 12`` between ``scan 1`` and ``scan 2``. The oracle: the
    numbers written into the names."""
    from skiff.kernels.ocr.entry import expand_inputs

    order = list(range(1, 13))
    for k in (7, 12, 1, 10, 2, 11, 3, 9, 4, 8, 5, 6):  # made out of order
        (tmp_path / f"scan {k}.png").write_bytes(b"")
    (tmp_path / "2024").mkdir()
    for k in (10, 9):
        (tmp_path / "2024" / f"p{k}.pdf").write_bytes(b"")
    skipped: list[str] = []
    got = expand_inputs([str(tmp_path)], skipped)
    assert [int(p.rsplit(" ", 1)[1][:-4]) for p in got] == order
    assert skipped == [str(tmp_path / "2024") + "/"]
    got = expand_inputs([str(tmp_path / "**" / "*")])
    assert [p[len(str(tmp_path)) + 1:] for p in got] == \
        ["2024/p9.pdf", "2024/p10.pdf"] + [f"scan {k}.png" for k in order]


def test_overlays_are_the_first_pages_read(folder_run):
    from PIL import Image

    _, _, _, run_dir = folder_run
    drawn = sorted(p.name for p in run_dir.glob("overlay-*.png"))
    assert drawn == ["overlay-001.png", "overlay-002.png"]
    with Image.open(run_dir / "overlay-001.png") as im:  # b.png's (320 x 60), not the sheet's
        assert im.width / im.height == pytest.approx(320 / 60, rel=0.05)


def test_a_dry_run_says_what_it_would_read(backlog, tmp_path):
    """``--dry-run`` on a backlog listed the config alone; it now says how many files and
    pages the job would read and what it would skip (the counts of the files written
    here: 4 files, the TIFF's 2 pages)."""
    from skiff.jobs.dryrun_document import dry_run_document, dry_run_lines

    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "2024").mkdir()
    for name in ("a empty.jpg", "b.png", "c blank.png", "d scan.tif"):
        (tmp_path / name).write_bytes((backlog / name).read_bytes())
    doc = dry_run_document("ocr", [str(tmp_path)])
    assert doc["plan"] == ("reads 4 files, 5 pages; skipped 1 file that is not an image or "
                           "PDF: notes.txt; 1 subfolder not read: 2024/ (DIR/**/* reads "
                           "subfolders)")
    assert f"plan: {doc['plan']}" in dry_run_lines(doc)
    doc = dry_run_document("ocr", [str(tmp_path / "*.tif"), "--pages", "2-9"])
    assert doc["plan"] == "reads 1 file, 1 page"


def test_a_page_past_the_end_names_the_file(backlog, tmp_path):
    """``--pages 10-`` over a folder: a document without such a page said the job's full
    path of its relative input (``'/home/me/scans/backlog/d scan.tif' has 2 pages``), the
    other errors the file's name; now the name, as the record's label gives the rest."""
    from PIL import Image

    from skiff.kernels.ocr.images import ImageError, iter_pages

    pdf = tmp_path / "two pages.pdf"
    Image.new("RGB", (60, 40), "white").save(pdf, save_all=True,
                                              append_images=[Image.new("RGB", (60, 40))])
    for path, n in ((backlog / "d scan.tif", 2), (pdf, 2)):
        with pytest.raises(ImageError) as err:
            next(iter_pages(f"{path}#page=9"))
        assert str(err.value) == f"{path.name!r} has {n} pages, asked for page 9"


def test_a_web_page_saved_as_a_pdf_is_named_so(tmp_path):
    """A backlog's ``invoice.pdf`` that is a sign-in page a download saved: it said it held
    text, which a user reads as "the PDF is text"; now it says a web page and the fix."""
    from skiff.kernels.ocr.images import ImageError, iter_pages

    page = tmp_path / "invoice.pdf"
    page.write_text("<!DOCTYPE html>\n<html><head><title>Sign in</title></head></html>\n")
    with pytest.raises(ImageError) as err:
        next(iter_pages(str(page)))
    assert "is a web page ('<!DOCTYPE html>')" in str(err.value)
    assert "download it again" in str(err.value)
