"""A training step replayed as one CUDA graph: forward, backward, clipping and AdamW.

On a GPU a small model's step is bound by the host: ~420 kernel launches from Python's
autograd cost ~12-20 ms where the device works ~2 ms (gpt-mini on an H200: 2.1-2.3 ms a step
replayed, against PyTorch's 7.4-7.8 ms eager). :class:`StepGraph` records the step once
with cupy's stream capture and then replays it with one launch a step; only the batch (copied
into the graph's own input arrays) and each step's optimizer scalars (learning rate, bias
corrections, written into pinned host memory the graph copies from) change between replays.

What it takes, and how it stays the same training as the eager step:
- the step's scalars live on the device: the loss and the gradients' sum of squares in a
  ``status`` array; clipping reads the norm there (``clip_many``) and AdamW leaves everything
  as it was when the loss or the gradients are not finite (``adamw_guarded``, fused.cu), so no
  host sync is needed inside the step;
- every array the step allocates comes from a memory pool of the graph's own, never freed to
  anyone else, so the addresses the graph recorded stay its own;
- the capture runs in thread-local mode: anything that would wait for the device (a
  ``.item()``, a host copy) or allocate outside the pool raises, and the step runs eagerly;
  the garbage collector waits (a cupy object freed during the capture invalidates it), and the
  matrix products go through skiff's own cuBLAS handle (:mod:`.gemm`: cupy's wrappers refuse
  a capturing stream);
- the first replay is checked against the same step run eagerly from the same weights (loss,
  gradient norm and every updated weight); a difference, random numbers drawn during the step
  (dropout), or weights replaced since the capture (a checkpoint loaded) turn the graph off or
  make a new one. ``StepGraph.reason`` says why a step ran eagerly.

The eager step of the Trainer is this module's reference twin: tests/gpu_readiness compares the
two over many steps on a GPU. Nothing here runs without one (``StepGraph.unsupported`` says so).
"""

from __future__ import annotations

import gc
import math
import traceback
from pathlib import Path

import numpy as np

from skiff.kernels.backend import cupy

from .gemm import own_cublas
from .optim import AdamW
from .tensor import Tensor

__all__ = ["StepGraph", "update_reference"]

_EPS = 1e-6  # clip_grad_norm_'s
_LARGEST = 1 << 30  # parameter bytes above which a step is not captured


class StepGraph:
    """``StepGraph(model, optimizer, loss_fn, clip)``; ``step(batch)`` runs one optimizer step
    and returns ``(loss, grad_sum_of_squares)`` as host floats, or None when the step was not
    taken (the caller runs it eagerly; :attr:`reason` says why)."""

    def __init__(self, model, optimizer, loss_fn, clip: float | None = None, log=None):
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.clip = None if clip is None else float(clip)
        self.log = log or (lambda msg: None)
        self.reason: str | None = None  # why steps run eagerly (None: they may not)
        self.replays = 0
        self.failure: str | None = None  # the traceback of a capture that failed
        self._seen: set = set()
        self._graphs: dict = {}

    @staticmethod
    def unsupported(model, optimizer, device, *, grad_accum: int = 1,
                    mixed=None) -> str | None:
        """Why this run cannot be captured (None: it can be tried)."""
        if not getattr(device, "is_gpu", False) or cupy() is None:
            return "not on a GPU"
        if type(optimizer) is not AdamW:
            return f"the optimizer is {type(optimizer).__name__} (AdamW is captured)"
        if any(g.get("amsgrad") or g.get("maximize") for g in optimizer.param_groups):
            return "AdamW with amsgrad or maximize (the captured update is plain AdamW's)"
        if grad_accum != 1:
            return "gradients accumulate over micro-batches"
        if mixed is not None:
            return "mixed precision (loss scaling decides on the host)"
        params = [p for g in optimizer.param_groups for p in g["params"]]
        dtypes = {p._data.dtype for p in params}
        if len(dtypes) != 1 or next(iter(dtypes)) not in (np.float32, np.float64):
            return "parameters are not all float32 or all float64"
        if not all(p._data.flags.c_contiguous for p in params):
            return "a parameter is not contiguous"
        size = sum(p._data.nbytes for p in params)
        if size > _LARGEST:
            return (f"the parameters take {size / 2**30:.1f} GiB: a step that size is bound by "
                    "the device, not by launches, and a graph would hold a second set of "
                    "activations")
        return None

    # ---- the step ---------------------------------------------------------------------------
    def step(self, batch):
        if self.reason is not None and self.reason != "warming up":
            return None
        leaves, rebuild = _flatten(batch)
        if leaves is None:
            self.reason = "the batch is not a tuple, list or dict of arrays"
            return None
        key = tuple((a.shape, a.dtype.str) for a in leaves)
        graph = self._graphs.get(key)
        if graph is not None and not graph.still_valid(self._params()):
            self.log("the weights or optimizer state were replaced: capturing the step again")
            self._graphs.clear()
            self._seen.clear()
            graph = None
        if graph is not None:
            return self._replay(graph, leaves)
        if key not in self._seen:  # the first step of a shape runs eagerly (state, kernels)
            self._seen.add(key)
            self.reason = "warming up"
            return None
        if len(self._graphs) >= 4:
            self.reason = "more than four batch shapes"
            return None
        self.reason = None
        return self._capture(key, leaves, rebuild)

    def _params(self):  # the frozen ones (requires_grad=False) have no gradient to apply
        return [p for g in self.optimizer.param_groups for p in g["params"] if p.requires_grad]

    def memory_bytes(self) -> int:
        """Device bytes the captured steps hold in their own pools (the process pool's
        ``used_bytes`` does not count them)."""
        return sum(int(g.pool.total_bytes()) for g in self._graphs.values())

    def _replay(self, graph, leaves):
        for dst, src in zip(graph.inputs, leaves):
            dst[...] = src
        steps = self._advance()
        graph.tables.write_doubles(self._doubles(steps))
        graph.exec.launch()
        loss, sumsq = (float(v) for v in graph.status.get())
        self._settle(loss, sumsq)
        self.replays += 1
        return loss, sumsq

    def _advance(self) -> list[int]:
        """Each parameter's step count after this step (counted now, undone if not taken)."""
        out = []
        for p in self._params():
            st = self.optimizer.state[p]
            st["step"] += 1
            out.append(st["step"])
        return out

    def _settle(self, loss, sumsq):
        if not (math.isfinite(loss) and math.isfinite(sumsq)):  # adamw_guarded left all as was
            for p in self._params():
                self.optimizer.state[p]["step"] -= 1

    def _doubles(self, steps) -> np.ndarray:
        """(tensors, 6): decay, beta1, beta2, eps, step size and sqrt of the second bias
        correction of each tensor at its step count ``steps[i]`` (adamw_guarded's table)."""
        rows = []
        i = 0
        for g in self.optimizer.param_groups:
            b1, b2 = g["betas"]
            lr, wd, eps = g["lr"], g["weight_decay"], g["eps"]
            for _ in g["params"]:
                t = steps[i]
                rows.append((1.0 - lr * wd, b1, b2, eps, lr / (1 - b1**t),
                             math.sqrt(1 - b2**t)))
                i += 1
        return np.asarray(rows, dtype=np.float64)

    # ---- the body: what runs eagerly and what is captured -----------------------------------
    def _body(self, batch, status, tables=None):
        """Forward, backward, the status, clipping and AdamW on the current stream; with
        ``tables`` (a capture) their table is the persistent one, else a fresh one."""
        cp = cupy()
        params = self._params()
        loss = self.loss_fn(self.model, batch)
        loss.backward()
        status[0:1] = loss._data.reshape(1)
        grads = [p._grad for p in params]
        if any(g is None for g in grads):
            raise _NotCapturable("a parameter got no gradient in the step")
        if any(g.dtype != params[0]._data.dtype or not g.flags.c_contiguous for g in grads):
            raise _NotCapturable("a gradient is not contiguous of the parameters' type")
        if tables is None:
            tables = _Tables(cp, params, grads, self.optimizer)
            tables.write_doubles(self._doubles([self.optimizer.state[p]["step"] + 1
                                                for p in params]))
        else:
            tables.set_pointers(grads)
        tables.upload()
        _launch_update(cp, tables, status, self.clip, params[0]._data.dtype)
        self.optimizer.zero_grad()
        return tables

    def _capture(self, key, leaves, rebuild):
        cp = cupy()
        from skiff.kernels.train.core import random as train_random

        params = self._params()
        if any(p not in self.optimizer.state for p in params):
            self.reason = "a parameter got no gradient in the first step"
            self.log(f"training step not captured: {self.reason}")
            return None
        dev = cp.cuda.Device()
        dev.synchronize()
        snap = _snapshot(cp, params, self.optimizer)
        pool = cp.cuda.MemoryPool()
        stream = cp.cuda.Stream(non_blocking=True)
        inputs = [cp.empty_like(a) for a in leaves]
        status = cp.zeros(2, dtype=cp.float64)
        batch = rebuild([Tensor._make(a, False, None, 0) for a in inputs])
        rng = _rng_state(train_random)
        # 1. the step eagerly, on the capture's stream and pool (primes both)
        with cp.cuda.using_allocator(pool.malloc), stream, own_cublas():
            for dst, src in zip(inputs, leaves):
                dst[...] = src
            stream.synchronize()
            try:
                warm_tables = self._body(batch, status)
            except _NotCapturable as exc:
                return self._give_up(str(exc), snap, None, stream)
            eager_status = status.get(stream=stream)
            stream.synchronize()
            del warm_tables  # its pinned table was read by the finished copy
        after = _snapshot(cp, params, self.optimizer)
        if _rng_state(train_random) != rng:
            return self._give_up("the step draws random numbers (dropout)", snap, after,
                                 stream, eager_status)
        _restore(params, self.optimizer, snap)
        dev.synchronize()
        # 2. the capture
        tables = _Tables(cp, params, [p._data for p in params], self.optimizer, grads_later=True)
        mode = cp.cuda.runtime.streamCaptureModeThreadLocal
        # no garbage collection while capturing: a cupy object freed then (an old graph, an
        # event) calls the runtime, which a thread-local capture refuses, and it is invalidated
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            with cp.cuda.using_allocator(pool.malloc), stream, own_cublas():
                stream.begin_capture(mode=mode)
                try:
                    self._body(batch, status, tables=tables)
                finally:
                    graph = stream.end_capture()
        except Exception as exc:  # noqa: BLE001 - any failure: this run stays eager
            self.optimizer.zero_grad()
            self.failure = traceback.format_exc()
            return self._give_up(f"the step could not be captured ({type(exc).__name__}: "
                                 f"{str(exc)[:120]}{_where(exc)})", snap, after, stream,
                                 eager_status)
        finally:
            if was_enabled:
                gc.enable()
        captured = _Captured(graph, inputs, status, tables, pool, params, self.optimizer)
        # 3. the first replay against the eager step, from the same weights
        for dst, src in zip(inputs, leaves):
            dst[...] = src
        steps = self._advance()
        tables.write_doubles(self._doubles(steps))
        graph.launch()
        got = status.get()
        problem = _compare(cp, got, eager_status, params, self.optimizer, after)
        if problem:
            for p in params:
                self.optimizer.state[p]["step"] -= 1
            return self._give_up(f"the captured step differed from the eager one ({problem})",
                                 snap, after, stream, eager_status)
        self._graphs[key] = captured
        cp.get_default_memory_pool().free_all_blocks()  # the eager steps' cached blocks
        self.log(f"training step captured as a CUDA graph ({tables.n} tensors)")
        loss, sumsq = float(got[0]), float(got[1])
        self._settle(loss, sumsq)
        self.replays += 1
        return loss, sumsq

    def _give_up(self, reason, snap, after, stream, eager_status=None):
        """This run steps eagerly from now on; the step just run eagerly (``after``) counts."""
        cupy().cuda.Device().synchronize()
        self.optimizer.zero_grad()
        self.reason = reason
        self.log(f"training step not captured: {reason}")
        if after is None:
            _restore(self._params(), self.optimizer, snap)
            return None
        _restore(self._params(), self.optimizer, after)
        self._advance()
        loss, sumsq = float(eager_status[0]), float(eager_status[1])
        self._settle(loss, sumsq)
        return loss, sumsq


def update_reference(params, grads, exp_avg, exp_avg_sq, doubles, loss, clip=None):
    """The plain-``xp`` twin of the captured update (``_launch_update``: sum of squares,
    ``clip_many``, ``adamw_guarded``), in place on the arrays; ``doubles`` as
    :meth:`StepGraph._doubles` writes them. Returns the status ``(loss, sum of squares)``."""
    sumsq = float(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads))
    if clip is not None and math.isfinite(sumsq):
        coef = clip / (math.sqrt(sumsq) + _EPS)
        if coef < 1.0:
            for g in grads:
                g *= g.dtype.type(coef)
    if not (math.isfinite(loss) and math.isfinite(sumsq)):
        return loss, sumsq
    for p, g, m, v, (decay, b1, b2, eps, step_size, bc2_sqrt) in zip(
            params, grads, exp_avg, exp_avg_sq, doubles):
        g64 = g.astype(np.float64)
        m64 = b1 * m.astype(np.float64) + (1.0 - b1) * g64
        v64 = b2 * v.astype(np.float64) + (1.0 - b2) * g64 * g64
        m[...] = m64
        v[...] = v64
        p[...] = p.astype(np.float64) * decay - step_size * m64 / (np.sqrt(v64) / bc2_sqrt + eps)
    return loss, sumsq


class _NotCapturable(Exception):
    pass


class _Tables:
    """The multi-tensor kernels' two tables (fused.cu) in pinned host memory and on the device:
    ``sq`` (offsets, gradient pointers) for the sum of squares and clipping, ``ad`` (offsets,
    p/g/m/v pointers, six doubles per tensor) for AdamW. ``upload`` copies host to device on
    the current stream: inside a capture that copy is part of the graph, so the doubles written
    before a replay are the ones it uses."""

    def __init__(self, cp, params, grads, optimizer, grads_later=False):
        import cupyx

        self.n = n = len(params)
        sizes = [p._data.size for p in params]
        offsets = np.zeros(n + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(sizes)
        self.total = int(offsets[-1])
        self.len_sq, self.len_ad = 2 * n + 1, 5 * n + 1 + 6 * n
        self.host = cupyx.empty_pinned(self.len_sq + self.len_ad, dtype=np.int64)
        self.host[:] = 0
        self.host[:n + 1] = offsets
        self.host[self.len_sq:self.len_sq + n + 1] = offsets
        self._params, self._optimizer = params, optimizer
        if not grads_later:
            self.set_pointers(grads)
        self.dev = cp.empty(self.host.size, dtype=cp.int64)
        self.sq, self.ad = self.dev[:self.len_sq], self.dev[self.len_sq:]

    def set_pointers(self, grads):
        n = self.n
        st = self._optimizer.state
        ptrs = np.array([[p._data.data.ptr, g.data.ptr, st[p]["exp_avg"].data.ptr,
                          st[p]["exp_avg_sq"].data.ptr] for p, g in zip(self._params, grads)],
                        dtype=np.uint64).view(np.int64)
        self.host[n + 1:2 * n + 1] = ptrs[:, 1]
        self.host[self.len_sq + n + 1:self.len_sq + 5 * n + 1] = ptrs.reshape(-1)

    def write_doubles(self, doubles: np.ndarray) -> None:
        start = self.len_sq + 5 * self.n + 1
        self.host[start:start + 6 * self.n] = doubles.reshape(-1).view(np.int64)

    def upload(self) -> None:
        # the runtime's own call: cupy's copy_from_host_async refuses a capturing stream,
        # where this copy from pinned memory is what the graph must record
        rt = cupy().cuda.runtime
        rt.memcpyAsync(self.dev.data.ptr, self.host.ctypes.data, self.host.nbytes,
                       rt.memcpyHostToDevice, cupy().cuda.get_current_stream().ptr)


def _launch_update(cp, tables, status, clip, dtype):
    from .nn import fused_gpu

    sfx = fused_gpu._SUFFIX[np.dtype(dtype)]
    mod = fused_gpu.module()
    grid, n = fused_gpu._grid(tables.total), np.int32(tables.n)
    status[1:2].fill(0)
    mod.get_function(f"sumsq_many_{sfx}")(grid, (256,), (tables.sq, n, status[1:]))
    if clip is not None:
        mod.get_function(f"clip_many_{sfx}")(
            grid, (256,), (tables.sq, n, status, np.float64(clip), np.float64(_EPS)))
    mod.get_function(f"adamw_guarded_{sfx}")(grid, (256,), (tables.ad, n, status))


class _Captured:
    def __init__(self, graph, inputs, status, tables, pool, params, optimizer):
        self.exec, self.inputs, self.status, self.tables, self.pool = (
            graph, inputs, status, tables, pool)
        self.ptrs = _pointers(params, optimizer)

    def still_valid(self, params) -> bool:
        return _pointers(params, self.tables._optimizer) == self.ptrs


def _pointers(params, optimizer):
    st = optimizer.state
    return tuple((p._data.data.ptr, st[p]["exp_avg"].data.ptr, st[p]["exp_avg_sq"].data.ptr)
                 if p in st else (p._data.data.ptr,) for p in params)


def _where(exc) -> str:
    """`` at file:line`` of the innermost skiff frame of ``exc`` ('' when none)."""
    here = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_filename
        if "skiff" in Path(name).parts and not name.endswith("graph.py"):
            here = f" at {Path(name).name}:{line} {frame.f_code.co_name}"
    return here or ""


def _flatten(batch):
    """(the batch's arrays, a function rebuilding the batch from Tensors) or (None, None)."""
    def arrays(xs):
        items = [x._data if isinstance(x, Tensor) else x for x in xs]
        ok = all(type(a).__module__.startswith("cupy") and hasattr(a, "shape") for a in items)
        return items if ok else None

    if isinstance(batch, (tuple, list)):
        kind = type(batch)
        return arrays(batch), lambda ts: kind(ts)
    if isinstance(batch, dict):
        keys = list(batch)
        return arrays(batch[k] for k in keys), lambda ts: dict(zip(keys, ts))
    if isinstance(batch, Tensor):
        return arrays([batch]), lambda ts: ts[0]
    return None, None


def _snapshot(cp, params, optimizer):
    st = optimizer.state
    return [(p._data.copy(), st[p]["exp_avg"].copy(), st[p]["exp_avg_sq"].copy()) for p in params]


def _restore(params, optimizer, snap):
    st = optimizer.state
    for p, (d, m, v) in zip(params, snap):
        p._data[...] = d
        st[p]["exp_avg"][...] = m
        st[p]["exp_avg_sq"][...] = v


def _rng_state(train_random):
    return repr(train_random.get_state())


def _compare(cp, got, want, params, optimizer, after) -> str | None:
    """Why the replay's result differs from the eager step's (None: the same within rounding;
    sums of squares and scattered gradients add in another order, nothing more)."""
    if not np.allclose(got, want, rtol=1e-4, atol=0, equal_nan=True):
        return f"loss, sum of squares {got.tolist()} against {want.tolist()}"
    lr = max(g["lr"] for g in optimizer.param_groups)
    st = optimizer.state
    for i, (p, (d, m, v)) in enumerate(zip(params, after)):
        for name, x, y in (("weight", p._data, d), ("exp_avg", st[p]["exp_avg"], m),
                           ("exp_avg_sq", st[p]["exp_avg_sq"], v)):
            diff = float(cp.linalg.norm((x - y).ravel().astype(cp.float64)))
            scale = float(cp.linalg.norm(y.ravel().astype(cp.float64)))
            if not diff <= 1e-4 * scale + 1e-3 * lr * math.sqrt(max(x.size, 1)):
                return f"tensor {i}'s {name} off by {diff:.3g} (norm {scale:.3g})"
    return None
