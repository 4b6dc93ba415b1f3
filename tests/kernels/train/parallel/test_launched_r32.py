"""Round 32: ranks started as their own MPI job (``parallel.launched.launch_ranks``, joined
through a port) in place of ``MPI.COMM_SELF.Spawn``: a rank killed outright no longer takes
the parent with it.

With ``Spawn`` the ranks and the parent are one Hydra job, and Hydra's clean-up SIGKILLs
every process of it when a rank is SIGKILLed (the parent, a notebook's kernel, exit 137);
no option of MPICH 5.0.2 turns that off (``docs/distributed.md``, "Round 32"). Here rank 1
SIGKILLs itself after its first step: the parent hears it from the ranks' ``mpiexec``
(``SpawnedRanksFailed`` with its exit status, not a timeout), lives on, and no rank is left.
A rank that fails with an exception is named with its cause, as under ``Spawn``; without a
failure the gathered results equal torch 2.13's SGD on the whole batches. ``timeout -s KILL``
bounds each run: a hang is a failure (137), not a wait.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from .mpi_util import HERE, ROOT, json_after, line_after, mpiexec, results_in

SCRIPT = HERE / "scripts" / "launched_r32_check.py"
sys.path.insert(0, str(SCRIPT.parent))
import spawn_wait_r30_check as check  # noqa: E402


def _parent(kind):
    from skiff.kernels.backend import cpu_count

    if cpu_count() < 2:
        pytest.skip("2 ranks need 2 cores")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env["PATH"] = os.path.dirname(mpiexec()) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["timeout", "-s", "KILL", "150", sys.executable, str(SCRIPT),
                           "parent", kind], capture_output=True, text=True, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.mpi
def test_a_rank_killed_outright_leaves_the_parent_alive():
    code, out, err = _parent("kill")
    assert code == 3, f"exit {code} (137: the parent was killed)\n{(out + err)[-4000:]}"
    line = line_after(out, "FAILED ")
    assert "SpawnedRanksFailed" in line and "killed outright" in line, line
    assert json_after(out, "ALIVE ") == []


@pytest.mark.mpi
def test_a_failing_rank_is_named_with_its_cause():
    code, out, err = _parent("fail")
    assert code == 3, f"exit {code}\n{(out + err)[-4000:]}"
    line = line_after(out, "FAILED ")
    assert "rank 1 failed after step" in line and "ValueError: row 21 is unreadable" in line
    assert json_after(out, "ALIVE ") == []


@pytest.mark.mpi
def test_results_of_launched_ranks_equal_torch():
    import torch

    code, out, err = _parent("ok")
    assert code == 0, f"exit {code}\n{(out + err)[-4000:]}"
    got = results_in(out)
    assert [r["rank"] for r in got] == [0, 1]
    import skiff
    from skiff.nn import Linear, ReLU, Sequential

    skiff.seed(0)  # the same start as the ranks' model
    start = Sequential(Linear(3, 16), ReLU(), Linear(16, 1)).state_dict()
    twin = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    twin = twin.double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=0.01, momentum=0.9)
    rows = check.Rows(False)
    losses = []
    for step in range(4):
        sl = slice(step * check.BATCH, (step + 1) * check.BATCH)
        loss = torch.nn.functional.mse_loss(twin(torch.tensor(rows.x[sl], dtype=torch.float64)),
                                            torch.tensor(rows.y[sl], dtype=torch.float64))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)  # the Trainer's clip
        opt.step()
        losses.append(loss.item())
    want = {k: v.detach().numpy() for k, v in twin.state_dict().items()}
    for r in got:
        np.testing.assert_allclose(r["losses"], losses, rtol=1e-5)
        for k, v in want.items():
            np.testing.assert_allclose(np.asarray(r["w"][k]), v, atol=1e-5)
