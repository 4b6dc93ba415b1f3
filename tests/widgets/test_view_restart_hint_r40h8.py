"""Round 40: a job's view (and its plain-text form, saved with the notebook) said "If [this
kernel] restarts or stops, the job goes on" of every job. A job on one of the kernel's
threads (the default for one device: ``%train mlp ...``, ``%solve ...``) does not: the
kernel's exit cancels it (``ThreadRunner.stop_all``). The view of such a job says so now; a
job this kernel only follows (run by another kernel) still goes on when this one restarts.
The oracle: a second process launches a thread job and exits as a restarted kernel does;
its job ends cancelled, not running."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

pytest.importorskip("ipywidgets")

from skiff.jobs import Job, launch  # noqa: E402
from skiff.widgets.job_view import JobView  # noqa: E402

OTHER_KERNEL = (
    "import sys\n"
    "from skiff.jobs import launch\n"
    "job = launch('demo', {'steps': 5, 'hold_at': 2, 'hold_until': sys.argv[1]})\n"
    "print(job.id, flush=True)\n"
    "sys.stdin.readline()\n"
    "sys.exit(0)\n")   # a normal exit, as a kernel's restart: atexit runs


def _running(job, timeout=60.0):
    deadline = time.time() + timeout
    while job.refresh().done < 1 and time.time() < deadline:
        time.sleep(0.05)
    assert job.status == "running", job.error


def test_the_view_says_a_restart_cancels_a_job_of_this_kernel(runs_dir, tmp_path):
    never = tmp_path / "never"
    other = subprocess.Popen([sys.executable, "-c", OTHER_KERNEL, str(never)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        theirs = Job.load(runs_dir / other.stdout.readline().strip())
        ours = launch("demo", {"steps": 5, "hold_at": 2, "hold_until": str(never)})
        _running(ours)
        _running(theirs)
        mine, followed = JobView(ours, start=False), JobView(theirs, start=False)
        assert "the job is cancelled" in mine.reattach_hint.value
        assert "the job goes on" not in mine.reattach_hint.value
        text = mine._repr_mimebundle_()["text/plain"]
        assert "a restart cancels it" in text and f"%jobs show {ours.id}" in text
        assert len(text) <= 110
        # another kernel's job: this kernel's restart leaves it be
        assert "the job goes on" in followed.reattach_hint.value
        assert "restart cancels" not in followed._repr_mimebundle_()["text/plain"]
        # the claim checked: the other kernel exits, its thread job is cancelled
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.wait(60) == 0
        theirs.wait(timeout=30)
        assert theirs.status == "cancelled" and "this process is exiting" in theirs.error
        # ended: its saved text says how it ended, nothing to follow (it kept the hint)
        followed.update(force=True)
        text = followed._repr_mimebundle_()["text/plain"]
        assert text == f"skiff job {theirs.id}: cancelled (%jobs show {theirs.id} shows it)"
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
        ours.cancel(grace=1.0)
        ours.wait(15)
