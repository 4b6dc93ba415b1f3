"""A kernel restarted (JupyterLab's Restart) while a thread job runs: the job is cancelled
with why and the new kernel sees it ended; it used to die with the kernel, shown failed by a
guess ("exited without a final event")."""

import os

from jupyter_client.manager import start_new_kernel

from skiff.jobs import Job
from tests.notebook_util import cell_output


def _run(kc, code, timeout=60):
    return cell_output(kc, kc.execute(code), timeout)


def test_restart_cancels_a_thread_job_and_the_next_kernel_sees_why(runs_dir):
    km, kc = start_new_kernel(kernel_name="python3", env={**os.environ})
    try:
        _run(kc, "%load_ext skiff")
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
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
