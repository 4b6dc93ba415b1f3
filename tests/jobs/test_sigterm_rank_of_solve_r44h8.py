"""Round 44 (h8): SIGTERM of one rank of a 2-rank solve.

Round 43 (h14) made the demo kind's ranks agree on a SIGTERM's stop; left: the other
multi-rank kinds. A parallel solve's rank 1 never asks ``should_stop`` (rank 0 reads the
run folder's cancel and broadcasts the stop), so a SIGTERM raised ``JobCancelled`` in rank 1
where it stood: it left with no exit marker, the launcher's watch ended rank 0 with it, and
the job said "stopped on request (signalled)" (no one had asked) with the iterate lost
(no ``partial.npz`` to go on from). Now a rank of several whose kind has not asked leaves
the stop to the kind for ``DEFER_S`` (the cancel it wrote, which rank 0 reads and the ranks
agree on): every rank stops at one iteration, rank 0 keeps the iterate and says why.

One real ``python -m skiff solve ... --np 2 --runner process --wait`` (CG, no
preconditioner, a 1000:1 jump: tens of thousands of iterations to 1e-14), SIGTERM'd once
rank 0 has written two progress events; every wait is bounded and the job's processes are
killed at the end should any be left.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from tests.jobs.test_worker_stops_r33h6 import Job

pytestmark = pytest.mark.mpi


def test_sigterm_of_rank_1_of_a_solve_stops_every_rank_keeping_the_iterate(tmp_path):
    from skiff.kernels.backend import cpu_count

    if cpu_count() < 2:
        pytest.skip("2 ranks need 2 cores")
    job = Job(tmp_path, "solve", "jump", "--grid", "300x300", "--method", "cg",
              "--precond", "none", "--rtol", "1e-14", "--maxiter", "1000000", "--np", "2")
    try:
        assert job.until(lambda: (job.run / "ranks" / "1.pid").exists() and sum(
            e["type"] == "progress" for e in job.events()) >= 2), job.output()
        os.kill(int((job.run / "ranks" / "1.pid").read_text()), signal.SIGTERM)
        assert job.until(lambda: job.proc.poll() is not None, 60), job.output()
    finally:
        job.end()
    status = job.status()
    assert status["status"] == "cancelled", job.output()
    # rank 0's own status, with the why (the launcher's was "stopped on request (signalled)")
    assert status["rank"] == 0 and status["message"] == "stopped by SIGTERM (rank 1)", status
    ranks = job.run / "ranks"
    assert (ranks / "0.exit").exists() and (ranks / "1.exit").exists()  # both left cleanly
    with np.load(job.run / "partial.npz") as kept:  # the iterate, to go on from (--x0)
        x, iteration = kept["x"], int(kept["iteration"])
    assert x.size == 300 * 300 and np.isfinite(x).all() and np.abs(x).max() > 0
    assert 0 < iteration < 1_000_000
    said = (job.run / "logs" / "rank1.log").read_text()  # a rank's own log (events: rank 0's)
    assert said.count("SIGTERM: stopping, as on a cancel (at the step its ranks agree") == 1, said
    assert job.pids() == []
