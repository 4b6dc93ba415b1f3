"""A process that exits while thread jobs run (a kernel shut down or restarted, the end of a
script) cancels them and records how they ended; they died with it, shown failed by a reader
that could only guess ("the kernel process ... exited without a final event")."""

import os
import subprocess
import sys
import textwrap

from skiff.jobs import Job

SCRIPT = textwrap.dedent("""
    import sys, time
    from skiff.jobs import launch

    def polite(config, reporter):
        while not reporter.should_stop():
            time.sleep(0.02)
        reporter.log("stopped at a step")

    def stubborn(config, reporter):
        while True:
            time.sleep(0.02)

    a = launch("custom", fn=polite)
    b = launch("custom", fn=stubborn)
    time.sleep(0.3)
    print(a.id, b.id, flush=True)
    # the script ends here, with both jobs running
""")


def test_exiting_process_cancels_its_thread_jobs_and_records_them(runs_dir, tmp_path):
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    polite_id, stubborn_id = out.stdout.split()
    polite, stubborn = Job.load(polite_id), Job.load(stubborn_id)
    assert polite.status == "cancelled" and not polite.state.inferred
    assert polite.error.startswith("cancelled: this process is exiting")
    assert "this process is exiting" in str(polite.logs)
    assert str(polite.logs).index("this process is exiting") < \
        str(polite.logs).index("stopped at a step")
    assert stubborn.status == "failed" and not stubborn.state.inferred
    assert "still running when this process is exiting" in stubborn.error
    assert "--runner process" in stubborn.error
