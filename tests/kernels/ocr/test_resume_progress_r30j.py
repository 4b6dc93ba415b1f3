"""A resumed OCR job counts its progress over the whole job (round 30, going on after a
stop): the pages kept from the earlier job are done already, so the bar says "5/7", not
"1/3", and ranks that share the work (``--np 2``) add up to the whole folder too."""

from __future__ import annotations

import json

import pytest

from skiff.jobs.split import whole_progress, write_rank_progress
from skiff.kernels.ocr.entry import run

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
    d = tmp_path_factory.mktemp("resumed folder")
    for k, text in enumerate(WORDS):
        _page(text).save(d / f"p{k}.png")
    return d


def _earlier(d, out, n):
    """What a job cancelled after ``n`` pages left: their JSON lines."""
    records = [{"image": str(d / f"p{k}.png"), "text": WORDS[k], "lines": [], "error": None,
                "unread": 0, "elapsed_s": 0.1} for k in range(n)]
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _progress(reporter):
    return [(e[1], e[2]) for e in reporter.events if e[0] == "progress"]


def test_a_resumed_job_counts_the_kept_pages_as_done(folder, tmp_path):
    out = tmp_path / "res.jsonl"
    _earlier(folder, out, 4)
    reporter = ListReporter()
    got = run({"inputs": [str(folder)], "device": "cpu", "out": str(out), "threads": 1,
               "overlays": 0, "resume_from": str(out)}, reporter)
    pages = len(list(folder.glob("*.png")))  # the oracle: the folder's pages, its lines
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == pages and got.images == pages
    progress = _progress(reporter)
    assert progress and all(total == pages for _, total in progress)
    assert progress[0][0] == got.kept + 1 and progress[-1][0] == pages


def test_nothing_left_to_read_says_the_whole_job_done(folder, tmp_path):
    out = tmp_path / "res.jsonl"
    _earlier(folder, out, len(WORDS))
    reporter = ListReporter()
    run({"inputs": [str(folder)], "device": "cpu", "out": str(out), "threads": 1,
         "overlays": 0, "resume_from": str(out)}, reporter)
    pages = len(list(folder.glob("*.png")))
    assert _progress(reporter)[-1] == (pages, pages)


class _State:
    done = total = None
    split = False


def test_ranks_of_a_resumed_job_add_up_to_the_whole_folder(folder, tmp_path):
    """--np 2, 3 of 7 pages kept: each rank counts its part and a share of the kept pages;
    the job's progress (skiff.jobs.split sums the ranks' parts) is the whole folder's, and
    rank 0's part is about half of it, as its rate is scaled by."""
    pytest.importorskip("mpi4py")
    kept = 3
    out = tmp_path / "earlier.jsonl"
    _earlier(folder, out, kept)
    run_dir = tmp_path / "run"
    last = {}
    for rank in (1, 0):  # rank 0 last: it gathers (one MPI process plays both)
        reporter = ListReporter()
        reporter.rank, reporter.world_size = rank, 2
        reporter.split_progress = lambda: None
        run({"inputs": [str(folder)], "device": "cpu", "out": None, "threads": 1,
             "overlays": 0, "resume_from": str(out)}, reporter)
        last[rank] = _progress(reporter)[-1]
    write_rank_progress(run_dir, 1, {"done": last[1][0], "total": last[1][1],
                                     "unit": "image"})
    state = _State()
    state.own = last[0]
    whole_progress(state, run_dir, 2)
    pages = len(list(folder.glob("*.png")))
    assert (state.done, state.total) == (pages, pages)
    assert abs(last[0][1] - last[1][1]) <= 1  # rank 0's share of the whole: about half
