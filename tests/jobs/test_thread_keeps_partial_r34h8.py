"""Round 34 (h8): a solve cancelled on a thread (the terminal's and a notebook's default
runner) kept nothing of its iterations: the process worker keeps what a kind attaches to
its ``JobCancelled`` (``partial.npz``, ``result.json``; h5/h10 this round), the thread runner
did not, and its summary read "? : cg + jacobi on ?". Now the thread runner keeps it too,
the summary says where it stopped, and gives the command that goes on from it (``--x0``).
The oracle: SciPy's product on the kept iterate gives the residual the summary states, and
the command given, run, starts from that residual."""

from __future__ import annotations

import shlex
import time

import numpy as np
import pytest

from skiff.jobs import submit
from skiff.jobs.launch import dry_run
from skiff.kinds import KINDS


def test_a_cancelled_thread_solve_keeps_its_iterate(runs_dir):
    job, _ = submit("solve", "poisson --grid 768x768 --method cg --precond jacobi "
                    "--rtol 1e-14 --maxiter 100000", front="cli")
    deadline = time.monotonic() + 60
    while not (job.state.fraction or 0) > 0 and job.status in ("queued", "running") and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    job.cancel()
    job.wait(60)
    if job.status != "cancelled" or not (job.result or {}).get("stopped"):
        # a loaded machine's cancel landing after the last iteration (CI at a4d34d80: a
        # 256x256 grid, 0.5 s of solve): a whole result, "done" since round 37
        pytest.skip(f"the solve ended before the cancel ({job.status})")
    path = job.run_dir / "partial.npz"
    assert path.is_file()
    x = np.load(path)["x"].ravel()
    from skiff.kernels.solve.entry import build_problem

    p = build_problem(job.config)
    A, b = p.matrix(), np.asarray(p.rhs).ravel()
    result = job.result
    assert result["stopped"] and result["iterations"] > 0
    rel = np.linalg.norm(b - A @ x) / np.linalg.norm(b)   # SciPy's product on the iterate
    assert rel == pytest.approx(result["residual"], rel=1e-6)
    lines = KINDS["solve"].summary_of(job, result)
    assert lines[0].startswith("cg + jacobi, 589,824 unknowns: ") and "?" not in lines[0]
    go_on = next(line for line in lines if line.startswith("to go on from its last iterate: "))
    words = shlex.split(go_on.removeprefix("to go on from its last iterate: "))
    assert words[0] == "%solve" and words[-2:] == ["--x0", str(path)]   # as it was started
    config = dry_run("solve", words[1:])["config"]
    assert config["x0"] == str(path)
