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


def test_job_widget_renders_and_reaches_done(lab, lab_page):
    _write(lab.root / "job-widget.ipynb", [
        "%jobs",  # the lab's own IPython profile loaded skiff: no %load_ext needed
        "import skiff\njob = skiff.launch('demo', {'steps': 25, 'sleep': 0.04})\njob",
        "job.wait(60)\nprint('waited:', job.status)",
    ])
    page = lab_page.page
    lab_page.open("job-widget.ipynb")
    lab_page.run_all()
    view = page.locator(".skiff-job-view").first
    view.wait_for(state="visible")
    page.wait_for_selector(".skiff-job-view .skiff-status .skiff-done", timeout=60_000)
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
                           arg=chart.element_handle(), timeout=10_000)
    assert page.locator("text=waited: done").count() == 1
    assert not lab_page.errors()
    shot = lab_page.screenshot("browser-job-widget.png")
    assert shot.stat().st_size > 10_000


def test_job_widget_survives_a_page_reload(lab, lab_page):
    # 300 steps of 0.1 s: long enough to be still running after the save and the reload,
    # so the test sees the restored view follow a live job (not a finished one)
    _write(lab.root / "job-reload.ipynb", [
        "import skiff\nlong = skiff.launch('demo', {'steps': 300, 'sleep': 0.1})\nlong",
    ])
    page = lab_page.page
    lab_page.open("job-reload.ipynb")
    lab_page.run_all()
    page.wait_for_selector(".skiff-job-view .skiff-status .skiff-running")
    lab_page.wait_cells_done()
    lab_page.save()
    job_id = page.locator(".skiff-job-view code").first.inner_text().strip()
    page.reload()
    lab_page.wait_kernel_idle()
    # the output restored from the saved notebook renders the live model from the kernel
    view = page.locator(".skiff-job-view").first
    view.wait_for(state="visible", timeout=60_000)
    assert view.locator("code").first.inner_text().strip() == job_id
    expect(view.locator(".skiff-progress-text")).to_contain_text(re.compile(r"\d+/300"))
    first = _progress_text(view)
    done_now = int(re.search(r"(\d+)/300", first).group(1))
    assert _badge(view) == "running" and done_now < 300, first
    lab_page.screenshot("browser-job-reload.png")
    # and it keeps updating after the reload: first past where it was, then to done
    page.wait_for_function(
        "([el, n]) => parseInt((el.innerText.match(/(\\d+)\\/300/) || [0, '0'])[1]) > n",
        arg=[view.locator(".skiff-progress-text").element_handle(), done_now], timeout=30_000)
    page.wait_for_selector(".skiff-job-view .skiff-status .skiff-done", timeout=90_000)
    expect(view.locator(".skiff-progress-text")).to_contain_text("300/300 step")
    lab_page.screenshot("browser-job-reload-done.png")
