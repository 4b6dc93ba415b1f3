"""Interrupting ``%jobs wait ID`` in a real kernel (JupyterLab's stop button) stops the
waiting; the job, started elsewhere, goes on. It used to cancel the job, as ``--wait`` on a
job the cell itself started does."""

import os
import time

from jupyter_client.manager import start_new_kernel

from skiff.jobs import launch
from tests.notebook_util import cell_output as _outputs


def test_interrupting_jobs_wait_leaves_the_job_running(runs_dir):
    def forever(config, reporter):
        reporter.progress(1, 10)
        while not reporter.should_stop():
            time.sleep(0.05)

    job = launch("custom", fn=forever)
    km, kc = start_new_kernel(kernel_name="python3", env={**os.environ})
    try:
        _outputs(kc, kc.execute("%load_ext skiff"))
        msg_id = kc.execute(f"%jobs wait {job.id}")
        while True:  # the wait is under way: its progress line (after its 2 quiet seconds);
            # a fixed sleep after the cell's first print raced the wait's start under load
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] in (
                    "stream", "display_data") and job.id in str(msg["content"]):
                break
        km.interrupt_kernel()
        text = _outputs(kc, msg_id)
        assert f"stopped waiting; job {job.id} goes on" in text, text
        assert "KeyboardInterrupt" not in text
        assert job.status == "running" and not (job.run_dir / "cancel").exists()
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        job.cancel()
        job.wait(10)
