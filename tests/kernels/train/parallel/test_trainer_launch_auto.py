"""A user's script under ``mpiexec -n 2`` (or spawned from a notebook with
``MPI.COMM_SELF.Spawn``) calling ``Trainer(model, strategy="auto").train(data)`` with no
reporter trains data-parallel over the two ranks, equal to PyTorch on the whole batch.

Found by a user: the Trainer took the job's size from its reporter only, a default
NullReporter said one rank, and each rank trained the whole model alone on the whole data
(the same run twice; with a checkpoint folder, two processes writing one file). The oracle
is torch (float64 AdamW, same first weights and batch order), for an MLP whose last batch
is one row (one rank holds it, the other runs a stand-in row) and a CNN. With verbose=True
the epoch lines come once, from rank 0 (every rank printed them). ``train`` called a second
time under ZeRO continues with its AdamW moments, as torch stepping one optimizer (they
started afresh: the new flat shard got a new optimizer).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from .mpi_util import HERE, ROOT, mpiexec, results_in, run_mpi

torch = pytest.importorskip("torch")
T = torch.nn
sys.path.insert(0, str(HERE / "scripts"))
import launch_auto_check as check  # noqa: E402


def _torch_model(kind):
    if kind == "mlp":
        return T.Sequential(T.Linear(3, 16), T.ReLU(), T.Linear(16, 1))
    return T.Sequential(T.Conv2d(1, 4, 3), T.ReLU(), T.MaxPool2d(2), T.Flatten(),
                        T.Linear(36, 3))


def _torch(kind, init, x, y, starts, batch):
    """torch on the whole batch: float64 AdamW from the same first weights, one step of
    ``batch`` rows per start row in ``starts``; (losses, trained weights)."""
    model = _torch_model(kind).double()
    model.load_state_dict({k: torch.tensor(np.asarray(v, np.float64)) for k, v in init.items()})
    opt = torch.optim.AdamW(model.parameters(), lr=check.LR, weight_decay=0.01)
    xt, yt = torch.tensor(x, dtype=torch.float64), torch.tensor(y)
    losses = []
    for s in starts:
        out, yb = model(xt[s:s + batch]), yt[s:s + batch]
        loss = (T.functional.mse_loss(out, yb.double()) if yb.dtype.is_floating_point
                else T.functional.cross_entropy(out, yb))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}


def _rel(got, want) -> float:
    return max(abs(a - b) / abs(b) for a, b in zip(got, want))


def _check(results, kinds=("mlp", "cnn")):
    assert [r["rank"] for r in results] == [0, 1]
    for kind, n, batch in check.RUNS:
        if kind not in kinds:
            continue
        x, y = check.data(kind, n)
        starts = list(range(0, n, batch)) * check.EPOCHS
        for res in results:
            got = res[kind]
            want, want_w = _torch(kind, got["init"], x, y, starts, batch)
            assert got["world"] == 2, got["world"]  # was 1: each rank trained alone
            assert got["strategy"] != "single", got["strategy"]
            assert len(got["losses"]) == len(want), (len(got["losses"]), len(want))
            assert _rel(got["losses"], want) < 1e-5, (got["losses"], want)
            assert max(float(np.abs(np.asarray(got["weights"][k]) - w).max())
                       for k, w in want_w.items()) < 1e-5


@pytest.mark.mpi
def test_auto_under_mpiexec_trains_over_the_ranks_as_torch_on_the_whole_batch():
    results = run_mpi(2, "launch_auto_check.py", timeout=120)
    _check(results)
    # verbose=True over 2 epochs: one process prints 2 lines; of 2 ranks only rank 0 prints
    # (each rank printed every line)
    assert [r["verbose_lines"] for r in results] == [2, 0]
    # train() called twice under ZeRO keeps the moments (afresh: 5e-4 off torch)
    x, y = check.data("mlp", 40)
    for res in results:
        got = res["twice"]
        assert got["strategy"] in ("zero1", "zero2") and len(got["losses"]) == 12, got
        # 5 steps, then 7 from the start: one torch optimizer through both
        want, _ = _torch("mlp", got["init"], x, y, [0, 8, 16, 24, 32] * 2 + [0, 8], 8)
        assert _rel(got["losses"], want) < 1e-5, (got["losses"], want)


@pytest.mark.mpi
@pytest.mark.slow  # ~11 s on a quiet machine: Spawn starts a process manager first
def test_auto_in_ranks_spawned_from_a_process_trains_over_them():
    from skiff.kernels.backend import cpu_count

    if cpu_count() < 2:
        pytest.skip("2 ranks need 2 cores")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    # Spawn from a singleton process starts the children through the MPI's own mpiexec
    env["PATH"] = os.path.dirname(mpiexec()) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["timeout", "-s", "KILL", "120", sys.executable,
                           str(HERE / "scripts" / "spawn_parent.py"), "2",
                           str(HERE / "scripts" / "launch_auto_check.py")],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    _check(results_in(proc.stdout), kinds=("mlp",))
