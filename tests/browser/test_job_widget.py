"""The job widget in a real JupyterLab: it renders, reaches done, and survives a reload."""

from __future__ import annotations

import re

import nbformat
import pytest

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _write(path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


def _badge(view) -> str:
    return view.locator(".skiff-status .skiff-badge").inner_text().strip()


def _progress_text(view) -> str:
    return view.locator(".skiff-progress-text").inner_text()


def test_job_widget_renders_reaches_done_and_survives_a_page_reload(lab, lab_page):
    """One notebook, one kernel, one page (round 43: two tests each opened their own):
    a job's widget renders and reaches done (its chart drawn); a second job, held at step
    21 of 40 until the test makes the gate file, is still running after the save and the
    reload however slow the machine (300 steps of 0.1 s were 30 s, which a loaded CI could
    spend before the reload), its view restored from the kernel, and it moves on when
    told."""
    gate = lab.root / "job-reload.gate"
    _write(lab.root / "job-widget.ipynb", [
        "%jobs",  # the lab's own IPython profile loaded skiff: no %load_ext needed
        "import skiff\njob = skiff.launch('demo', {'steps': 25, 'sleep': 0.04})\njob",
        "job.wait(60)\nprint('waited:', job.status)",
        "long = skiff.launch('demo', {'steps': 40, 'sleep': 0.02, "
        f"'hold_at': 21, 'hold_until': {str(gate)!r}}})\nlong",
    ])
    page = lab_page.page
    try:
        lab_page.open("job-widget.ipynb")
        lab_page.run_all()
        views = page.locator(".skiff-job-view")
        view = views.first
        view.wait_for(state="visible")
        page.wait_for_selector(".skiff-job-view .skiff-status .skiff-done", timeout=60_000)
        # held: 20 steps done, still running (each wait is on what the view shows)
        held = views.nth(1)
        expect(held.locator(".skiff-progress-text")).to_contain_text("20/40", timeout=60_000)
        expect(held.locator(".skiff-status .skiff-badge")).to_have_text("running")
        lab_page.wait_cells_done()
        assert _badge(view) == "done"
        expect(view.locator(".skiff-progress-text")).to_contain_text("25/25 step")
        # the progress bar is full (ipywidgets draws it as a div of width value/max) and the
        # chart image was drawn: a decoded PNG, not an empty or broken <img>
        expect(view.locator(".skiff-progress .progress-bar")).to_have_attribute(
            "style", re.compile(r"width:\s*100%"))
        chart = view.locator(".skiff-chart")
        assert chart.is_visible()
        page.wait_for_function("img => img.complete && img.naturalWidth > 100",
                               arg=chart.element_handle(), timeout=60_000)
        assert page.locator("text=waited: done").count() == 1
        assert not lab_page.errors()
        shot = lab_page.screenshot("browser-job-widget.png")
        assert shot.stat().st_size > 10_000

        lab_page.save()
        job_id = held.locator("code").first.inner_text().strip()
        page.reload()
        lab_page.wait_kernel_idle()
        # the output restored from the saved notebook renders the live model from the kernel
        view = page.locator(".skiff-job-view", has=page.locator("code", has_text=job_id))
        view.wait_for(state="visible", timeout=60_000)
        expect(view.locator(".skiff-progress-text")).to_contain_text("20/40", timeout=60_000)
        expect(view.locator(".skiff-status .skiff-badge")).to_have_text("running",
                                                                      timeout=60_000)
        from skiff.jobs import Job

        folder = Job.load(lab.runs / job_id).state  # the run folder's own state
        assert _badge(view) == folder.status
        assert f"{int(folder.done)}/{int(folder.total)}" in _progress_text(view)
        metrics = view.locator(".skiff-metrics").inner_text()
        assert all(f"{name} {series[-1][1]:.4g}" in metrics
                   for name, series in folder.metrics.items())
        lab_page.screenshot("browser-job-reload.png")
    finally:
        gate.touch()  # the job goes on (and ends) whatever happened above
    # and it keeps updating after the reload: past the hold, then to done
    page.wait_for_function(
        "el => parseInt((el.innerText.match(/(\\d+)\\/40/) || [0, '0'])[1]) > 20",
        arg=view.locator(".skiff-progress-text").element_handle(), timeout=60_000)
    expect(view.locator(".skiff-status .skiff-badge")).to_have_text("done", timeout=90_000)
    expect(view.locator(".skiff-progress-text")).to_contain_text("40/40 step", timeout=60_000)
    lab_page.screenshot("browser-job-reload-done.png")
