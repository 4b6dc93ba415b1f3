"""Round 38 (h8): a training on a kernel's thread, cancelled by a JupyterLab restart, stopped
at a step and wrote its checkpoint, then drew its loss curve (matplotlib's first import) past
the moment Jupyter sends a kernel that has not ended SIGTERM (2.5 s after its shutdown
request, half jupyter_client's shutdown_wait_time): no final status, and the job read
"failed: the kernel process ... exited without a final event" where the README says
"cancelled". The process now waits 1.5 s (``EXIT_WAIT``), under Jupyter's 2.5, and records a
job that had seen the stop and was still writing its end as cancelled; one that never looked
stays failed. The oracle: the events the job wrote, read back from its run folder."""

import os
import subprocess
import sys
import textwrap

from skiff.jobs import Job
from skiff.jobs.thread import EXIT_WAIT

SCRIPT = textwrap.dedent("""
    import time
    from skiff.jobs import launch

    def slow_end(config, reporter):
        while not reporter.should_stop():
            time.sleep(0.02)
        reporter.log("stopped at a step; writing its end")
        time.sleep(60)   # its end takes longer than the process waits

    job = launch("custom", fn=slow_end)
    time.sleep(0.3)
    print(job.id, flush=True)
""")


def test_a_job_writing_its_end_when_the_process_exits_is_cancelled(runs_dir):
    assert EXIT_WAIT < 2.5   # jupyter_client: SIGTERM at shutdown_wait_time / 2
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    job = Job.load(out.stdout.strip())
    assert job.status == "cancelled" and not job.state.inferred
    assert job.error.startswith("cancelled: this process is exiting")
    assert job.error.endswith("(it had stopped and was writing its end)")
    logs = str(job.logs)
    assert logs.index("this process is exiting") < logs.index("stopped at a step")
