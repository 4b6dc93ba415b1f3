"""The Jobs sidebar (the ``skiff-lab`` frontend on the ``skiff.lab`` server extension) in a
real JupyterLab with no notebook and no kernel: a job started from a terminal is listed with
progress that moves, opens in a tab, is cancelled from the sidebar (its process ends); after
a page reload the finished job and its tab are still there, and Remove deletes its folder.
Then a notebook's job on MPI ranks outlives its kernel, shut down, and the sidebar follows
and cancels it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

from skiff.cli import CANCELLED
from skiff.jobs.store import pid_alive

from .lab import ROOT, stop_process

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NAME = "from-the-terminal"


def _api(lab, path: str):
    req = urllib.request.Request(f"{lab.url}/{path}",
                                 headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _open_lab(lab, page) -> None:
    """JupyterLab with only its launcher (no notebook, so no kernel), the sidebar shown."""
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    _show_sidebar(page)


def _show_sidebar(page) -> None:
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell"
                           "  && document.querySelector('#skiff-jobs')")
    page.evaluate("() => window.jupyterapp.shell.activateById('skiff-jobs')")
    page.wait_for_selector("#skiff-jobs[data-ready='true']", state="visible")


def _row(page, job_id: str):
    return page.locator(f".skiff-JobRow[data-job-id='{job_id}']")


def _fraction(page, job_id: str) -> float:
    value = _row(page, job_id).locator(".skiff-JobRow-bar").get_attribute("data-fraction")
    return float(value or 0.0)


@pytest.fixture(scope="module")
def terminal_job(lab, tmp_path_factory):
    """``python -m skiff train`` started from a terminal (a process of its own, not a
    kernel), long enough to be cancelled; its run folder in the lab's runs root."""
    env = dict(os.environ, SKIFF_RUNS=str(lab.runs), OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    log = tmp_path_factory.mktemp("terminal") / "train.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "skiff", "train", "mlp", "--steps",
                                 "100000", "--name", NAME], stdout=fh, stderr=subprocess.STDOUT,
                                env=env, cwd=lab.root, start_new_session=True)
    yield proc
    if proc.poll() is None:
        stop_process(proc, timeout=5.0)


def test_sidebar_follows_a_terminal_job_and_cancels_it(lab, browser, terminal_job):
    page = browser.new_page()
    try:
        _open_lab(lab, page)
        assert _api(lab, "api/kernels") == [] and _api(lab, "api/sessions") == []
        row = page.locator(f".skiff-JobRow:has(.skiff-JobRow-name:text-is('{NAME}'))")
        row.wait_for(state="visible", timeout=60_000)
        job_id = row.get_attribute("data-job-id")
        expect(row.locator(".skiff-JobRow-kind")).to_have_text("train")
        expect(row).to_have_attribute("data-status", "running", timeout=60_000)
        expect(row.locator(".skiff-JobRow-command")).to_contain_text(
            "python -m skiff train mlp --steps 100000")
        expect(row.locator(".skiff-JobRow-started")).not_to_be_empty()
        # live: the bar and its label move while the page only polls the server
        page.wait_for_function(
            "id => parseFloat(document.querySelector(`.skiff-JobRow[data-job-id='${id}'] "
            ".skiff-JobRow-bar`).dataset.fraction || '0') > 0", arg=job_id)
        first = _fraction(page, job_id)
        page.wait_for_function(
            "([id, f]) => parseFloat(document.querySelector(`.skiff-JobRow[data-job-id='${id}']"
            " .skiff-JobRow-bar`).dataset.fraction || '0') > f", arg=[job_id, first])
        expect(row.locator(".skiff-JobRow-progress")).to_contain_text("steps")
        expect(row.locator(".skiff-JobRow-remove")).to_be_hidden()

        row.locator(".skiff-JobRow-open").click()  # the live view in a main-area tab
        view = page.locator(f".skiff-JobView[data-job-id='{job_id}']")
        expect(view).to_have_attribute("data-status", "running")
        page.wait_for_selector(f".skiff-JobView[data-job-id='{job_id}'] "
                               "svg.skiff-Chart[data-metric='loss']")
        expect(view.locator(".skiff-JobView-metrics")).to_contain_text("loss")

        row.locator(".skiff-JobRow-cancel").click()
        expect(row).to_have_attribute("data-status", "cancelled", timeout=60_000)
        assert terminal_job.wait(timeout=60) == CANCELLED  # cancelled elsewhere: exit 3
        expect(row.locator(".skiff-JobRow-cancel")).to_be_hidden()
        expect(view).to_have_attribute("data-status", "cancelled", timeout=30_000)
        assert _api(lab, "api/kernels") == []  # all of it without a kernel
        page.screenshot(path=str(_artifact("browser-jobs-sidebar.png")))
    finally:
        page.close()


def test_after_a_reload_the_job_is_still_there_and_is_removed(lab, browser, terminal_job):
    assert terminal_job.poll() is not None, "the test above cancels the terminal's job"
    (folder,) = [p for p in lab.runs.iterdir()
                 if json.loads((p / "config.json").read_text()).get("name") == NAME]
    job_id = folder.name
    page = browser.new_page()
    try:
        # no ?reset: the workspace the last page left (the job's tab) comes back
        page.goto(f"{lab.url}/lab?token={lab.token}")
        _show_sidebar(page)
        row = _row(page, job_id)
        expect(row).to_have_attribute("data-status", "cancelled")
        expect(page.locator(f".skiff-JobView[data-job-id='{job_id}']")).to_have_attribute(
            "data-status", "cancelled")  # the restored tab reads the folder again
        row.locator(".skiff-JobRow-remove").click()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        expect(row).to_have_count(0)
        assert not folder.exists()
        assert _api(lab, "api/kernels") == []
    finally:
        page.close()


@pytest.mark.mpi  # the job runs on a rank under mpiexec, so that it outlives its kernel
def test_a_notebooks_job_outlives_its_kernel_in_the_sidebar(lab, lab_page):
    """The job view names the sidebar; the kernel is shut down (as another client would),
    the job goes on under its detached holder, and the sidebar follows and cancels it."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        "import skiff\njob = skiff.launch('demo', {'steps': 3000, 'sleep': 0.05}, "
        "runner='process', name='from-a-kernel')\njob")]
    nbformat.write(nb, lab.root / "sidebar-kernel.ipynb")
    page = lab_page.page
    lab_page.open("sidebar-kernel.ipynb")
    lab_page.run_all()
    page.wait_for_selector(".skiff-job-view .skiff-status .skiff-running", timeout=90_000)
    expect(page.locator(".skiff-job-view .skiff-reattach")).to_contain_text("Jobs sidebar")
    _show_sidebar(page)
    row = page.locator(".skiff-JobRow:has(.skiff-JobRow-name:text-is('from-a-kernel'))")
    expect(row).to_have_attribute("data-status", "running", timeout=60_000)
    job_id = row.get_attribute("data-job-id")
    launcher = json.loads((lab.runs / job_id / "process.json").read_text())["pid"]
    assert pid_alive(launcher)

    for kernel in _api(lab, "api/kernels"):
        req = urllib.request.Request(f"{lab.url}/api/kernels/{kernel['id']}", method="DELETE",
                                     headers={"Authorization": f"token {lab.token}"})
        urllib.request.urlopen(req, timeout=60).close()
    assert _api(lab, "api/kernels") == []
    first = _fraction(page, job_id)
    page.wait_for_function(  # still live, its kernel gone
        "([id, f]) => parseFloat(document.querySelector(`.skiff-JobRow[data-job-id='${id}']"
        " .skiff-JobRow-bar`).dataset.fraction || '0') > f", arg=[job_id, first])
    expect(row).to_have_attribute("data-status", "running")
    row.locator(".skiff-JobRow-cancel").click()
    expect(row).to_have_attribute("data-status", "cancelled", timeout=60_000)
    ranks = [int(p.read_text()) for p in (lab.runs / job_id / "ranks").glob("*.pid")]
    deadline = time.monotonic() + 60
    while any(map(pid_alive, [launcher, *ranks])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ranks and not any(map(pid_alive, [launcher, *ranks]))  # mpiexec and its rank


def _artifact(name: str):
    from .lab import ARTIFACTS

    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name
