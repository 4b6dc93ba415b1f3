"""Round 29b: a SIGINT sent to one rank alone while it waits in a collective ends the job.

Found as a user: ``kill -INT`` of rank 0 (or Ctrl-C in its terminal) while rank 1 stalled
in its data left rank 0 blocked in the gradient all-reduce: Python runs a signal's handler
only when the MPI call returns, and it never returned; the job hung until killed. Now the
rank alarm's watcher reads the signal's wake-up byte; rank 0, still blocked 3 s later,
tells rank 1 and leaves with exit code 130 (as an interrupted process); rank 1 hears it
and leaves too. Oracle: one process receiving the same SIGINT while training raises
KeyboardInterrupt (the job must end, never finish its steps). ``timeout -s KILL`` bounds
the run: a hang is a failure (exit 137), not a wait.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from .mpi_util import HERE, ROOT, mpiexec

SCRIPT = HERE / "scripts" / "sigint_rank_r29b_check.py"
KILLED = (124, 137, -9)


def test_one_process_raises_keyboard_interrupt_on_sigint():
    import numpy as np

    import skiff
    from skiff.nn import Linear, ReLU, Sequential

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    x = np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32)
    seen = []

    def interrupt(metrics):
        seen.append(metrics["step"])
        if metrics["step"] == 2:
            os.kill(os.getpid(), signal.SIGINT)

    tr = skiff.Trainer(Sequential(Linear(3, 16), ReLU(), Linear(16, 1)), lr=0.01,
                       batch_size=8, callbacks=[interrupt])
    # Python's own SIGINT handler, as in a fresh process: a test earlier in the same pytest
    # process may have left another (the CLI's cancel-on-Ctrl-C) installed
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            tr.train((x, x[:, :1]), steps=8)
    finally:
        signal.signal(signal.SIGINT, old)
    assert max(seen) < 8


@pytest.mark.mpi
def test_sigint_to_a_rank_blocked_in_a_collective_ends_the_job():
    from skiff.kernels.backend import cpu_count

    if cpu_count() < 2:
        pytest.skip("2 ranks need 2 cores")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    proc = subprocess.run(["timeout", "-s", "KILL", "120", mpiexec(), "-n", "2",
                           sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode not in KILLED, f"the job hung until killed:\n{out[-4000:]}"
    assert proc.returncode != 0, out[-4000:]
    assert "RESULT" not in proc.stdout, out[-4000:]
    assert "SIGINT to rank 0" in out, out[-4000:]
    assert "skiff rank 0: interrupted (SIGINT) while it waited in a collective" in out, \
        out[-4000:]
