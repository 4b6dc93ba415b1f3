"""More of :mod:`.vmap_r30`'s batching rules: ``nn.functional``'s activations (elementwise:
the physical tensor as it is), the layers that take their input's first axis as a batch of
independent rows (convolutions and pools with an unbatched weight: the vmapped batch merged
into that axis), and the class-index losses whose targets are batched (``cross_entropy``,
``nll_loss``: per element, then each sample's mean or sum)."""

from __future__ import annotations

import numpy as np

from .tensor import Tensor


def _merged_rows(cls, level, inputs, kwargs):
    """An op over (N, ...) rows with its other inputs unbatched: the vmapped batch joins N."""
    from .vmap_tensor_r30 import BatchedTensor, is_batched

    x = inputs[0]
    if not is_batched(x, level) or x.ndim < 2 or any(is_batched(v, level) for v in inputs[1:]):
        return NotImplemented
    p = x._phys
    b, n = p.shape[0], p.shape[1]
    out = cls.apply(p.reshape((b * n,) + tuple(p.shape[2:])), *inputs[1:], **kwargs)
    return BatchedTensor(out.reshape((b, n) + tuple(out.shape[1:])), level)


def _conv2d(cls, level, inputs, kwargs):
    """A convolution: with an unbatched weight the batch joins the images; with a weight per
    sample (ensembles, per-sample gradients) one im2col of every image (``F.unfold``) and a
    batched matmul by each sample's weight, instead of one convolution per sample."""
    from .nn.fold import unfold
    from .vmap_tensor_r30 import BatchedTensor, is_batched

    x, w, b = inputs
    if not is_batched(w, level) and not is_batched(b, level):
        return _merged_rows(cls, level, inputs, kwargs)
    if x.ndim != 4:
        return NotImplemented
    n = _size_of(level)
    xp, wp = _phys_of(x, level, n), _phys_of(w, level, n)
    (sh, sw), (ph, pw) = kwargs.get("stride", (1, 1)), kwargs.get("padding", (0, 0))
    m, c, h, wd = (int(v) for v in x.shape)
    o, _, kh, kw = (int(v) for v in w.shape)
    cols = unfold(xp.reshape(n * m, c, h, wd), (kh, kw), 1, (ph, pw), (sh, sw))
    k = c * kh * kw
    out = wp.reshape(n, 1, o, k) @ cols.reshape(n, m, k, cols.shape[-1])
    if b is not None:
        out = out + _phys_of(b, level, n).reshape(n, 1, o, 1)
    ho, wo = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
    return BatchedTensor(out.reshape(n, m, o, ho, wo), level)


def _depthwise_conv2d(cls, level, inputs, kwargs):
    """A depthwise convolution (``groups`` = input channels, a channel multiplier ``k``): with
    an unbatched weight the batch joins the images; with a weight per sample one im2col of
    every image and a per-channel product with each sample's weight, summed over the window."""
    from .nn.fold import unfold
    from .vmap_tensor_r30 import BatchedTensor, is_batched

    x, w, b = inputs
    if not is_batched(w, level) and not is_batched(b, level):
        return _merged_rows(cls, level, inputs, kwargs)
    if x.ndim != 4:
        return NotImplemented
    n = _size_of(level)
    xp, wp = _phys_of(x, level, n), _phys_of(w, level, n)
    (sh, sw), (ph, pw) = kwargs.get("stride", (1, 1)), kwargs.get("padding", (0, 0))
    m, c, h, wd = (int(v) for v in x.shape)
    o, _, kh, kw = (int(v) for v in w.shape)
    k = o // c
    ho, wo = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
    cols = unfold(xp.reshape(n * m, c, h, wd), (kh, kw), 1, (ph, pw), (sh, sw))
    cols = cols.reshape(n, m, c, 1, kh * kw, ho * wo)
    out = (cols * wp.reshape(n, 1, c, k, kh * kw, 1)).sum(axis=4)  # (n, m, c, k, L)
    out = out.reshape(n, m, o, ho * wo)
    if b is not None:
        out = out + _phys_of(b, level, n).reshape(n, 1, o, 1)
    return BatchedTensor(out.reshape(n, m, o, ho, wo), level)


def _conv_nd(cls, level, inputs, kwargs):
    """``conv3d``'s node (``ConvNdFn``: input, weight; groups): with an unbatched weight the
    batch joins the images; with a weight per sample (per-sample gradients) the samples
    become groups, ``(M, n C, ...)`` by ``(n O, C / g, ...)`` with ``n g`` groups, one
    convolution for all (round 34: it looped per sample)."""
    from .vmap_tensor_r30 import BatchedTensor, is_batched

    x, w = inputs
    if not is_batched(w, level):
        return _merged_rows(cls, level, inputs, kwargs)
    nd = w.ndim - 2
    if x.ndim != nd + 2:
        return NotImplemented
    n = _size_of(level)
    xp, wp = _phys_of(x, level, n), _phys_of(w, level, n)
    m, c = int(x.shape[0]), int(x.shape[1])
    o = int(w.shape[0])
    sp = tuple(int(v) for v in x.shape[2:])
    xs = xp.transpose((1, 0) + tuple(range(2, nd + 3))).reshape((m, n * c) + sp)
    ws = wp.reshape((n * o,) + tuple(int(v) for v in w.shape[1:]))
    kw = dict(kwargs)
    kw["groups"] = n * int(kwargs.get("groups", 1))
    out = cls.apply(xs, ws, **kw)  # (M, n O, ...)
    osp = tuple(int(v) for v in out.shape[2:])
    out = out.reshape((m, n, o) + osp).transpose((1, 0) + tuple(range(2, nd + 3)))
    return BatchedTensor(out, level)


def _einsum(cls, level, inputs, kwargs):
    """einsum: a letter the equation does not use names the batch of each batched operand
    and of the output (the unbatched operands' gradients sum over it)."""
    import string

    from .vmap_tensor_r30 import BatchedTensor, is_batched

    ins, out = list(kwargs["ins"]), kwargs["out"]
    used = set("".join(ins) + out)
    spare = next((c for c in string.ascii_letters if c not in used), None)
    if spare is None:
        return NotImplemented
    arrays = []
    for i, x in enumerate(inputs):
        if is_batched(x, level):
            arrays.append(x._phys)
            ins[i] = spare + ins[i]
        else:
            arrays.append(x)
    return BatchedTensor(cls.apply(*arrays, ins=ins, out=spare + out), level)


def _attention(cls, level, inputs, kwargs):
    """scaled dot-product attention: q, k and v on the physical batch (an unbatched one
    repeated along it); the mask as it is (it broadcasts over the leading axes)."""
    from .vmap_tensor_r30 import BatchedTensor

    if len(inputs) != 3:
        return NotImplemented
    n = _size_of(level)
    q, k, v = (_phys_of(x, level, n) for x in inputs)
    return BatchedTensor(cls.apply(q, k, v, **kwargs), level)


def _batch_norm(cls, level, inputs, kwargs):
    """batch norm with running statistics in eval mode: per channel, so the batch joins the
    rows; in training the statistics are each sample's own batch's (the per-op loop)."""
    from .vmap_tensor_r30 import BatchedTensor, is_batched

    mean = inputs[3] if len(inputs) > 3 else kwargs.get("mean")
    x, w, b = inputs[:3]
    if kwargs.get("training", True) or mean is None or any(
            is_batched(v, level) for v in inputs[3:]) or x.ndim < 2:
        return NotImplemented
    if not (is_batched(w, level) or is_batched(b, level)):
        return _merged_rows(cls, level, inputs, kwargs)
    n = _size_of(level)  # a scale and shift per sample: normalised first, then applied
    y = _merged_rows(cls, level, [BatchedTensor(_phys_of(x, level, n), level), None, None,
                                  *inputs[3:]], kwargs)
    shape = (int(x.shape[1]),) + (1,) * (x.ndim - 2)
    y = y if w is None else y * w.reshape(shape)
    return y if b is None else y + b.reshape(shape)


def _size_of(level):
    from .vmap_tensor_r30 import _size_at

    return _size_at(level)


def class_loss(fn, input, target, weight, ignore_index, reduction, **kw):  # noqa: A002
    """``fn`` (``cross_entropy`` or ``nll_loss``) inside a batched ``vmap`` call where its
    input or targets are batched: per element over the whole batch (``reduction="none"``,
    torch's class weights included), then each sample's sum, or its mean over the weights of
    its targets that are not ``ignore_index`` (torch's mean)."""
    from .vmap_tensor_r30 import BatchedTensor, NotBatchable, current_level, is_batched

    level, n = current_level()
    if kw.get("label_smoothing") and weight is not None:
        raise NotBatchable("label smoothing with class weights")
    if isinstance(weight, BatchedTensor) or not (is_batched(input, level)
                                                 or is_batched(target, level)):
        raise NotBatchable("a class loss batched at an outer level")
    if is_batched(input, level):
        x = input._phys
    else:
        x = input.reshape((1,) + tuple(input.shape)).expand((n,) + tuple(input.shape))
    if is_batched(target, level):
        t = target._phys._data
    else:
        t = target._data if isinstance(target, Tensor) else np.asarray(target)
        t = np.broadcast_to(t, (n,) + tuple(t.shape))
    lx = input.ndim
    if lx >= 2:  # (N, C, ...) per sample: the batch joins N
        x = x.reshape((n * x.shape[1],) + tuple(x.shape[2:]))
        t = t.reshape((n * t.shape[1],) + tuple(t.shape[2:]))
    per = fn(x, t, weight, ignore_index=ignore_index, reduction="none", **kw)
    per = per.reshape((n, -1))
    if reduction == "none":
        return BatchedTensor(per.reshape((n,) + tuple(target.shape)), level)
    total = per.sum(axis=1)
    if reduction == "sum":
        return BatchedTensor(total, level)
    tt = np.asarray(t).reshape(n, -1)
    valid = tt != ignore_index
    w = valid.astype(np.float64)
    if weight is not None:
        wc = np.asarray(weight._data if isinstance(weight, Tensor) else weight, np.float64)
        w = w * wc[np.where(valid, tt, 0)]
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = (1.0 / w.sum(axis=1)).astype(total.dtype)
    return BatchedTensor(total * Tensor(inv, dtype=total.dtype), level)


# ---- index-valued ops on batched tensors (called from tensor_more / extra) -------------------

def _phys_of(x, level, n):
    """A tensor's physical form at ``level``: its own, or repeated along the batch."""
    from .vmap_tensor_r30 import NotBatchable, is_batched

    if is_batched(x, level):
        p = x._phys
        if getattr(p, "_batched", False):
            raise NotBatchable("a tensor batched at two levels")
        return p
    if getattr(x, "_batched", False):
        raise NotBatchable("a tensor batched at an outer level")
    return x.reshape((1,) + tuple(x.shape)).expand((n,) + tuple(x.shape))


def _raw_phys(x, level, n):
    """An index's physical array at ``level`` (a tensor's, a list's or an array's)."""
    from .vmap_tensor_r30 import is_batched

    if is_batched(x, level):
        return _phys_of(x, level, n)._data
    a = x._data if isinstance(x, Tensor) else np.asarray(x)
    return np.broadcast_to(a, (n,) + tuple(a.shape))


def gather(x, dim, index, node):
    """torch's ``gather`` where ``x`` or ``index`` is batched: ``node`` (ops_shape.Gather) on
    the physical tensors, the axis one further."""
    from .vmap_tensor_r30 import BatchedTensor, current_level

    level, n = current_level()
    idx = _raw_phys(index, level, n)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"gather needs an integer index, got dtype {idx.dtype}")
    ax = int(dim) % max(x.ndim, 1) + 1
    return BatchedTensor(node.apply(_phys_of(x, level, n), index=idx, axis=ax), level)


def sort(x, dim, descending, k, node):
    """``sort``/``topk`` (the first ``k`` along ``dim``; all for None) of a batched ``x``:
    ``(values, indices)``, stable as torch's."""
    from .vmap_tensor_r30 import BatchedTensor, current_level

    level, n = current_level()
    p = _phys_of(x, level, n)
    ax = int(dim) % max(x.ndim, 1) + 1
    a = p._data
    if descending:
        a = -(a.astype(np.int64) if a.dtype.kind in "bu" else a)
    idx = p.xp.argsort(a, axis=ax, kind="stable")
    if k is not None:
        idx = idx[(slice(None),) * ax + (slice(0, int(k)),)]
    values = BatchedTensor(node.apply(p, index=idx, axis=ax), level)
    return values, BatchedTensor(Tensor._make(idx, False, None, 0), level)


def one_hot(target, num_classes):
    """``one_hot`` of batched class ids (``num_classes`` given: the count may not depend on
    a sample's values)."""
    from .vmap_tensor_r30 import BatchedTensor, NotBatchable, current_level

    if num_classes < 0:
        raise NotBatchable("one_hot without num_classes reads the ids")
    level, n = current_level()
    t = _raw_phys(target, level, n)
    if t.dtype.kind not in "iu":
        raise TypeError(f"one_hot needs integer class ids, got dtype {t.dtype}")
    if t.size and (int(t.min()) < 0 or int(t.max()) >= num_classes):
        raise IndexError(f"one_hot: class values must be in [0, {num_classes})")
    out = (t[..., None] == np.arange(int(num_classes))).astype(np.int64)
    return BatchedTensor(Tensor._make(out, False, None, 0), level)


def embedding(idx, weight, padding_idx, node):
    """``embedding`` where the ids or the table are batched (per-sample gradients of a text
    model: the table is a per-sample stand-in): rows picked on the physical tensors, the
    padding row kept out of the gradient as torch's."""
    from .tensor import where
    from .vmap_tensor_r30 import BatchedTensor, current_level, is_batched

    level, n = current_level()
    i = _raw_phys(idx, level, n)
    if i.dtype.kind not in "iu":
        raise TypeError(f"embedding indices must be integers, got dtype {i.dtype}")
    rows = int(weight.shape[0])
    if i.size and (int(i.min()) < 0 or int(i.max()) >= rows):
        raise IndexError(f"embedding: index out of range [0, {rows})")
    if is_batched(weight, level):
        w = _phys_of(weight, level, n)
        out = w[(np.arange(n).reshape((n,) + (1,) * (i.ndim - 1)), i)]
    else:
        out = node.apply(weight, np.ascontiguousarray(i))
    if padding_idx is not None:
        keep = (i != int(padding_idx) % rows)[..., None]
        out = where(keep, out, out.detach())
    return BatchedTensor(out, level)



# ---- scatters (round 31) -------------------------------------------------------------------

def _scatter_reduce(cls, level, inputs, kwargs):
    """``scatter``/``scatter_add``/``scatter_reduce`` (ops_scatter.ScatterReduceFn) with the
    target or the source batched and an unbatched index: the index repeated along the batch,
    the axis one further (a GNN's message sums per sample)."""
    from .vmap_tensor_r30 import BatchedTensor, current_level

    _, n = current_level()
    x, src = inputs
    kw = dict(kwargs)
    idx = kw["index"]
    xp = np if isinstance(idx, np.ndarray) else x.xp
    kw["index"] = xp.broadcast_to(idx, (n,) + tuple(idx.shape))
    kw["dim"] = int(kw.get("dim", 0)) + 1
    return BatchedTensor(cls.apply(_phys_of(x, level, n), _phys_of(src, level, n), **kw), level)


def _index_add(cls, level, inputs, kwargs):
    """``index_add`` (tensor_math_more._IndexAdd): the same index on every sample's axis."""
    from .vmap_tensor_r30 import BatchedTensor, current_level

    _, n = current_level()
    x, src = inputs
    kw = dict(kwargs)
    kw["axis"] = int(kw.get("axis", 0)) + 1
    return BatchedTensor(cls.apply(_phys_of(x, level, n), _phys_of(src, level, n), **kw), level)
