"""The panels in a real JupyterLab: fill the Solve form, see bad values refused, launch, see
the plots, and reload the page mid-job with the monitor still tracking it."""

from __future__ import annotations

import re

import pytest

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_panels_in_the_browser(lab, lab_page, tmp_path):
    page = lab_page.page
    lab_page.open("06-panels.ipynb")
    lab_page.run_until("## The Solve form")  # the set-up cells and the panel itself
    form = page.locator(".skiff-panel .skiff-form-solve").first
    form.wait_for(state="visible", timeout=60_000)
    lab_page.wait_cells_done()
    launch = form.locator(".skiff-launch").first
    grid = form.locator(".skiff-field-grid input").first
    message = form.locator(".skiff-message-grid").first

    # a bad value: the message next to the field, Launch disabled (each widget is its own
    # model with its own message from the kernel: wait for each, in any order)
    grid.fill("24x")
    expect(message).to_contain_text("expected a grid like")
    expect(launch).to_be_disabled()
    launch.scroll_into_view_if_needed()  # the field and the disabled Launch in one picture
    lab_page.screenshot("browser-panel-bad-value.png")

    # a good value: the message goes, Launch is enabled, the equivalent lines follow
    grid.fill("24x24")
    expect(message).to_have_text("")
    expect(launch).to_be_enabled()
    magic = form.locator(".skiff-magic-line").first
    expect(magic).to_contain_text("--grid 24x24")
    assert re.search(r"%solve poisson --grid 24x24\b", magic.inner_text())
    expect(form.locator(".skiff-cli-line").first).to_contain_text(
        "python -m skiff solve poisson --grid 24x24")

    # launch: the job widget appears under the form, ends done, the plots appear
    launch.click()
    view = form.locator(".skiff-form-output .skiff-job-view").first
    view.wait_for(state="visible", timeout=30_000)
    view.locator(".skiff-status .skiff-done").wait_for(timeout=120_000)
    # the field (the residual is the view's own chart, drawn once)
    page.wait_for_function(
        "(el) => el.querySelectorAll('.skiff-artifact').length === 1",
        arg=view.element_handle(), timeout=30_000)
    summary = form.locator(".skiff-solve-summary").first
    expect(summary).to_contain_text("converged: True", timeout=30_000)
    view.locator(".skiff-images").first.scroll_into_view_if_needed()
    lab_page.screenshot("browser-panel-solve-done.png")

    # the OCR tab: upload a page through the browser, launch, see the lines read
    from PIL import Image

    from skiff.kernels.ocr.synth import render_sample

    sample = render_sample("clean", 2)
    png = tmp_path / "scan.png"
    Image.fromarray(sample.image).save(png)
    page.locator(".skiff-panel .lm-TabBar-tab", has_text="OCR").first.click()
    ocr = page.locator(".skiff-panel .skiff-form-ocr").first
    ocr.wait_for(state="visible")
    with page.expect_file_chooser() as chooser:  # the Upload button opens a file dialog
        ocr.locator(".skiff-ocr-upload").first.click()
    chooser.value.set_files(str(png))
    expect(ocr.locator(".skiff-field-inputs input").first).to_have_value(
        re.compile(r"uploads/.*/scan\.png$"))
    ocr_launch = ocr.locator(".skiff-launch").first
    expect(ocr_launch).to_be_enabled()
    ocr_launch.click()
    ocr.locator(".skiff-form-output .skiff-status .skiff-done").wait_for(timeout=120_000)
    table = ocr.locator(".skiff-ocr-table").first
    expect(table).to_contain_text(sample.lines[0].split()[0], timeout=30_000)
    table.scroll_into_view_if_needed()
    lab_page.screenshot("browser-panel-ocr-done.png")

    # a longer job, started from elsewhere; the Jobs tab tracks it, across a reload. Held
    # at step 21 of 40 until the test makes the gate file (round 47 h8: 160 steps of 0.06 s
    # were 9.6 s of the test, and a loaded machine could still end them before the reload,
    # which the heading then allowed: "(1|0) running"), so it is running across the reload
    gate = lab.root / "panel-monitor.gate"
    gate.unlink(missing_ok=True)
    lab_page.kernel_execute(
        "import skiff\n_long = skiff.launch('demo', {'steps': 40, 'sleep': 0.02, "
        f"'hold_at': 21, 'hold_until': {str(gate)!r}}})")
    try:
        page.locator(".skiff-panel .lm-TabBar-tab", has_text="Jobs").first.click()
        monitor = page.locator(".skiff-panel .skiff-monitor").first
        monitor.wait_for(state="visible")
        running = monitor.locator(".skiff-monitor-status .skiff-running")
        running.first.wait_for(timeout=30_000)
        lab_page.save()
        page.reload()
        lab_page.wait_kernel_idle()
        monitor = page.locator(".skiff-panel .skiff-monitor").first
        monitor.wait_for(state="visible", timeout=60_000)  # the Jobs tab is still the one shown
        heading = monitor.locator(".skiff-monitor-heading").first
        expect(heading).to_contain_text("3 jobs (1 running)")
        lab_page.screenshot("browser-panel-monitor-reload.png")
    finally:
        gate.touch()  # the job goes on (and ends) whatever happened above
    # still live: the row of the demo job reaches done after the reload
    page.wait_for_function(
        "(el) => el.querySelectorAll('.skiff-monitor-status .skiff-done').length === 3",
        arg=monitor.element_handle(), timeout=60_000)
    expect(heading).to_contain_text("3 jobs (0 running)")
    lab_page.screenshot("browser-panel-monitor-done.png")
