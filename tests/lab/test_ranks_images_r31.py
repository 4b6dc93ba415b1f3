"""The Jobs sidebar's round 31 payloads, without a server: one row per MPI rank of a job
(its state from the rank files, its part of the work from ``ranks/R.progress``) and the image
artifacts a job's tab shows (the bytes of the file, never a file outside the run folder,
never SVG). Oracles: the rank files and the image decoded by PIL."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest
from PIL import Image

from skiff.jobs import launch
from skiff.lab.payload import JobCache, UnknownJob, image_file, job_detail, rank_rows


def _pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def _drawing(config, reporter):
    png = reporter.run_dir / "chart.png"
    img = np.zeros((12, 20, 3), np.uint8)
    img[:, :10, 0] = 255
    img[3:6, 12:18, 1] = 200
    Image.fromarray(img).save(png)
    reporter.artifact("chart", png, kind="image")
    svg = reporter.run_dir / "plot.svg"
    svg.write_text("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>")
    reporter.artifact("plot", svg, kind="image")
    outside = reporter.run_dir.parent / "secret.png"
    Image.fromarray(img[:, ::-1].copy()).save(outside)
    os.symlink(outside, reporter.run_dir / "link.png")
    # as a crafted folder would say it (reporter.artifact copies a link's target in)
    reporter.emit("artifact", name="link", path="link.png", kind="image")
    return {"ok": True}


def test_a_jobs_images_are_its_files_bytes_and_nothing_else(runs_dir):
    job = launch("custom", fn=_drawing).wait(30)
    assert job.status == "done", job.error
    cache = JobCache(runs_dir)
    cached = cache.find(job.id)
    assert job_detail(cached)["images"] == ["chart", "plot", "link"]
    path, kind = image_file(cached, "chart")
    assert kind == "image/png" and path == (job.run_dir / "chart.png").resolve()
    original = np.asarray(Image.open(job.run_dir / "chart.png").convert("RGB"))
    assert np.array_equal(_pixels(path.read_bytes()), original)
    assert original[0, 0, 0] == 255 and original[4, 13, 1] == 200
    with pytest.raises(ValueError, match="svg file, which the tab does not show"):
        image_file(cached, "plot")
    with pytest.raises(ValueError, match="not a file of its run folder"):
        image_file(cached, "link")  # a link to a file outside the run folder
    with pytest.raises(UnknownJob, match="has no image 'nothere'"):
        image_file(cached, "nothere")
    (job.run_dir / "chart.png").unlink()
    with pytest.raises(UnknownJob, match="gone from its run folder"):
        image_file(cached, "chart")


def test_a_thread_job_has_no_rank_rows(runs_dir):
    job = launch("demo", {"steps": 2, "sleep": 0.0}).wait(30)
    assert rank_rows(job) == [] and job_detail(job)["ranks"] == []


@pytest.mark.mpi
def test_each_rank_of_a_split_mpi_job_has_its_row_and_part(runs_dir):
    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    job = launch("demo", {"steps": 4, "sleep": 0.01, "split": True}, np=2).wait(120)
    assert job.status == "done", job.error
    rows = job_detail(JobCache(runs_dir).find(job.id))["ranks"]
    assert [r["rank"] for r in rows] == [0, 1]
    for r in rows:  # the rank files are the oracle
        assert r["pid"] == int((job.run_dir / "ranks" / f"{r['rank']}.pid").read_text())
        assert r["status"] == "exited" and r["code"] == 0
        assert r["code"] == int((job.run_dir / "ranks" / f"{r['rank']}.exit").read_text())
    theirs = json.loads((job.run_dir / "ranks" / "1.progress").read_text())
    assert (rows[1]["done"], rows[1]["total"]) == (theirs["done"], theirs["total"]) == (4, 4)
    assert (rows[0]["done"], rows[0]["total"]) == (4, 4)
    assert rows[0]["fraction"] == rows[1]["fraction"] == 1.0
    state = job.refresh()
    assert state.done == rows[0]["done"] + rows[1]["done"]  # the whole job: their sum
    # not split: rows without parts
    plain = launch("demo", {"steps": 2, "sleep": 0.0}, np=2).wait(120)
    rows = rank_rows(plain)
    assert [r["status"] for r in rows] == ["exited", "exited"]
    assert all(r["done"] is None and r["fraction"] is None for r in rows)
