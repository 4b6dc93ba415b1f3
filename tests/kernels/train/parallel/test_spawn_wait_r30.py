"""Round 30: a parent that spawned its training ranks (``MPI.COMM_SELF.Spawn``, as a notebook
does) and gathers their results did not hear when a rank failed: round 29 said it waited
in ``inter.gather``; with MPICH's Hydra it was worse: the rank alarm's exit made Hydra's
clean-up SIGKILL every process of the job, the parent (a notebook's kernel) included, 3-5 s
after the failure. Now the failing rank also tells the parent, and
``parallel.spawned.gather_from_ranks(inter, timeout=...)`` ends the ranks' process manager
(so the parent lives on) and raises ``SpawnedRanksFailed`` naming the rank, the step and
the cause. Oracles: one process on the same failing data
fails after the same step with the same error; without a failure the gathered results equal
torch 2.13's SGD on the whole batches. ``timeout -s KILL`` bounds each run: a hang is a
failure (137), not a wait.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from .mpi_util import HERE, ROOT, json_after, line_after, mpiexec, results_in

SCRIPT = HERE / "scripts" / "spawn_wait_r30_check.py"
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


def _one_process_failure():
    import skiff
    from skiff.nn import Linear, ReLU, Sequential

    skiff.seed(0)
    done = []
    tr = skiff.Trainer(Sequential(Linear(3, 16), ReLU(), Linear(16, 1)), optimizer="sgd",
                       schedule="constant", lr=0.01, batch_size=check.BATCH, shuffle=False,
                       callbacks=[lambda m: done.append(m["step"])])
    with pytest.raises(ValueError) as info:
        tr.train(check.Rows(True), steps=4)
    return str(info.value), max(done, default=0)


@pytest.mark.mpi
@pytest.mark.slow  # Spawn starts a process manager first (~10 s on a quiet machine)
def test_a_parent_hears_that_a_spawned_rank_failed():
    code, out, err = _parent("fail")
    assert code == 3, f"exit {code}\n{(out + err)[-4000:]}"
    message, steps = _one_process_failure()
    line = line_after(out, "FAILED ")
    assert "SpawnedRanksFailed" in line
    assert f"rank 1 failed after step {steps}: ValueError: {message}" in line, line
    # the parent lives on (Hydra's clean-up SIGKILLed it 3-5 s after the failure) and no
    # rank is left running
    assert json_after(out, "ALIVE ") == []


@pytest.mark.mpi
@pytest.mark.slow
def test_gathered_results_of_spawned_ranks_equal_torch():
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
