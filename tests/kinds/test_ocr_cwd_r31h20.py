"""An OCR thread job reads its relative inputs from the folder it started in (round 31): a
``%cd`` (``os.chdir``) in the notebook while the job runs in the kernel's process made the
images not yet read fail "no such file" (3 of 8 in a user's notebook). The results keep the
paths as written, and ``jobs resume`` still matches the pages read by them. The oracle: the
same job with no ``chdir``; the texts are also checked against the rendered ground truth."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from skiff.jobs import submit
from skiff.jobs.reporter import Reporter
from skiff.kernels.ocr.pipeline import OcrPipeline
from skiff.kinds.ocr import KIND

N = 6


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    from PIL import Image

    from skiff.kernels.ocr.synth import FontsMissing, render_sample

    root = tmp_path_factory.mktemp("cwd")
    (root / "imgs").mkdir()
    (root / "elsewhere").mkdir()
    truth = {}
    try:
        for k in range(N):
            s = render_sample("clean", k, seed=20 + k)
            Image.fromarray(s.image).save(root / "imgs" / f"p{k}.png")
            truth[f"imgs/p{k}.png"] = s.text
    except FontsMissing as exc:
        pytest.skip(str(exc))
    return root, truth


def _words(text: str) -> set[str]:
    return {w for w in text.split() if len(w) > 2}


def _records(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _job(root: Path, monkeypatch, *, move: bool):
    """``%ocr imgs --out out/r.jsonl`` on the thread runner; with ``move``, the process goes
    to ``elsewhere/`` once the job has loaded its first images (the loader is held at the
    third until then, so the move falls mid-job whatever the machine's speed)."""
    monkeypatch.chdir(root)
    monkeypatch.setenv("SKIFF_RUNS", str(root / f"runs-{move}"))
    reached, go = threading.Event(), threading.Event()
    load = OcrPipeline._load

    def held(self, index, number, item, budget=None):
        if number == 2 and move:
            reached.set()
            go.wait(60)
        yield from load(self, index, number, item, budget)

    monkeypatch.setattr(OcrPipeline, "_load", held)
    out = f"out-{move}/r.jsonl"
    job, _ = submit("ocr", f"imgs --out {out} --runner thread --batch-size 1 --device cpu")
    if move:
        assert reached.wait(120), job.error
        monkeypatch.chdir(root / "elsewhere")
        go.set()
    job.wait(300)
    assert job.status == "done", job.error
    return job, root / out


def test_a_chdir_mid_job_reads_every_image_from_where_it_started(scans, monkeypatch):
    root, truth = scans
    plain, plain_out = _job(root, monkeypatch, move=False)
    moved, moved_out = _job(root, monkeypatch, move=True)
    oracle, got = _records(plain_out), _records(moved_out)
    # the relative --out went where it was written from, not under elsewhere/
    assert not (root / "elsewhere" / "out-True").exists()
    assert [r["image"] for r in got] == [f"imgs/p{k}.png" for k in range(N)]  # as written
    assert [r["error"] for r in got] == [None] * N
    assert [r["text"] for r in got] == [r["text"] for r in oracle]
    for r in got:  # and the texts are the pages' (most of their words)
        want = _words(truth[r["image"]])
        assert len(want & _words(r["text"])) >= 0.6 * len(want), (r["image"], r["text"])
    assert moved.result["images"] == N and moved.result["errors"] == 0
    assert moved.config["cwd"] == str(root)


class _Reporter(Reporter):
    def __init__(self):
        self.run_dir = None
        self.logs = []

    def progress(self, done, total=None, *, unit="step", message=None):
        pass

    def metric(self, name, value, *, step=None):
        pass

    def artifact(self, name, path, *, kind="file"):
        return Path(path)

    def log(self, message, *, level="info"):
        self.logs.append(message)


def test_a_resumed_job_matches_its_pages_from_another_folder(scans, monkeypatch):
    from skiff.kernels.ocr.entry import run

    root, truth = scans
    monkeypatch.chdir(root)
    full = root / "full.jsonl"
    first = run(KIND.to_config({"inputs": ["imgs"], "out": str(full), "device": "cpu",
                                "batch_size": 1}), _Reporter())
    assert first.errors == 0
    records = _records(full)
    cut = root / "cut" / "results.jsonl"  # a job stopped after 3 pages
    cut.parent.mkdir()
    cut.write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
    config = KIND.to_config({"inputs": ["imgs"], "device": "cpu", "batch_size": 1})
    job = SimpleNamespace(id="j1", status="cancelled", result=None, run_dir=cut.parent,
                          meta={}, config={**config, "out": None})
    monkeypatch.chdir(root / "elsewhere")  # jobs resume typed in another folder
    resumed = KIND.resume_config(job)
    assert resumed["resume_from"] == str(cut)
    reporter = _Reporter()
    reporter.run_dir = root / "again"
    again = run(resumed, reporter)
    assert any("3 pages read by the earlier job kept" in m and "3 inputs left" in m
               for m in reporter.logs), reporter.logs
    assert again.kept == 3 and again.errors == 0 and again.images == N
    written = _records(root / "again" / "results.jsonl")
    assert written[:3] == records[:3]  # kept as they were
    assert [(r["image"], r["text"]) for r in written] == \
        [(r["image"], r["text"]) for r in records]


@pytest.fixture(scope="module")
def pdf(scans):
    """``imgs/doc.pdf``: pages 0-2 of the scans as a 3-page PDF (Pillow writes it)."""
    from PIL import Image

    root, truth = scans
    pages = [Image.open(root / "imgs" / f"p{k}.png").convert("RGB") for k in range(3)]
    path = root / "docs" / "doc.pdf"
    path.parent.mkdir(exist_ok=True)
    pages[0].save(path, save_all=True, append_images=pages[1:], resolution=200)
    return root, {k + 1: truth[f"imgs/p{k}.png"] for k in range(3)}


@pytest.mark.parametrize("pages", [None, "2-3"])
def test_a_relative_pdf_keeps_its_pages_labels_as_written(pdf, monkeypatch, pages):
    """A document's pages (``doc.pdf#page=N``, from the pipeline or from --pages) are read
    from the job's folder and labelled as written, the process being elsewhere."""
    from skiff.kernels.ocr.entry import run

    root, truth = pdf
    monkeypatch.chdir(root)
    config = KIND.to_config({"inputs": ["docs/doc.pdf"], "device": "cpu", "pages": pages,
                             "pdf_dpi": 200, "out": "out-pdf/r.jsonl"})
    monkeypatch.chdir(root / "elsewhere")
    got = run(config, _Reporter())
    want = [1, 2, 3] if pages is None else [2, 3]
    records = _records(root / "out-pdf" / "r.jsonl")
    assert [r["image"] for r in records] == [f"docs/doc.pdf#page={k}" for k in want]
    assert got.errors == 0 and [r.image for r in got.results] == [r["image"] for r in records]
    for r, k in zip(records, want):
        need = _words(truth[k])
        assert len(need & _words(r["text"])) >= 0.6 * len(need), (k, r["text"])


def test_paths_held_in_a_variable_are_read_from_where_the_job_started(scans, monkeypatch):
    """``%ocr pages`` with ``pages = ["imgs/p3.png", ...]``: the thread job reads them from
    the folder it started in and names them as the variable held them."""
    root, truth = scans
    monkeypatch.chdir(root)
    monkeypatch.setenv("SKIFF_RUNS", str(root / "runs-var"))
    held = [f"imgs/p{k}.png" for k in (3, 4)]
    reached, go = threading.Event(), threading.Event()
    load = OcrPipeline._load

    def gated(self, index, number, item, budget=None):
        if number == 0:
            reached.set()
            go.wait(60)
        yield from load(self, index, number, item, budget)

    monkeypatch.setattr(OcrPipeline, "_load", gated)
    job, _ = submit("ocr", "pages --device cpu", user_ns={"pages": held})
    assert reached.wait(120), job.error
    monkeypatch.chdir(root / "elsewhere")  # before any image is read
    go.set()
    job.wait(300)
    assert job.status == "done", job.error
    records = _records(job.run_dir / "results.jsonl")
    assert [r["image"] for r in records] == held and [r["error"] for r in records] == [None] * 2
    for r in records:
        need = _words(truth[r["image"]])
        assert len(need & _words(r["text"])) >= 0.6 * len(need), r


def test_a_job_from_before_round_31_resumes_from_the_folder_its_meta_names(scans, monkeypatch):
    """Its config has no ``cwd``; the job's meta does (where it was started): resumed from
    another folder, it reads on from that one instead of refusing."""
    root, _ = scans
    monkeypatch.chdir(root / "elsewhere")
    config = {"inputs": ["imgs"], "model": "ch", "out": None, "pages": None}
    job = SimpleNamespace(id="j2", status="cancelled", result=None, run_dir=root / "cut",
                          meta={"cwd": str(root)}, config=config)
    assert KIND.resume_config(job)["cwd"] == str(root)
    gone = SimpleNamespace(**{**vars(job), "meta": {"cwd": str(root / "no-such")}})
    with pytest.raises(ValueError, match="a path relative to the folder it was started in"):
        KIND.resume_config(gone)


def test_a_result_draws_its_page_after_a_chdir(scans, monkeypatch):
    """(coordinator, after h20) A file job's results keep no pixels; drawing one reads its
    file again, which after a ``%cd`` was the relative label: nothing to draw. The oracle:
    the rendered page itself."""
    import numpy as np
    from PIL import Image

    root, _ = scans
    job, _ = _job(root, monkeypatch, move=True)
    first = job.value[0]
    assert first.pixels is None and first.image == "imgs/p0.png"
    rgb = first._rgb()
    assert rgb is not None
    want = np.asarray(Image.open(root / "imgs" / "p0.png").convert("RGB"))
    assert rgb.shape == want.shape and np.array_equal(rgb, want)
    assert first.draw().size == (want.shape[1], want.shape[0])
