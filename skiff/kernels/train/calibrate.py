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
    if precision != "32":
        why = f"precision {precision}: the micro-run times float32 steps only"
    elif n > MAX_PARAMS:
        why = f"{n:,} parameters: a copy for the micro-run would cost too much"
    if why:
        return Calibration(why_not=why, baseline_bytes=rss_bytes(), rows=rows)
    try:
        local = _local_step(model, dataset, rows, loss_spec, device)
        gc.collect()   # the copy is gone before the baseline is read
    except Exception as exc:  # the check is a report: it never stops a run
        return Calibration(why_not=f"micro-run failed ({type(exc).__name__}: {exc})",
                           baseline_bytes=rss_bytes(), rows=rows)
    return Calibration(local_step_s=local, baseline_bytes=rss_bytes(), rows=rows,
                       peak_before_bytes=_peak_rss())


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _local_step(model, dataset, rows, loss_spec, device) -> float:
    from .core.optim import AdamW
    from .core.random import new_generator, using
    from .data import DataLoader
    from .losses import loss_function
    from .strategy import SingleDevice

    host = next(iter(DataLoader(dataset, batch_size=rows, shuffle=False, drop_last=False)))
    single = SingleDevice().bind(device=device)
    twin, opt = single.setup(copy.deepcopy(model), lambda params: AdamW(params, lr=1e-9))
    loss_fn = loss_function(twin, loss_spec)
    dtype = next(iter(twin.parameters())).dtype

    def step():
        single.forward_backward(twin, single.to_device(host, dtype, targets=True), loss_fn)
        opt.step()
        opt.zero_grad()

    twin.train()
    with using(new_generator(0)):
        return time_steps(step)


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
