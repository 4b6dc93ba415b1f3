"""Two things only a real kernel shows, in one kernel (round 43: one start, not two):

- Interrupting ``%jobs wait ID`` (JupyterLab's stop button) stops the waiting; the job,
  started elsewhere, goes on. It used to cancel the job, as ``--wait`` on a job the cell
  itself started does.
- A kernel restarted (JupyterLab's Restart) while a thread job runs: the job is cancelled
  with why and the new kernel sees it ended; it used to die with the kernel, shown failed by
  a guess ("exited without a final event").

The interrupt test runs first: the restart one ends with a fresh kernel."""

import os
import time

import pytest
from jupyter_client.manager import start_new_kernel

from skiff.jobs import Job, launch
from tests.notebook_util import cell_output


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """One kernel for the module, with a runs folder and signing key of its own (started
    before any test's own folder is set)."""
    here = tmp_path_factory.mktemp("kernel")
    env = {"SKIFF_RUNS": str(here / "skiff-runs"), "SKIFF_SECRET_FILE": str(here / "secret")}
    km, kc = start_new_kernel(kernel_name="python3", env={**os.environ, **env})
    try:
        _run(kc, "%load_ext skiff")
        yield km, kc, env
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _same_folders(kernel, monkeypatch):
    """This test reads and writes the kernel's runs folder with the kernel's key."""
    km, kc, env = kernel
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return km, kc


def _run(kc, code, timeout=60):
    return cell_output(kc, kc.execute(code), timeout)


def test_interrupting_jobs_wait_leaves_the_job_running(kernel, monkeypatch):
    km, kc = _same_folders(kernel, monkeypatch)

    def forever(config, reporter):
        reporter.progress(1, 10)
        while not reporter.should_stop():
            time.sleep(0.05)

    job = launch("custom", fn=forever)
    try:
        msg_id = kc.execute(f"%jobs wait {job.id}")
        while True:  # the wait is under way: its progress line (after its 2 quiet seconds);
            # a fixed sleep after the cell's first print raced the wait's start under load
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] in (
                    "stream", "display_data") and job.id in str(msg["content"]):
                break
        km.interrupt_kernel()
        text = cell_output(kc, msg_id)
        assert f"stopped waiting; job {job.id} goes on" in text, text
        assert "KeyboardInterrupt" not in text
        assert job.status == "running" and not (job.run_dir / "cancel").exists()
    finally:
        job.cancel()
        job.wait(10)


def test_restart_cancels_a_thread_job_and_the_next_kernel_sees_why(kernel, monkeypatch):
    km, kc = _same_folders(kernel, monkeypatch)
    text = _run(kc, "j = %solve jump --grid 256x256 --precond none --rtol 1e-14 "
                    "--maxiter 1000000\n"
                    "import time\n"
                    "while not j.state.metrics: time.sleep(0.05)\n"
                    "print(j.id, j.status)")
    job_id, status = text.split()
    assert status == "running"
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=60)
    job = Job.load(job_id)
    assert job.status == "cancelled" and not job.state.inferred
    assert "a kernel shut down or restarted" in job.error
    shown = _run(kc, f"%load_ext skiff\nx = %jobs show {job_id}\nprint(repr(x))")
    assert f"<Job {job_id} solve cancelled" in shown
