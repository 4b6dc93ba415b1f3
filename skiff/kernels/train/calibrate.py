"""The calibration micro-run behind the planner's check of a distributed run
(:mod:`skiff.kernels.train.plan.check`): a few local steps of a copy of the model on one real
batch of this rank's size, then one timed all-reduce of the gradient bytes.

Every rank runs it at once before training, as it will train, so the fixed costs the cost model
leaves out (Python per op, the optimizer loop, small matmuls, the kernels that load on first
use, the process's own memory) are measured where they occur. It changes nothing in the run:
the copy has its own optimizer and a private random generator, and the batch is read from a
loader of its own.

What it measures is kept (round 47) in skiff's cache folder (``SKIFF_CACHE``, see
:func:`skiff.kernels.backend.cache_dir`), under ``calibration/`` (or in
``SKIFF_CALIBRATION_CACHE``), one small JSON file per
machine, model signature (class, modules, parameter names, shapes, dtypes and which train),
batch (shapes and dtypes of this rank's batch), loss, precision, device and world size: the
next job of that model on that machine and world reads it and skips the micro-run (and the
timed all-reduce, when every rank has it). The process's own resident set is still read then,
so the memory check holds this run's process. ``SKIFF_RECALIBRATE=1`` measures again (and
rewrites the entry); an entry older than :data:`MAX_AGE_S` is measured again too. One process
only (``world_size`` 1: a direct call) never reads or writes the cache.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import json
import os
import re
import time

import numpy as np

from .plan.check import Calibration, rss_bytes, time_steps

__all__ = ["micro_run", "time_allreduce", "MAX_PARAMS", "MAX_AGE_S", "calibration_dir"]

MAX_PARAMS = 20_000_000   # above this the copy costs more than the check is worth
MAX_AGE_S = 7 * 86400     # a cached calibration older than a week is measured again
_VERSION = 1              # of the cache entries' layout and of what the micro-run measures
_STEPS = 3                # timed local steps (their median), after one warm-up
_FIELDS = {"step": ("local_step_s", "step_peak_bytes", "warm_bytes"),
           "allreduce": ("allreduce_s",)}

# whether this process already holds what a micro-run loads on first use (the optimizer,
# loader and loss modules, kernels compiled on first call): a cached entry's ``warm_bytes``
# is added to the baseline only in a process that does not
_warm = {"done": False}


def calibration_dir():
    """Where cached calibrations live: ``SKIFF_CALIBRATION_CACHE``, else
    ``<skiff cache>/calibration`` (the tests give each test a folder of its own)."""
    from pathlib import Path

    from skiff.kernels.backend.cache import cache_dir

    if os.environ.get("SKIFF_CALIBRATION_CACHE"):
        return Path(os.environ["SKIFF_CALIBRATION_CACHE"]).expanduser()
    return cache_dir() / "calibration"


def micro_run(model, dataset, *, rows: int, loss_spec, device, precision: str,
              world_size: int | None = None) -> Calibration:
    """Local steps (forward, backward, AdamW) of a copy of ``model`` on ``rows`` items of
    ``dataset``; the resident set afterwards is the baseline. ``world_size`` (default: the
    launch's, from the launcher's variables) above 1 reads and writes the cache."""
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
    if world_size is None:
        from skiff.kernels.backend.launch_env import launch_env

        world_size = launch_env().size
    host, key = None, None
    try:
        host = _first_batch(dataset, rows)
        if int(world_size) > 1:
            key = _step_key(model, host, rows=rows, loss_spec=loss_spec, device=device,
                            precision=precision, world_size=int(world_size))
    except Exception:  # noqa: BLE001 - no key: measured, not cached (the step says why)
        key = None
    if key is not None:
        hit = _read("step", key)
        if hit is not None:
            return _from_cache(hit, rows)
    before = rss_bytes()
    frozen = _freeze()   # the collections below then walk the micro-run's objects only
    try:  # 16-bit: the copy steps as the run will (16-bit weights, float32 masters)
        local, step_peak = _local_step(model, dataset, rows, loss_spec, device, precision,
                                       host=host)
    except Exception as exc:  # the check is a report: it never stops a run
        _give_back(frozen)
        return Calibration(why_not=f"micro-run failed ({type(exc).__name__}: {exc})",
                           baseline_bytes=rss_bytes(), rows=rows)
    _give_back(frozen)
    _warm["done"] = True
    calib = Calibration(local_step_s=local, baseline_bytes=rss_bytes(), rows=rows,
                        peak_before_bytes=_peak_rss(), step_peak_bytes=step_peak)
    if key is not None:
        path = _write("step", key, {"local_step_s": local, "step_peak_bytes": int(step_peak),
                                    "warm_bytes": max(0, calib.baseline_bytes - before)})
        if path is not None:
            calib.notes.append(f"micro-run measured and kept in {path} for the next job of "
                               "this model on this machine")
    return calib


def _from_cache(hit: dict, rows: int) -> Calibration:
    """The calibration a cache entry holds, with this process's own resident set as the
    baseline (plus what a micro-run would have loaded, when this process has not yet)."""
    warm = 0 if _warm["done"] else int(hit.get("warm_bytes", 0))
    _warm["done"] = True
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(hit["measured_at"]))
    calib = Calibration(local_step_s=float(hit["local_step_s"]),
                        baseline_bytes=rss_bytes() + warm, rows=rows,
                        peak_before_bytes=_peak_rss(),
                        step_peak_bytes=int(hit["step_peak_bytes"]), cached=True)
    calib.notes.append(f"no micro-run: its figures were read from {hit['path']} (measured "
                       f"{when} on this machine, load average {hit.get('load', 0):.1f}); "
                       "SKIFF_RECALIBRATE=1 measures again")
    return calib


def _on_gpu(device) -> bool:
    from skiff.kernels.backend import resolve_device

    try:
        return bool(resolve_device(device or "auto").is_gpu)
    except Exception:  # noqa: BLE001 - unknown: as a CPU
        return False


def _gpu_model(device) -> str:
    """The GPU ``device`` resolves to (its model) and cupy's version, '' on the CPU: a step
    timed on another card, or with another cupy, is not this one's."""
    if not _on_gpu(device):
        return ""
    from skiff.kernels.backend import cupy, resolve_device

    try:
        model = resolve_device(device or "auto").model
    except Exception:  # noqa: BLE001 - _on_gpu resolved it: not expected
        model = "?"
    return f"{model}, cupy {getattr(cupy(), '__version__', '?')}"


def _freeze() -> bool:
    """Move every object alive now to the collector's permanent generation (``gc.freeze``),
    so that the full collections of :func:`_step_peak` and :func:`_give_back` walk only what
    the micro-run made: a collection of a whole process with skiff imported took ~145 ms,
    twice a rank per job (round 47). Not when the caller froze objects already (``unfreeze``
    would thaw theirs too)."""
    if not hasattr(gc, "freeze") or gc.get_freeze_count():
        return False
    gc.freeze()
    return True


def _give_back(frozen: bool = False) -> None:
    """Free the micro-run's copy and hand its pages back to the system, so the baseline read
    next holds the process, its kernels and the weights, not the copy's gradients, Adam
    moments and activations: the run's own are counted on top of it by the check (read
    without this, a 2-rank gpt-small's baseline held 410 MiB of the copy's, counted twice).
    glibc keeps freed pages resident until ``malloc_trim``; elsewhere this only collects.
    ``frozen``: the objects :func:`_freeze` froze are thawed after the collection."""
    gc.collect()
    if frozen:
        gc.unfreeze()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _first_batch(dataset, rows):
    """The first ``rows`` items of ``dataset`` as the Trainer's loader collates them."""
    from .data import DataLoader

    return next(iter(DataLoader(dataset, batch_size=rows, shuffle=False, drop_last=False)))


def _local_step(model, dataset, rows, loss_spec, device, precision="32", host=None):
    """Seconds of one step of a copy (as the Trainer steps it: under 16-bit precision the
    copy's weights are 16-bit, the loss float32, AdamW on float32 masters) and its peak."""
    from .core.optim import AdamW
    from .core.random import new_generator, using
    from .losses import loss_function
    from .precision import MixedTraining
    from .strategy import SingleDevice

    if host is None:
        host = _first_batch(dataset, rows)
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
        seconds = time_steps(step, repeats=_STEPS)
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


def time_allreduce(comm, n_params: int, repeats: int = 3, *, calib=None) -> float:
    """Median seconds of an all-reduce of ``n_params`` float32 over ``comm`` (collective:
    every rank calls it). With several ranks a timing kept in the cache for this machine,
    communicator, world and size is used when every rank has one (a one-number all-reduce
    decides it, so the ranks agree); else it is timed and kept. ``calib``: a
    :class:`Calibration` whose notes say so."""
    import statistics

    size = int(getattr(comm, "size", 1))
    key = None
    if size > 1:
        from skiff.kernels.backend.launch_env import launch_env

        try:
            key = {"comm": type(comm).__name__, "world_size": size,
                   "ranks_per_node": launch_env().local_size, "n_params": int(n_params),
                   "machine": _machine()}
            hit = _read("allreduce", key)
        except Exception:  # noqa: BLE001 - this rank times it: still say so to the others
            key, hit = None, None
        have = np.array([1.0 if hit is not None else 0.0], dtype=np.float32)
        comm.allreduce_(have, op="min")
        if hit is not None and have[0] == 1.0:
            if calib is not None:
                calib.notes.append(f"all-reduce time read from {hit['path']}")
            return float(hit["allreduce_s"])
    buf = np.zeros(max(1, int(n_params)), dtype=np.float32)
    comm.allreduce_(buf)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        comm.allreduce_(buf)
        times.append(time.perf_counter() - t0)
    seconds = statistics.median(times)
    if key is not None:
        _write("allreduce", key, {"allreduce_s": seconds})
    return seconds


# ---- the cache ---------------------------------------------------------------------------

def _machine() -> dict:
    """What makes a timing this machine's: host, processor, the cores this process may use,
    the BLAS/OpenMP thread budget, and the versions of Python, numpy and skiff."""
    import platform
    from importlib import metadata

    try:
        version = metadata.version("skiff")
    except metadata.PackageNotFoundError:
        version = ""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh
                        if line.startswith("model name")), "")
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    threads = {v: os.environ.get(v, "") for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                  "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}
    return {"host": platform.node(), "arch": platform.machine(), "cpu": cpu, "cores": cores,
            "threads": threads, "python": platform.python_version(), "numpy": np.__version__,
            "skiff": version}


def _model_signature(model) -> str:
    """The model's class, modules, parameters (name, shape, dtype, trained or frozen) and
    config, as one digest: what a step's cost depends on (not the weights' values)."""
    h = hashlib.sha256()
    h.update(f"{type(model).__module__}.{type(model).__qualname__}\n".encode())
    for name, m in model.named_modules():
        h.update(f"{name}={type(m).__qualname__}\n".encode())
    for name, p in model.named_parameters():
        h.update(f"{name}:{tuple(p.shape)}:{p.dtype}:{bool(p.requires_grad)}\n".encode())
    config = getattr(model, "config", None)
    if config is not None:  # no object addresses: they differ in every process
        h.update(re.sub(r" at 0x[0-9a-fA-F]+", "", repr(config)).encode())
    h.update(f"recompute={getattr(model, 'recompute', None)}".encode())
    return h.hexdigest()


def _batch_signature(obj, depth: int = 0) -> str:
    """Shapes and dtypes of a collated batch (arrays, tensors, tuples, dicts, objects)."""
    if depth > 6:
        return "..."
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):
        return f"{obj.dtype}{tuple(obj.shape)}"
    if isinstance(obj, (list, tuple)):
        return "(" + ",".join(_batch_signature(o, depth + 1) for o in obj) + ")"
    if isinstance(obj, dict):
        return "{" + ",".join(f"{k}:{_batch_signature(obj[k], depth + 1)}"
                              for k in sorted(obj, key=str)) + "}"
    if isinstance(obj, (int, float, str, bool, type(None))):
        return repr(obj)
    fields = getattr(obj, "__dict__", None)
    if fields:
        return type(obj).__qualname__ + _batch_signature(dict(fields), depth + 1)
    return type(obj).__qualname__


def _step_key(model, host, **kw) -> dict:
    device = kw.pop("device")
    return {"model": _model_signature(model), "batch": _batch_signature(host),
            "loss": repr(kw.pop("loss_spec")), "device": str(device), "gpu": _on_gpu(device),
            "gpu_model": _gpu_model(device),
            "visible_gpus": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "machine": _machine(),
            **kw}


def _path(kind: str, key: dict):
    text = json.dumps(key, sort_keys=True, default=str)
    return calibration_dir() / f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


def _read(kind: str, key: dict) -> dict | None:
    """The entry kept for ``key``, or None (none, unreadable, another key or layout, too
    old, or ``SKIFF_RECALIBRATE`` set)."""
    if os.environ.get("SKIFF_RECALIBRATE", "") not in ("", "0"):
        return None
    path = _path(kind, key)
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    same = json.loads(json.dumps(key, sort_keys=True, default=str))
    try:
        if entry.get("version") != _VERSION or entry.get("key") != same or \
                not 0 <= time.time() - float(entry["measured_at"]) <= MAX_AGE_S or \
                not all(isinstance(entry[k], (int, float)) for k in _FIELDS[kind]):
            return None
    except (AttributeError, KeyError, TypeError, ValueError):   # not an entry of ours
        return None
    return dict(entry, path=str(path))


def _write(kind: str, key: dict, values: dict):
    """Keep ``values`` for ``key`` (atomically: ranks may write at once); the path, or None
    when the cache folder cannot be written (the run goes on)."""
    path = _path(kind, key)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    entry = {"version": _VERSION, "key": json.loads(json.dumps(key, sort_keys=True,
                                                               default=str)),
             "measured_at": time.time(), "load": load, **values}
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(entry, indent=1))
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return None
    return path
