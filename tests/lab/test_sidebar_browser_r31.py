"""The Jobs sidebar's round 31 parts in a real JupyterLab (Chromium): the filter by kind and
status (the server filters; the rows left are those of that kind and status), one line per
MPI rank under a job on ranks (each rank's state and part, read from its rank files), and a
job's images in its tab (the picture the run folder holds, decoded by the browser at the
size PIL wrote it)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from skiff.jobs import launch
from tests.browser.conftest import browser, lab  # noqa: F401  (the browser tests' fixtures)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.mpi]


def _picture(config, reporter):
    img = np.zeros((30, 70, 3), np.uint8)
    img[:, :35, 0] = 255
    Image.fromarray(img).save(reporter.run_dir / "drawn.png")
    reporter.artifact("drawn", reporter.run_dir / "drawn.png", kind="image")
    return {}


@pytest.fixture(scope="module")
def jobs(lab, tmp_path_factory):  # noqa: F811
    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    mp = pytest.MonkeyPatch()
    mp.setenv("SKIFF_RUNS", str(lab.runs))
    try:
        ranks = launch("demo", {"steps": 4, "sleep": 0.0, "split": True}, np=2).wait(120)
        failed = launch("demo", {"steps": 3, "sleep": 0.0, "fail_at": 2}).wait(60)
        pic = launch("custom", fn=_picture).wait(60)
    finally:
        mp.undo()
    assert (ranks.status, failed.status, pic.status) == ("done", "failed", "done"), \
        (ranks.error, pic.error)
    return {"ranks": ranks, "failed": failed, "pic": pic}


def _row(page, job_id):
    return page.locator(f".skiff-JobRow[data-job-id='{job_id}']")


def test_filter_rank_lines_and_images(lab, browser, jobs):  # noqa: F811
    page = browser.new_page()
    try:
        page.goto(f"{lab.url}/lab?reset&token={lab.token}")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell"
                               "  && document.querySelector('#skiff-jobs')")
        page.evaluate("() => window.jupyterapp.shell.activateById('skiff-jobs')")
        page.wait_for_selector("#skiff-jobs[data-ready='true']", state="visible")
        ids = {k: j.id for k, j in jobs.items()}
        for job_id in ids.values():
            expect(_row(page, job_id)).to_have_count(1)

        # one line per rank, from the rank files
        lines = _row(page, ids["ranks"]).locator(".skiff-RankRow")
        expect(lines).to_have_count(2)
        for r in (0, 1):
            pid = int((jobs["ranks"].run_dir / "ranks" / f"{r}.pid").read_text())
            expect(lines.nth(r)).to_contain_text(f"rank {r} exited (exit 0) · 4/4 · pid {pid}")
        expect(_row(page, ids["failed"]).locator(".skiff-RankRow")).to_have_count(0)

        # the filter: the server's answer, row by row
        page.select_option(".skiff-JobsPanel-status", "failed")
        expect(page.locator(".skiff-JobRow")).to_have_count(1)
        expect(_row(page, ids["failed"])).to_have_count(1)
        page.select_option(".skiff-JobsPanel-status", "")
        page.select_option(".skiff-JobsPanel-kind", "custom")
        expect(page.locator(".skiff-JobRow")).to_have_count(1)
        expect(_row(page, ids["pic"])).to_have_count(1)
        page.select_option(".skiff-JobsPanel-status", "running")
        expect(page.locator(".skiff-JobRow")).to_have_count(0)
        expect(page.locator(".skiff-JobsPanel-message")).to_contain_text(
            "No running custom jobs (3 in all)")
        page.select_option(".skiff-JobsPanel-status", "")
        page.select_option(".skiff-JobsPanel-kind", "")
        expect(page.locator(".skiff-JobRow")).to_have_count(3)

        # the image in the job's tab, as the run folder holds it
        _row(page, ids["pic"]).locator(".skiff-JobRow-open").click()
        img = page.locator(f".skiff-JobView[data-job-id='{ids['pic']}'] .skiff-JobView-img")
        page.wait_for_function(
            "id => { const i = document.querySelector(`.skiff-JobView[data-job-id='${id}'] "
            ".skiff-JobView-img`); return i && i.complete && i.naturalWidth > 0; }",
            arg=ids["pic"])
        size = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
        assert size == list(Image.open(jobs["pic"].run_dir / "drawn.png").size) == [70, 30]
        # the tab of the job on ranks: its rank lines too
        _row(page, ids["ranks"]).locator(".skiff-JobRow-open").click()
        view = page.locator(f".skiff-JobView[data-job-id='{ids['ranks']}']")
        expect(view.locator(".skiff-RankRow")).to_have_count(2)
    finally:
        page.close()
