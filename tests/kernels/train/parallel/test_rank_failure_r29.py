"""Round 29: an exception on one rank that the ranks do not agree on stops every rank.

Found as a user: ``mpiexec -n 2 python train.py`` whose dataset raised on a row only rank 1
reads (also a batch of the wrong shape, a MemoryError, a KeyboardInterrupt, a checkpoint
shard that failed to write) printed rank 1's traceback and then hung: rank 1 waited in
MPI_Finalize, rank 0 in the gradient all-reduce, until the 40 s kill. Now
(``parallel/rank_alarm.py``) the failing rank tells the others, every rank prints one line
naming the failed rank, the step and the cause, and the job ends with exit code 1. Also
when rank 1 fails reading its data before any step (rank 0 was then in the planner's or
the setup's collectives).

Oracles: one process on the same failing data raises the same error after the same step;
the resume after the failed checkpoint starts from the last committed one (step 2) and
ends equal to PyTorch's SGD on the whole batches (losses and weights to 1e-5).
``timeout -s KILL`` bounds every run: a hang is a failure (exit 137), not a wait.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from .mpi_util import HERE, ROOT, mpiexec, results_in

SCRIPT = HERE / "scripts" / "rank_failure_r29_check.py"
sys.path.insert(0, str(SCRIPT.parent))
import rank_failure_r29_check as check  # noqa: E402

KILLED = (124, 137, -9)


def _mpirun(kind, ckpt, timeout=150):  # a hang is killed; 150 s: a loaded 2-core CI
    from skiff.kernels.backend import cpu_count

    if cpu_count() < 2:
        pytest.skip("2 ranks need 2 cores")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT),
               PYTHONUNBUFFERED="1")
    proc = subprocess.run(["timeout", "-s", "KILL", str(timeout), mpiexec(), "-n", "2",
                           sys.executable, str(SCRIPT), kind, str(ckpt)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout + proc.stderr


def _one_process_failure(fail):
    """(the exception, the steps done before it) of one process on the same data."""
    done = []
    tr = check.trainer(None, callbacks=[lambda m: done.append(m["step"])])
    with pytest.raises(type(fail)) as info:
        tr.train(check.Rows(fail), steps=check.STEPS)
    return info.value, max(done, default=0)


def _torch_sgd():
    """Losses and final weights of torch SGD(momentum 0.9), gradients clipped to norm 1, on
    the same batches in order."""
    torch = pytest.importorskip("torch")
    import skiff
    from skiff.nn import Linear, ReLU, Sequential

    skiff.seed(0)
    first = Sequential(Linear(3, 16), ReLU(), Linear(16, 1)).state_dict()
    net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    net.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in first.items()})
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = map(torch.tensor, check.arrays())
    losses = []
    for s in range(check.STEPS):
        rows = slice(s * check.BATCH, (s + 1) * check.BATCH)
        loss = torch.nn.functional.mse_loss(net(x[rows]), y[rows])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)  # the Trainer's default clip
        opt.step()
        losses.append(float(loss.detach()))
    return losses, {k: v.detach().numpy() for k, v in net.state_dict().items()}


def _stopped_both(rc, out, cause, after):
    assert rc not in KILLED, f"the ranks hung until the kill (exit {rc}):\n{out[-3000:]}"
    assert rc != 0, out[-3000:]
    where = "" if after is None else f" after step {after}"
    line = f"skiff rank 0: stopping: rank 1 failed{where}: {cause}"
    assert line in out, f"{line!r} not in:\n{out[-3000:]}"
    assert "(on rank 1 of 2: the other ranks were told to stop)" in out, out[-3000:]


@pytest.mark.mpi
def test_data_error_on_one_rank_stops_both_naming_it(tmp_path):
    fail = ValueError(f"row {check.BAD_ROW} is unreadable")
    exc, after = _one_process_failure(fail)
    assert after == 1  # row 13 lies in the second batch of 8
    rc, out = _mpirun("data", tmp_path / "ckpt")
    _stopped_both(rc, out, f"ValueError: {exc}", after)


@pytest.mark.mpi
def test_data_source_failing_on_one_rank_before_any_step_stops_both(tmp_path):
    # rank 0 went on to plan and set up (collectives) while rank 1 raised reading its
    # stream; one process raises the same error before its first step
    with pytest.raises(FileNotFoundError):
        check.trainer(None).train(check.stream(1), steps=check.STEPS)
    rc, out = _mpirun("stream", tmp_path / "ckpt")
    _stopped_both(rc, out, "FileNotFoundError: [Errno 2] No such file or directory: "
                  "'/data/part-1.bin'", None)


@pytest.mark.mpi
def test_failed_checkpoint_write_on_one_rank_stops_both_and_resumes_from_the_last_good(
        tmp_path):
    ckpt = tmp_path / "ckpt"
    rc, out = _mpirun("ckpt", ckpt)
    _stopped_both(rc, out, "OSError: [Errno 28] No space left on device", 4)
    # step 4 was never committed (no manifest): both resumes start from step 2
    assert not (ckpt / "step-00000004" / "manifest.json").exists()
    shutil.copytree(ckpt, tmp_path / "one")
    losses, weights = _torch_sgd()
    rc, out = _mpirun("resume", ckpt)
    assert rc == 0, out[-3000:]
    results = results_in(out)
    assert sorted(r["rank"] for r in results) == [0, 1], out[-3000:]
    one = check.trainer(str(tmp_path / "one"), resume=True)
    res_one = one.train(check.Rows(), steps=check.STEPS)
    runs = [(r["resumed"], r["steps"], r["losses"], r["weights"]) for r in results]
    runs.append((res_one.resumed["from_step"], res_one.steps,
                 [h["loss"] for h in res_one.history],
                 {k: np.asarray(v) for k, v in one.model.state_dict().items()}))
    for from_step, steps, got_losses, got_weights in runs:
        assert (from_step, steps) == (2, check.STEPS)
        np.testing.assert_allclose(got_losses, losses, rtol=1e-5, atol=1e-6)
        for k, v in weights.items():
            np.testing.assert_allclose(np.asarray(got_weights[k]), v, rtol=1e-5, atol=1e-6)


@pytest.mark.mpi
@pytest.mark.slow  # two more 2-rank jobs (~6 s each on a quiet machine)
@pytest.mark.parametrize("kind,cause", [
    ("oom", "MemoryError: Unable to allocate 8.00 GiB for an array"),
    ("interrupt", "KeyboardInterrupt")])
def test_memory_error_or_interrupt_on_one_rank_stops_both(tmp_path, kind, cause):
    rc, out = _mpirun(kind, tmp_path / "ckpt")
    _stopped_both(rc, out, cause, 1)
