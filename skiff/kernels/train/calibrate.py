"""The calibration micro-run behind the planner's check of a distributed run
(:mod:`skiff.kernels.train.plan.check`): a few local steps of a copy of the model on one real
batch of this rank's size, then one timed all-reduce of the gradient bytes.

Every rank runs it at once before training, as it will train, so the fixed costs the cost model
leaves out (Python per op, the optimizer loop, small matmuls, the kernels that load on first
use, the process's own memory) are measured where they occur. It changes nothing in the run:
the copy has its own optimizer and a private random generator, and the batch is read from a
loader of its own.
"""

from __future__ import annotations

import copy
import gc

import numpy as np

from .plan.check import Calibration, rss_bytes, time_steps

__all__ = ["micro_run", "time_allreduce", "MAX_PARAMS"]

MAX_PARAMS = 20_000_000   # above this the copy costs more than the check is worth


def micro_run(model, dataset, *, rows: int, loss_spec, device, precision: str) -> Calibration:
    """Local steps (forward, backward, AdamW) of a copy of ``model`` on ``rows`` items of
    ``dataset``; the resident set afterwards is the baseline."""
    n = int(sum(int(np.prod(p.shape)) for p in model.parameters()))
    why = None
    if n > MAX_PARAMS:
        why = f"{n:,} parameters: a copy for the micro-run would cost too much"
    elif precision == "fp16-mixed" and not _on_gpu(device):
        # numpy's float16 matmul has no BLAS: a gpt-mini step of 2 rows took 20.7 s (bf16
        # 0.22 s), and the micro-run's 4 steps would cost a few of the run's
        why = "precision fp16-mixed on a CPU: a step is too slow to repeat for the check"
    if why:
        return Calibration(why_not=why, baseline_bytes=rss_bytes(), rows=rows)
    try:  # 16-bit: the copy steps as the run will (16-bit weights, float32 masters)
        local, step_peak = _local_step(model, dataset, rows, loss_spec, device, precision)
    except Exception as exc:  # the check is a report: it never stops a run
        _give_back()
        return Calibration(why_not=f"micro-run failed ({type(exc).__name__}: {exc})",
                           baseline_bytes=rss_bytes(), rows=rows)
    _give_back()
    return Calibration(local_step_s=local, baseline_bytes=rss_bytes(), rows=rows,
                       peak_before_bytes=_peak_rss(), step_peak_bytes=step_peak)


def _on_gpu(device) -> bool:
    from skiff.kernels.backend import resolve_device

    try:
        return bool(resolve_device(device or "auto").is_gpu)
    except Exception:  # noqa: BLE001 - unknown: as a CPU
        return False


def _give_back() -> None:
    """Free the micro-run's copy and hand its pages back to the system, so the baseline read
    next holds the process, its kernels and the weights, not the copy's gradients, Adam
    moments and activations: the run's own are counted on top of it by the check (read
    without this, a 2-rank gpt-small's baseline held 410 MiB of the copy's, counted twice).
    glibc keeps freed pages resident until ``malloc_trim``; elsewhere this only collects."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _local_step(model, dataset, rows, loss_spec, device, precision="32") -> float:
    """Seconds of one step of a copy (as the Trainer steps it: under 16-bit precision the
    copy's weights are 16-bit, the loss float32, AdamW on float32 masters) and its peak."""
    from .core.optim import AdamW
    from .core.random import new_generator, using
    from .data import DataLoader
    from .losses import loss_function
    from .precision import MixedTraining
    from .strategy import SingleDevice

    host = next(iter(DataLoader(dataset, batch_size=rows, shuffle=False, drop_last=False)))
    single = SingleDevice().bind(device=device)
    mixed = []

    def make(params):
        if precision == "32":
            return AdamW(params, lr=1e-9)
        mixed.append(MixedTraining(params, precision))
        return AdamW(mixed[0].master_params(), lr=1e-9)

    twin, opt = single.setup(copy.deepcopy(model), make)
    loss_fn = loss_function(twin, loss_spec)
    if mixed:
        loss_fn = MixedTraining.float32_loss(loss_fn)
    dtype = next(iter(twin.parameters())).dtype

    def step():
        single.forward_backward(twin, single.to_device(host, dtype, targets=True), loss_fn)
        if mixed:
            mixed[0].step(opt, None)
        else:
            opt.step()
        opt.zero_grad()

    twin.train()
    with using(new_generator(0)):
        seconds = time_steps(step)
        return seconds, _step_peak(step)


def _step_peak(step) -> int:
    """Bytes one step holds at its peak above what stays between steps (activations and the
    gradients as they coexist in backward: backward frees activations as it makes gradients,
    so the two are not both whole at once), by ``tracemalloc``, which numpy reports to; one
    extra step, outside the timed ones."""
    import tracemalloc

    if tracemalloc.is_tracing():   # the user's own tracing: leave it alone
        return 0
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        step()
        return max(0, tracemalloc.get_traced_memory()[1] - start)
    finally:
        tracemalloc.stop()


def time_allreduce(comm, n_params: int, repeats: int = 3) -> float:
    """Median seconds of an all-reduce of ``n_params`` float32 over ``comm`` (collective:
    every rank calls it)."""
    import statistics
    import time

    buf = np.zeros(max(1, int(n_params)), dtype=np.float32)
    comm.allreduce_(buf)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        comm.allreduce_(buf)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
