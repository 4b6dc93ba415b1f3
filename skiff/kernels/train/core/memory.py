"""What a training step holds in memory: an accounting built on what autograd really keeps.

:func:`measure_saved_bytes` runs a forward and adds up the arrays its graph saved for backward
(each underlying buffer once; parameters excluded, they are counted as parameters).
:func:`estimate_step_memory` probes the model's forward at batch size 1, scales the saved bytes
by the batch size and the dtype, and adds parameters, gradients and optimizer state; the
planner and the trainer use it to choose a batch size and a parallel layout.
"""

from __future__ import annotations

import numpy as np

from .autograd import graph_nodes
from .tensor import Tensor, _as_dtype, enable_grad

__all__ = ["measure_saved_bytes", "saved_bytes_of", "estimate_step_memory", "OPTIMIZER_SLOTS"]

# optimizer state arrays per parameter
OPTIMIZER_SLOTS = {"adamw": 2, "adam": 2, "sgd": 0, "sgd-momentum": 1, "none": 0}


def _root(a):
    while getattr(a, "base", None) is not None and hasattr(a.base, "nbytes"):
        a = a.base
    return a


def _breakdown(outputs) -> tuple[int, int]:
    """(float bytes, other bytes) of the unique buffers saved by the graph behind outputs."""
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    nodes, leaves = set(), set()
    for o in outs:
        if isinstance(o, Tensor):
            nodes.update(graph_nodes(o))
    for n in nodes:
        for p in n._parents:
            if isinstance(p, Tensor):
                leaves.add(id(_root(p._data)))
    seen = set()
    fbytes = obytes = 0
    for n in nodes:
        for a in n.saved or ():
            if a is None or not hasattr(a, "nbytes") or not hasattr(a, "dtype"):
                continue
            r = _root(a)
            if id(r) in seen or id(r) in leaves:
                continue
            seen.add(id(r))
            if r.dtype.kind == "f":
                fbytes += int(r.nbytes)
            else:
                obytes += int(r.nbytes)
    return fbytes, obytes


def saved_bytes_of(outputs) -> int:
    """Bytes the graph behind ``outputs`` keeps for backward."""
    f, o = _breakdown(outputs)
    return f + o


def measure_saved_bytes(fn) -> int:
    """Run ``fn()`` (which returns the tensor(s) backward would start from, e.g. the loss)
    with graph recording on and return the bytes retained for backward.

    >>> import numpy as np, skiff
    >>> w = skiff.tensor(np.ones((4, 4)), requires_grad=True)
    >>> x = skiff.tensor(np.ones((8, 4)))
    >>> measure_saved_bytes(lambda: (x @ w).tanh().sum())  # x (128 B) + tanh output (128 B)
    256
    """
    with enable_grad():
        out = fn()
    return saved_bytes_of(out)


def _first_embedding(model):
    from .nn import Embedding

    for m in model.modules():
        if isinstance(m, Embedding):
            return m
    return None


def _probe_input(model, shape, generator):
    emb = _first_embedding(model)
    if emb is not None:
        return Tensor(generator.integers(0, emb.num_embeddings, size=shape))
    p = next(iter(model.parameters()), None)
    dt = p.dtype if p is not None else np.float32
    x = Tensor(generator.standard_normal(shape), dtype=dt)
    return x.to(p.device) if p is not None else x


def _default_step(model, x):
    out = model(x)
    if isinstance(out, (tuple, list)):
        out = out[0]
    return out.sum() if out.dtype.kind == "f" else out


def _probe(model, x, step):
    """Saved bytes (float, other) and the peak bytes allocated by one forward + backward.

    The peak (saved activations, gradients in flight, logits, temporaries) is read from
    ``tracemalloc`` (numpy reports its buffers to it); 0 when the model lives on a GPU.
    Parameter gradients are stashed (zeros stand in, so their allocation is not part of the
    peak) and restored: the probe leaves the model as it found it.
    """
    import tracemalloc

    from .nn.fused import warm_up

    warm_up()  # a kernel compiled inside the trace would count as step memory
    params = list(model.parameters())
    stash = [p._grad for p in params]
    for p in params:  # gradients already in place: the peak then scales with the batch alone
        p._grad = p.xp.zeros_like(p._data)
    on_host = all(type(p._data) is np.ndarray for p in params)
    was_tracing = tracemalloc.is_tracing()
    if on_host and not was_tracing:
        tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0] if on_host else 0
        if on_host:
            tracemalloc.reset_peak()
        with enable_grad():
            loss = step(model, x)
        fbytes, obytes = _breakdown(loss)
        loss.backward()
        del loss
        peak = tracemalloc.get_traced_memory()[1] - base if on_host else 0
    finally:
        if on_host and not was_tracing:
            tracemalloc.stop()
        for p, g in zip(params, stash):
            p._grad = g
    return fbytes, obytes, peak


def estimate_step_memory(model, batch_shape, dtype="float32", optimizer="adamw",
                         step_fn=None, master_weights=False) -> dict:
    """Bytes one training step needs at its peak, by category.

    Parameters
    ----------
    model : nn.Module
    batch_shape : tuple
        Shape of one input batch (``(B, T)`` tokens for a language model, ``(B, features)``
        or ``(B, C, H, W)`` otherwise); the first axis is the batch.
    dtype : str
        Storage dtype of parameters and activations (``float32``, ``float16``, ...).
    optimizer : str
        One of ``adamw``, ``adam``, ``sgd``, ``sgd-momentum``, ``none`` (optimizer state is
        float32).
    step_fn : callable, optional
        ``step_fn(model, x) -> loss``; default ``model(x).sum()``.
    master_weights : bool
        Add a float32 master copy of the parameters (mixed precision).

    Returns
    -------
    dict with ``parameters``, ``gradients``, ``optimizer``, ``activations`` (saved for
    backward), ``workspace`` (transient peak of forward + backward beyond those) and ``total``,
    in bytes. Activations and workspace come from probes of the real forward and backward at
    batch sizes 1 and 2, extrapolated linearly in the batch and scaled by the dtype's width.
    """
    key = str(optimizer).lower()
    if key not in OPTIMIZER_SLOTS:
        valid = ", ".join(OPTIMIZER_SLOTS)
        raise ValueError(f"unknown optimizer {optimizer!r}: choose from {valid}")
    shape = tuple(int(s) for s in batch_shape)
    if not shape or shape[0] <= 0:
        raise ValueError(f"batch_shape must start with a positive batch size, got {batch_shape!r}")
    itemsize = _as_dtype(dtype).itemsize
    n_params = model.num_parameters()
    params = n_params * itemsize
    grads = n_params * itemsize
    opt = n_params * 4 * OPTIMIZER_SLOTS[key] + (n_params * 4 if master_weights else 0)
    probe_size = next(iter(model.parameters())).dtype.itemsize if n_params else 4
    step = step_fn or _default_step
    # two probes (batch 1 and 2): the peak's per-sample slope and its batch-independent part
    rng = np.random.default_rng(0)
    f1, o1, peak1 = _probe(model, _probe_input(model, (1,) + shape[1:], rng), step)
    _, _, peak2 = _probe(model, _probe_input(model, (2,) + shape[1:], rng), step)
    width = itemsize / probe_size
    b = shape[0]
    act = int(f1 * width + o1) * b
    slope = max(peak2 - peak1, 0)
    peak = (peak1 - slope) + slope * b
    work = max(0, int(peak * width) - act)
    total = params + grads + opt + act + work
    return {"parameters": params, "gradients": grads, "optimizer": opt, "activations": act,
            "workspace": work, "total": total}
