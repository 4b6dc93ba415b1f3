"""SIGTERM to ``python -m skiff KIND`` (``kill PID``, ``timeout``, a scheduler) cancels the job
as Ctrl-C does: it ends ``cancelled`` with its final event. It died with the process, and the
job was shown failed by "the kernel process that ran this job" (there was no kernel)."""

import os
import signal
import subprocess
import sys
import time

from skiff.jobs import Job


def _endless_solve():
    """``python -m skiff solve`` of a system it iterates on for minutes (no preconditioner,
    rtol 1e-14), its output piped."""
    cmd = [sys.executable, "-m", "skiff", "solve", "jump", "--grid", "512x512", "--precond",
           "none", "--rtol", "1e-14", "--maxiter", "1000000"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


def test_sigterm_cancels_the_job_and_records_it(runs_dir):
    proc = _endless_solve()
    try:
        first = proc.stderr.readline()
        assert first.startswith("skiff: solve job "), first
        job = Job.load(first.split()[-1])
        deadline = time.monotonic() + 60
        while not job.state.metrics and time.monotonic() < deadline:  # iterating
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err  # interrupted here (round 26: 1, as a failure)
    assert "Traceback" not in err, err
    assert job.refresh().status == "cancelled" and not job.state.inferred
    assert f"solve {job.id} cancelled" in out, out


def test_a_job_cancelled_elsewhere_exits_3_apart_from_a_failure(runs_dir, capsys):
    """A script told a cancelled job from a failed one by nothing (both exited 1): the
    command that ran it and ``jobs wait`` now exit 3 (the table of ``--help``)."""
    from skiff.cli import CANCELLED, main

    proc = _endless_solve()
    try:
        first = proc.stderr.readline()
        assert first.startswith("skiff: solve job "), first
        job_id = first.split()[-1]
        job = Job.load(job_id)
        deadline = time.monotonic() + 60
        while not job.state.metrics and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert main(["jobs", "cancel", job_id]) == 0  # as from another shell
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == CANCELLED == 3, err
    assert job.refresh().status == "cancelled"
    capsys.readouterr()
    assert main(["jobs", "wait", job_id]) == 3


def test_a_thread_job_lost_with_its_terminal_command_names_it(runs_dir):
    """A job whose ``python -m skiff`` was killed outright (SIGKILL) is shown failed by the
    terminal command, not by a kernel."""
    proc = _endless_solve()
    try:
        first = proc.stderr.readline()
        job_id = first.split()[-1]
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    job = Job.load(job_id)
    assert job.status == "failed"
    assert f"terminal command (python -m skiff) that ran this job (pid {proc.pid})" in job.error
