"""Round 32 (h14): an OCR job reports the work of its images (pixels) with its progress, so
its ETA weighs a large page more than a small image (``JobState.eta``: the work left at the
recent rate of work). Oracles: the sizes Pillow reads from the files written here, the
bitmaps pypdfium2 renders, and the true time left of a fake clock where each image takes a
time proportional to its pixels (no timing here)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.jobs import JobState
from skiff.jobs.events import read_events
from skiff.jobs.reporter import RunReporter
from skiff.kernels.backend.report import Reporter
from skiff.kernels.ocr.entry import job_pixels, page_pixels, run

SMALL = [("total 96.50", (320, 60)), ("order 3390", (300, 56)), ("paid 2024", (280, 60))]
LARGE = [("invoice 4821", (1240, 1754)), ("street 17", (1240, 1754))]  # A4 at 150 dpi


def _page(text, size):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 26)
    im = Image.new("RGB", size, "white")
    ImageDraw.Draw(im).text((12, 14), text, font=font, fill="black")
    return im


@pytest.fixture(scope="module")
def folder(tmp_path_factory, fonts):
    d = tmp_path_factory.mktemp("small then large")
    for k, (text, size) in enumerate(SMALL):
        _page(text, size).save(d / f"a{k}.png")
    for k, (text, size) in enumerate(LARGE):
        _page(text, size).save(d / f"b{k}.png")
    return d


def _pil_pixels(paths):
    from PIL import Image

    out = []
    for p in paths:
        with Image.open(p) as im:
            out.append(im.width * im.height)
    return out


def _progress(run_dir):
    return [e for e in read_events(run_dir / "events.jsonl") if e["type"] == "progress"]


def _config(inputs, **kw):
    return {"inputs": [str(x) for x in inputs], "device": "cpu", "threads": 1,
            "overlays": 0, "out": None, **kw}


def test_the_job_reports_its_pixels_and_the_eta_weighs_them(folder, tmp_path):
    run_dir = tmp_path / "run"
    reporter = RunReporter(run_dir, max_rate=1e9)
    got = run(_config([folder]), reporter)
    reporter.flush()
    files = sorted(folder.glob("*.png"))
    pixels = _pil_pixels(files)  # the oracle: Pillow's sizes of the files written
    events = _progress(run_dir)
    assert got.images == len(files) == len(events) == 5
    assert all(e["work_total"] == sum(pixels) for e in events)
    assert [e["work"] for e in events] == list(np.cumsum(pixels).astype(float))
    text = {json.loads(x)["image"]: json.loads(x)["text"]
            for x in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()}
    assert "4821" in text[str(folder / "b0.png")]  # it read the pages too

    # a fake clock: each image takes 1 s per small image's worth of pixels
    per_pixel = 1.0 / pixels[0]
    weighted, plain, t = JobState(), JobState(), 100.0
    for state in (weighted, plain):
        state.apply({"t": t, "type": "status", "status": "running"})
    for k, event in enumerate(events):
        t += pixels[k] * per_pixel
        weighted.apply({**event, "t": t})
        plain.apply({k: v for k, v in {**event, "t": t}.items()
                     if k not in ("work", "work_total")})
        if k == len(SMALL) - 1:  # the small images read, the two pages ahead
            truth = sum(pixels[len(SMALL):]) * per_pixel
            assert truth > 100
            assert weighted.eta() == pytest.approx(truth, rel=0.2)
            assert plain.eta() < truth / 20  # units alone: "ETA 2 s" with minutes ahead
    assert weighted.eta() == 0.0


def test_pdf_and_tiff_pages_and_arrays(tmp_path, fonts):
    """A PDF page's pixels at ``pdf_dpi`` (pypdfium2's bitmap, rendered here), a TIFF's pages
    of different sizes, a ``#page=N`` label, arrays and PIL images; bytes and a text file
    have no size read so (None)."""
    import pypdfium2 as pdfium
    from PIL import Image

    pages = [_page("one", (600, 800)), _page("two", (800, 500))]
    pdf = tmp_path / "doc.pdf"
    pages[0].copy().save(pdf, save_all=True, append_images=pages[1:], resolution=100)
    for dpi in (200, 72, 133):
        doc = pdfium.PdfDocument(str(pdf))
        rendered = [float(np.prod(doc[k].render(scale=dpi / 72).to_numpy().shape[:2]))
                    for k in range(len(doc))]
        doc.close()
        assert page_pixels(str(pdf), dpi) == rendered
        assert page_pixels(f"{pdf}#page=2", dpi) == rendered[1:]
    tif = tmp_path / "scan.tif"
    fresh = [_page("one", (600, 800)), _page("two", (800, 500)), _page("three", (90, 70))]
    fresh[0].save(tif, save_all=True, compression="tiff_lzw", append_images=fresh[1:])
    with Image.open(tif) as im:
        decoded = []
        for k in range(im.n_frames):
            im.seek(k)
            decoded.append(float(np.asarray(im).shape[0] * np.asarray(im).shape[1]))
    assert page_pixels(str(tif)) == decoded == [480000.0, 400000.0, 6300.0]
    assert page_pixels(f"{tif}#page=3") == [6300.0]
    assert page_pixels(np.zeros((30, 40, 3), np.uint8)) == [1200.0]
    assert page_pixels(pages[1]) == [400000.0]
    text = tmp_path / "notes.txt"
    text.write_text("not an image")
    assert page_pixels(pdf.read_bytes()) is None
    assert page_pixels(str(text)) is None and page_pixels(str(tmp_path / "gone.png")) is None
    # a file not sized so gives its error at once: a pixel's work, the others' kept (round
    # 45; it was None for the whole job); bytes are not sized so: no work at all
    assert job_pixels([str(pdf), str(text)]) == [page_pixels(str(pdf)), [1.0]]
    assert job_pixels([str(pdf), pdf.read_bytes()]) is None
    assert job_pixels(["doc.pdf"], 100, cwd=str(tmp_path)) == [[600.0 * 800, 800.0 * 500]]


def test_an_input_of_unknown_size_weighs_nothing(folder, tmp_path):
    """A text file among the images: its size cannot be read, and it gives its error line
    without decoding anything: it weighs a pixel and the images keep their work (round 45;
    before, no event carried work and the ETA counted images)."""
    bad = tmp_path / "notes.txt"
    bad.write_text("not an image")
    run_dir = tmp_path / "run"
    reporter = RunReporter(run_dir, max_rate=1e9)
    got = run(_config([folder / "a0.png", bad, folder / "a1.png"]), reporter)
    reporter.flush()
    events = _progress(run_dir)
    assert got.errors == 1 and len(events) == 3
    pixels = _pil_pixels([folder / "a0.png", folder / "a1.png"])
    assert [e["work_total"] for e in events] == [sum(pixels) + 1.0] * 3
    assert events[-1]["work"] == sum(pixels) + 1.0


def test_an_unreadable_page_counts_its_file_read(tmp_path, fonts):
    """A file whose header reads but whose pixels do not: its error ends its work, so the
    last event's work is the whole (the bar and the ETA end together)."""
    good = tmp_path / "a.png"
    _page("paid 2024", (280, 60)).save(good)
    cut = tmp_path / "b.png"
    _page("order 3390", (600, 400)).save(cut)
    cut.write_bytes(cut.read_bytes()[:200])  # the header and a little of the pixels
    assert page_pixels(str(cut)) == [240000.0]
    run_dir = tmp_path / "run"
    reporter = RunReporter(run_dir, max_rate=1e9)
    got = run(_config([good, cut]), reporter)
    reporter.flush()
    events = _progress(run_dir)
    assert got.errors == 1
    assert [e["work"] for e in events] == [280.0 * 60, 280.0 * 60 + 240000.0]
    assert events[-1]["work_total"] == events[-1]["work"]


def _earlier(folder, out, names):
    records = [{"image": str(folder / n), "text": "", "lines": [], "error": None,
                "unread": 0, "elapsed_s": 0.1} for n in names]
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_a_resumed_job_counts_the_kept_pages_work(folder, tmp_path):
    out = tmp_path / "earlier.jsonl"
    _earlier(folder, out, ["a0.png", "a1.png"])
    run_dir = tmp_path / "run"
    reporter = RunReporter(run_dir, max_rate=1e9)
    run(_config([folder], out=str(out), resume_from=str(out)), reporter)
    reporter.flush()
    pixels = _pil_pixels(sorted(folder.glob("*.png")))
    events = _progress(run_dir)
    assert [e["done"] for e in events] == [3, 4, 5]
    assert all(e["work_total"] == sum(pixels) for e in events)
    assert [e["work"] for e in events] == list(np.cumsum(pixels).astype(float)[2:])


class _OldReporter(RunReporter):
    """A reporter written before round 32: its progress takes no work."""

    def progress(self, done, total=None, *, unit="step", message=None):
        super().progress(done, total, unit=unit, message=message)


def test_a_reporter_without_work_is_called_without_it(folder, tmp_path):
    run_dir = tmp_path / "run"
    reporter = _OldReporter(run_dir, max_rate=1e9)
    got = run(_config([folder / "a0.png", folder / "a1.png"]), reporter)
    reporter.flush()
    assert got.errors == 0 and [e["done"] for e in _progress(run_dir)] == [1, 2]


class _Rank(Reporter):  # no run folder: no parts to join (as test_resume_progress_r30j)
    def __init__(self):
        self.calls = []

    def progress(self, done, total=None, **kw):
        self.calls.append((done, total, kw.get("work"), kw.get("work_total")))


def test_ranks_report_their_share_of_the_work(folder, tmp_path):
    """--np 2 (one process plays both ranks): each rank's work_total is the pixels of the
    images it reads (r, r + 2, ...) plus its share of the kept ones'."""
    pytest.importorskip("mpi4py")
    out = tmp_path / "earlier.jsonl"
    _earlier(folder, out, ["a0.png"])
    files = sorted(folder.glob("*.png"))
    pixels = _pil_pixels(files)
    left = pixels[1:]
    seen = {}
    for rank in (1, 0):
        reporter = _Rank()
        reporter.rank, reporter.world_size = rank, 2
        reporter.split_progress = lambda: None
        run(_config([folder], resume_from=str(out)), reporter)
        seen[rank] = reporter.calls
    # rank 0 keeps the one kept page (a share of 1 of 1), rank 1 none
    assert seen[0][-1][2:] == (pixels[0] + sum(left[0::2]),) * 2
    assert seen[1][-1][2:] == (float(sum(left[1::2])),) * 2
    assert seen[0][-1][:2] == (3, 3) and seen[1][-1][:2] == (2, 2)
