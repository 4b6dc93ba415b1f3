"""The planner's check of a real run: what the run should cost on this machine, next to what it
measured, with the fixed costs the cost model leaves out.

The cost model (:mod:`.cost`) prices what grows with the model: flops, bytes of weights,
gradients, optimizer state and activations. On a small model on a CPU those are dwarfed by what
does not grow with it, which the model leaves out on purpose (its tables are for 7B and 70B):

* **the process**: the interpreter, numpy, MPI, skiff, kernels compiled on first use, and the
  model's weights, all resident before the first step. Measured: the resident set after a
  calibration micro-run (``baseline``), so the kernels that load lazily are in it, once the
  micro-run's copy is freed and its pages handed back (``malloc_trim``): read with them still
  resident, the copy's gradients, moments and activations were counted twice.
* **the framework's per-step cost**: Python dispatch of every op of forward and backward, the
  optimizer's loop over parameters, small matmuls far below the machine's peak flop rate.
  Measured: a few local steps (forward, backward, optimizer) of a copy of the real model on a
  real batch of this rank's size, on every rank at once as in the run (``local_step``).
* **communication**: the gradient all-reduce of this many bytes over this communicator, timed
  in place (``allreduce``); the plain cost model counts bandwidth only, not latency.

The expected peak resident set is ``baseline + the data-parallel buckets + optimizer state + a
step's activations and gradients``, the last the micro-run step's own peak above what stays
between steps (``tracemalloc``: backward frees activations as it makes gradients, so the two
are never both whole at once); without a micro-run, the gradients plus the cost model's
activations times ``ACT_SCALE``. Or the process's peak before training when that is higher
(the micro-run's copy; compiling kernels into a cold numba cache). The expected step is
``local_step + allreduce``: the micro-run's steps hold no all-reduce, so nothing is counted
twice (the all-reduce overlaps backward in the run, and ZeRO steps 1/dp of the moments, so the
sum errs high, never double).
:func:`compare` says whether the run agrees (memory within 10%, step time within 20%) and, when
it does not, why it may not.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass, field

__all__ = ["Calibration", "rss_bytes", "time_steps", "expected", "compare", "MEMORY_TOL",
           "STEP_TOL", "ACT_SCALE"]

MEMORY_TOL = 0.10
STEP_TOL = 0.20
ACT_SCALE = 1.2     # numpy autograd keeps about 1.2x the formula's activations (docs/distributed)


def rss_bytes() -> int:
    """This process's resident set now (Linux ``/proc/self/statm``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@dataclass
class Calibration:
    """What a micro-run measured on this rank before training."""

    local_step_s: float | None = None     # forward + backward + optimizer, this rank's batch
    baseline_bytes: int = 0               # resident set after the micro-run
    peak_before_bytes: int = 0            # the process's peak resident set by then
    step_peak_bytes: int = 0              # one step's transient peak (activations + grads)
    allreduce_s: float = 0.0              # one all-reduce of the gradient bytes
    rows: int = 0                         # batch rows per rank in the micro-run
    why_not: str | None = None            # why no micro-run (then only the cost model)
    cached: bool = False                  # read from the cache: no micro-run this time
    notes: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def time_steps(run_step, repeats: int = 4, budget: float = 1.0) -> float:
    """Median seconds of ``run_step()`` over ``repeats`` calls after one warm-up call (which
    loads whatever loads on first use); fewer (at least two) when they would take more than
    ``budget`` seconds, so a big model's check costs a few steps, not a minute."""
    t0 = time.perf_counter()
    run_step()
    first = time.perf_counter() - t0
    repeats = max(2, min(repeats, int(budget / max(first, 1e-9))))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run_step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def expected(estimate: dict, calib: Calibration, *, n_params: int, weight_bytes: int = 4,
             optimizer_bytes: int = 8, dp: int = 1) -> dict:
    """The peak resident set and step time this run should show, with their parts (bytes,
    seconds). ``estimate`` is the plan's estimate (``Estimate.to_json()``)."""
    mem = estimate.get("memory", {})
    parts_mem = {
        "baseline (process, libraries, kernels, weights; measured)": calib.baseline_bytes,
        "all-reduce buckets": n_params * weight_bytes if dp > 1 else 0,
        "optimizer state": int(mem.get("optimizer", n_params * optimizer_bytes)
                               + mem.get("master_shard", 0)),
    }
    if calib.step_peak_bytes > 0:
        # measured on the micro-run's step: backward frees activations as it makes gradients,
        # so the two are never both whole at once (summed, gpt-small on 2 ranks was 1.3x)
        parts_mem["a step's activations and gradients (micro-run peak)"] = \
            int(calib.step_peak_bytes)
    else:
        parts_mem["gradients"] = n_params * weight_bytes
        parts_mem[f"activations (formula x {ACT_SCALE:.1f})"] = \
            int(mem.get("activations", 0) * ACT_SCALE)
    out = {"peak_bytes": int(sum(parts_mem.values())), "memory_parts": parts_mem}
    if calib.peak_before_bytes > out["peak_bytes"]:
        # the peak can only grow: compiling kernels on first use (a cold numba cache) peaks
        # above what stays resident, before training starts
        out["peak_bytes"] = int(calib.peak_before_bytes)
        out["peak_from"] = "the peak before training (kernels compiled on first use)"
    if calib.local_step_s is not None:
        parts_t = {"local step (micro-run)": calib.local_step_s,
                   "gradient all-reduce (timed)": calib.allreduce_s}
        out.update(step_s=float(sum(parts_t.values())), step_parts=parts_t)
    return out


def compare(exp: dict, measured_step_s: float | None, measured_peak_bytes: int | None,
            *, load: float | None = None, cores: int | None = None) -> dict:
    """``{"memory_ratio", "step_ratio", "agrees", "why"}``: measured / expected, whether both
    are within tolerance, and a sentence when not."""
    out: dict = {"expected_peak_bytes": exp.get("peak_bytes"),
                 "expected_step_s": exp.get("step_s"),
                 "measured_step_s": measured_step_s, "measured_peak_bytes": measured_peak_bytes}
    why = []
    if measured_peak_bytes and exp.get("peak_bytes"):
        r = measured_peak_bytes / exp["peak_bytes"]
        out["memory_ratio"] = r
        if abs(r - 1) > MEMORY_TOL:
            why.append(f"memory {r:.2f}x the expected: the resident set also holds what this "
                       "process allocated before training and allocator pages not given back")
    if measured_step_s and exp.get("step_s"):
        r = measured_step_s / exp["step_s"]
        out["step_ratio"] = r
        if abs(r - 1) > STEP_TOL:
            load = os.getloadavg()[0] if load is None and hasattr(os, "getloadavg") else load
            cores = cores or os.cpu_count() or 1
            busy = (f"; the load average was {load:.1f} on {cores} cores, so other work took "
                    "turns with the ranks" if load is not None and load > cores else "")
            why.append(f"step time {r:.2f}x the expected: steps in the run also wait for the "
                       f"other rank at each all-reduce{busy}")
    elif exp.get("step_s") is None:
        why.append("no micro-run: " + (exp.get("why_not") or "step time not checked"))
    out["agrees"] = not why
    out["why"] = "; ".join(why)
    return out


def describe(check: dict) -> str:
    """One line for the job's log."""
    mib = 2**20
    parts = []
    if check.get("measured_step_s") and check.get("expected_step_s"):
        raw = check.get("predicted_step_s")
        # the dry run's raw figure, so that a user sees where it went (h18)
        parts.append(f"step {check['measured_step_s'] * 1e3:.1f} ms measured, "
                     f"{check['expected_step_s'] * 1e3:.1f} ms expected"
                     + (f" by the micro-run (the cost model alone, fixed costs left out: "
                        f"{raw * 1e3:.3g} ms)" if raw else ""))
    if check.get("measured_peak_bytes") and check.get("expected_peak_bytes"):
        parts.append(f"peak RSS {check['measured_peak_bytes'] / mib:.0f} MiB measured, "
                     f"{check['expected_peak_bytes'] / mib:.0f} MiB expected")
    if (check.get("calibration") or {}).get("cached"):
        parts.append("fixed costs from this machine's cached calibration (no micro-run)")
    verdict = "agrees" if check.get("agrees") else f"off: {check.get('why')}"
    return "plan check: " + "; ".join(parts) + f" ({verdict})"
