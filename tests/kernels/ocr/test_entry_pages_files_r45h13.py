"""Round 45 (h13): an OCR folder job's words: pages and files, and ``--pages`` past a
document's end.

- The summary said "45 of 47 images read" when those were the pages of 33 files; the job's
  ``result.json`` now holds its ``files`` and the summary says "45 of 47 pages read from 33
  files" (a file a page: images, as before).
- ``--pages 2-`` over a folder of documents of different lengths: a one-page PDF gave an error
  record ("'a.pdf' has 1 pages, asked for page 2") and the job exited 1; the pages that exist
  are now read, the short document is named in one line of the summary, and the job has no
  failure. Every document short of the pages: each its error line, the job fails (as before;
  "has 1 page", not "1 pages").

Oracle: Pillow's page counts of the documents written here (rendered, no truth from skiff).
"""

from __future__ import annotations

import pytest

from skiff.jobs.events import read_events
from skiff.jobs.reporter import RunReporter
from skiff.kernels.ocr.entry import file_count, run, select_pages
from skiff.kinds.ocr import KIND


def _doc(path, pages):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 22)
    ims = []
    for k in range(pages):
        im = Image.new("RGB", (240, 44), "white")
        ImageDraw.Draw(im).text((8, 10), f"page {k + 1} of {pages}", font=font, fill="black")
        ims.append(im)
    ims[0].save(path, save_all=True, append_images=ims[1:])
    return path


def _pages(path) -> int:
    from PIL import Image

    with Image.open(path) as im:
        return getattr(im, "n_frames", 1)


@pytest.fixture(scope="module")
def folder(tmp_path_factory, fonts):
    d = tmp_path_factory.mktemp("pdfs")
    _doc(d / "a one.pdf", 1)
    _doc(d / "b three.tif", 3)
    _doc(d / "c two.pdf", 2)
    _doc(d / "d note.png", 1)
    return d


def test_pages_and_files_are_counted_as_they_are(folder):
    paths = sorted(str(p) for p in folder.iterdir())
    items = select_pages(paths, "1-")
    assert len(items) == 1 + 3 + 2 + 1  # every page (Pillow's counts: the TIFFs)
    # the PDFs: the pages Pillow wrote; the others as Pillow reads them back
    assert sum(_pages(p) for p in paths if not p.endswith(".pdf")) + 1 + 2 == len(items)
    assert file_count(items) == 4
    said = KIND.summary({"images": 47, "errors": 2, "lines": 90, "files": 33})[0]
    assert said == "45 of 47 pages read from 33 files, 90 lines of text (2 could not be read)"
    said = KIND.summary({"images": 5, "errors": 0, "lines": 7, "files": 5,
                         "seconds": 2.0, "images_per_s": 2.5})
    assert said[0] == "5 images read, 7 lines of text" and "(2.5 images/s)" in said[1]
    said = KIND.summary({"images": 12, "lines": 12, "files": 1, "images_per_s": 3.0})
    assert said[0] == "12 pages read from 1 file, 12 lines of text"
    assert "(3 pages/s)" in said[1]


def test_pages_past_a_documents_end_are_noted_not_failed(folder, tmp_path):
    """``--pages 2-``: b's pages 2-3, c's page 2 and the PNG (an image is read whole) are
    read; a one-page PDF is named, not an error, and the job has no failure."""
    reporter = RunReporter(tmp_path / "run", max_rate=1e9)
    config = {"inputs": [str(folder)], "device": "cpu", "threads": 1, "overlays": 0,
              "pages": "2-"}
    got = run(config, reporter)
    reporter.flush()
    result = got.to_json()
    assert result["errors"] == 0
    assert result["images"] == (_pages(folder / "b three.tif") - 1) + 1 + 1
    assert result["files"] == 3 and result["short"] == 1
    said = KIND.summary(result)
    assert said[0].startswith("4 pages read from 3 files")
    assert "1 document has none of --pages 2-, not read: a one.pdf (1 page)" in said
    logs = [e["message"] for e in read_events(tmp_path / "run" / "events.jsonl")
            if e["type"] == "log"]
    assert any(m.startswith("OCR of 4 pages of 3 files with ") for m in logs), logs
    labels = [r["image"] for r in result["results"]]
    assert not any(label.startswith(str(folder / "a one.pdf")) for label in labels)
    # every document short of the pages: each its error line, the job fails (as before)
    again = run({**config, "inputs": [str(folder / "a one.pdf"), str(folder / "b three.tif")],
                 "pages": "5-"}, RunReporter(tmp_path / "run2", max_rate=1e9)).to_json()
    assert again["errors"] == 2 and again["short"] == 0
    assert [r["error"] for r in again["results"]] == [
        "'a one.pdf' has 1 page, asked for page 5", "'b three.tif' has 3 pages, asked for page 5"]


def test_the_reporter_writes_ready_and_the_ocr_wrappers_say_they_take_it(tmp_path):
    """``RunReporter.progress(..., ready=N)`` writes it with the progress; the OCR kernel's
    wrappers of the reporter (a resumed job's offset, the held result's flush) say that
    the reporter they wrap takes it, since their own ``progress`` takes any keyword."""
    from skiff.kernels.ocr.entry import _Flushed, _Kept

    reporter = RunReporter(tmp_path / "run", max_rate=1e9)
    wrapped = _Flushed(_Kept(reporter, 2))
    assert wrapped.takes_ready and _Kept(reporter, 0).takes_ready
    assert not _Flushed(type("Old", (), {"progress": lambda self, done, total: None})()) \
        .takes_ready
    wrapped.progress(1, 10, unit="image", ready=3)
    reporter.flush()
    (event,) = [e for e in read_events(tmp_path / "run" / "events.jsonl")
                if e["type"] == "progress"]
    assert (event["done"], event["total"], event["ready"]) == (3, 12, 3)
