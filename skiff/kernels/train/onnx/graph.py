"""An ONNX graph as a skiff ``Module``: its weights become ``Parameter``s, its nodes run as
skiff autograd ops, so the graph can be trained and written back (:mod:`.export`).

>>> m = OnnxModule.load("rec.onnx")                    # doctest: +SKIP
>>> probs = m(skiff.tensor(batch))                     # (N, T, C), equal to onnxruntime
>>> m.export("rec-tuned.onnx")                          # doctest: +SKIP

How the graph is run: every value is either a ``Tensor`` (depends on the input or on a
weight) or a plain numpy array (constants and everything computed only from constants and
shapes: ``Shape``, ``Slice`` of a shape, ``Concat`` of sizes, ``Cast``). Numpy values are
folded on the spot, so dynamic-shape bookkeeping costs nothing in the autograd graph.

Which constants are trained: a float initializer (or ``Constant`` node) with more than one
element is a ``Parameter`` (conv and linear weights and biases, layer norm gains, batch norm
scale and shift); one-element floats (GELU's 1/sqrt(2), epsilons) stay constants; a batch
norm's running mean and variance are buffers and are used as they are (batch norm runs in
inference form, frozen statistics: the usual choice when fine-tuning on a few thousand
crops). ``OnnxModule.onnx_names`` maps each parameter back to its tensor in the file.

Operators: Identity, Constant, Add, Sub, Mul, Div, Pow, Sqrt, Erf, Exp, Relu, Sigmoid,
HardSigmoid, HardSwish, Clip, Softmax, MatMul, Gemm, Conv (groups, asymmetric and
``SAME_UPPER`` pads), BatchNormalization, MaxPool, AveragePool, GlobalAveragePool,
ReduceMean, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Slice, Shape, Cast,
Gather (constant indices, or token ids from the input: an embedding), LayerNormalization
(and QDQ graphs through :mod:`.qdq`); round 48: Tanh, LeakyRelu, IsNaN, Where, Gelu (opset
20, erf or tanh form), Cast of integer data to float, and Dropout (the identity in
``eval()``, random with the file's ratio in ``train()``: a torch model exported without
``.eval()`` keeps it). Anything else is refused at load time in one line naming each
operator and its node (from torch's exporter, the module path:
``LeakyRelu at /body/body.1/LeakyRelu``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..core.nn.functional import avg_pool2d, dropout, leaky_relu, max_pool2d, relu, softmax
from ..core.nn.module import Module, Parameter
from ..core.tensor import Tensor, cat, where
from . import ops
from .fakequant import fake_quant

__all__ = ["OnnxModule", "SUPPORTED_OPS", "UnsupportedOnnx"]


class UnsupportedOnnx(ValueError):
    """The graph uses an operator or an attribute this importer does not run."""


def _attrs(node) -> dict:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _is_tensor(v) -> bool:
    return isinstance(v, Tensor)


def _np(v):
    """A constant as numpy (raises for a Tensor: the value must be static here)."""
    if isinstance(v, Tensor):
        raise UnsupportedOnnx("a shape/axes input depends on the data; only constant shapes "
                              "are supported")
    return np.asarray(v)


class _Ctx:
    def __init__(self, module):
        self.module = module
        self.opset = module.opset


def _binary(fn_np, fn_t):
    def run(ctx, a, b, **_):
        if not _is_tensor(a) and not _is_tensor(b):
            return fn_np(np.asarray(a), np.asarray(b))
        return fn_t(a, b)
    return run


def _conv(ctx, x, w, b=None, *, kernel_shape=None, strides=(1, 1), pads=None, group=1,
          dilations=(1, 1), auto_pad="NOTSET", **_):
    if tuple(dilations) != (1, 1):
        raise UnsupportedOnnx(f"Conv with dilations {list(dilations)} is not supported")
    kh, kw = w.shape[-2:]
    pads = _pads(auto_pad, pads, (kh, kw), strides, x.shape[-2:])
    return ops.grouped_conv2d(x, w, b, stride=tuple(strides), pads=pads, groups=int(group))


def _pads(auto_pad, pads, kernel, strides, size):
    """ONNX pads (t, l, b, r) from ``pads`` or ``auto_pad``."""
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for k, s, n in zip(kernel, strides, size):
            total = max((-(-n // s) - 1) * s + k - n, 0)
            small, big = total // 2, total - total // 2
            out.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
        return (out[0][0], out[1][0], out[0][1], out[1][1])
    if auto_pad == "VALID" or pads is None:
        return (0, 0, 0, 0)
    if len(pads) != 4:
        raise UnsupportedOnnx(f"only 2-D pads are supported, got {list(pads)}")
    return tuple(int(p) for p in pads)


def _pool(kind):
    def run(ctx, x, *, kernel_shape, strides=None, pads=None, auto_pad="NOTSET", ceil_mode=0,
            count_include_pad=0, dilations=None, storage_order=0, **_):
        if ceil_mode:
            raise UnsupportedOnnx(f"{kind}Pool with ceil_mode=1 is not supported")
        strides = tuple(strides or kernel_shape)
        p = _pads(auto_pad, pads, kernel_shape, strides, x.shape[-2:])
        if any(p):
            if kind == "Average":
                raise UnsupportedOnnx("AveragePool with padding is not supported")
            x = ops.pad2d(x, p, value=-np.inf)
        fn = max_pool2d if kind == "Max" else avg_pool2d
        return fn(x, tuple(kernel_shape), tuple(strides))
    return run


def _batch_norm(ctx, x, scale, bias, mean, var, *, epsilon=1e-5, **_):
    # inference form with frozen statistics: y = x * k + (bias - mean * k)
    mean, var = (v._data if _is_tensor(v) else np.asarray(v) for v in (mean, var))
    k = scale * (1.0 / np.sqrt(var.astype(np.float64) + epsilon)).astype(var.dtype)
    shift = bias - k * mean
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return x * k.reshape(shape) + shift.reshape(shape)


def _reshape(ctx, x, shape, **_):
    shape = [int(s) for s in _np(shape)]
    shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    if _is_tensor(x):
        return x.reshape(tuple(shape))
    return np.asarray(x).reshape(shape)


def _transpose(ctx, x, *, perm=None, **_):
    perm = tuple(perm) if perm is not None else tuple(reversed(range(x.ndim)))
    return x.transpose(perm) if _is_tensor(x) else np.transpose(x, perm)


def _axes(ctx, axes_attr, axes_input):
    if axes_input is not None:
        return [int(a) for a in _np(axes_input).ravel()]
    return None if axes_attr is None else [int(a) for a in axes_attr]


def _squeeze(ctx, x, axes_in=None, *, axes=None, **_):
    ax = _axes(ctx, axes, axes_in)
    if _is_tensor(x):
        return x.squeeze(tuple(ax) if ax is not None else None)
    return np.squeeze(x, axis=tuple(ax) if ax is not None else None)


def _unsqueeze(ctx, x, axes_in=None, *, axes=None, **_):
    ax = sorted(a % (x.ndim + len(_axes(ctx, axes, axes_in)))
                for a in _axes(ctx, axes, axes_in))
    for a in ax:
        x = x.unsqueeze(a) if _is_tensor(x) else np.expand_dims(x, a)
    return x


def _concat(ctx, *xs, axis=0, **_):
    if any(_is_tensor(v) for v in xs):
        return cat([v if _is_tensor(v) else Tensor(np.asarray(v)) for v in xs], axis=axis)
    return np.concatenate([np.atleast_1d(np.asarray(v)) for v in xs], axis=axis)


def _slice(ctx, x, starts, ends, axes=None, steps=None, **_):
    starts, ends = _np(starts).ravel(), _np(ends).ravel()
    axes = _np(axes).ravel() if axes is not None else np.arange(len(starts))
    steps = _np(steps).ravel() if steps is not None else np.ones(len(starts), np.int64)
    index = [slice(None)] * x.ndim
    big = np.iinfo(np.int64).max // 2
    for s, e, a, st in zip(starts, ends, axes, steps):
        s, e = int(np.clip(s, -big, big)), int(np.clip(e, -big, big))
        index[int(a)] = slice(s, e, int(st))
    return x[tuple(index)]


def _shape(ctx, x, *, start=0, end=None, **_):
    return np.asarray(x.shape[start:end], np.int64)


def _cast(ctx, x, *, to, **_):
    from onnx import helper

    dtype = helper.tensor_dtype_to_np_dtype(to)
    if _is_tensor(x):
        if np.dtype(dtype).kind == "f":  # float graphs keep the module's float dtype;
            # integer data (uint8 pixels, round 48) becomes float32, as the file's Cast
            return x if x.dtype.kind == "f" else Tensor(x.numpy().astype(np.float32))
        raise UnsupportedOnnx(f"Cast of data to {np.dtype(dtype)} is not supported")
    return np.asarray(x).astype(dtype)


def _gather(ctx, x, idx, *, axis=0, **_):
    if _is_tensor(idx) and idx.dtype.kind in "iu" and not idx.requires_grad:
        idx = idx.numpy()  # token ids read from the input: an embedding lookup (round 48)
    idx = _np(idx)
    if idx.dtype.kind == "i":  # ONNX counts negative indices from the end
        idx = np.where(idx < 0, idx + x.shape[axis], idx)
    index = [slice(None)] * x.ndim
    index[axis] = idx if idx.ndim else int(idx)
    return x[tuple(index)] if _is_tensor(x) else np.asarray(x)[tuple(index)]


def _is_nan(ctx, x, **_):
    """``IsNaN`` of data: a boolean mask, a constant of this run (no gradient)."""
    return np.isnan(x.numpy() if _is_tensor(x) else np.asarray(x))


def _where(ctx, cond, a, b, **_):
    """``Where(cond, a, b)``: differentiable in the tensors among ``a`` and ``b``."""
    cond = cond.numpy() if _is_tensor(cond) else np.asarray(cond)
    if not _is_tensor(a) and not _is_tensor(b):
        return np.where(cond, a, b)
    return where(cond.astype(bool), a, b)


def _softmax(ctx, x, *, axis=None, **_):
    if axis is None:
        axis = -1 if ctx.opset >= 13 else 1
    axis %= x.ndim
    if ctx.opset >= 13 or axis == x.ndim - 1:
        return softmax(x, axis=axis)
    shape = x.shape
    flat = x.reshape(shape[:axis] + (-1,))
    return softmax(flat, axis=-1).reshape(shape)


def _reduce_mean(ctx, x, axes_in=None, *, axes=None, keepdims=1, **_):
    ax = _axes(ctx, axes, axes_in)
    ax = tuple(range(x.ndim)) if ax is None else tuple(a % x.ndim for a in ax)
    return x.mean(axis=ax, keepdims=bool(keepdims))


def _gemm(ctx, a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, **_):
    a = a.T if transA else a
    b = b.T if transB else b
    y = a @ b
    if alpha != 1.0:
        y = y * float(alpha)
    if c is not None:
        y = y + (c * float(beta) if beta != 1.0 else c)
    return y


def _clip(ctx, x, lo=None, hi=None, *, min=None, max=None, **_):
    lo = min if lo is None or (hasattr(lo, "size") and lo.size == 0) else _np(lo)
    hi = max if hi is None or (hasattr(hi, "size") and hi.size == 0) else _np(hi)
    return ops.clip(x, lo, hi)


def _layer_norm(ctx, x, scale, bias=None, *, axis=-1, epsilon=1e-5, **_):
    ax = tuple(range(axis % x.ndim, x.ndim))
    d = x - x.mean(axis=ax, keepdims=True)
    y = d / ((d * d).mean(axis=ax, keepdims=True) + float(epsilon)).sqrt() * scale
    return y if bias is None else y + bias


def _fake_quant(ctx, x, *, scale, zero_point, qmin, qmax, axis=None, **_):
    """``FakeQuant`` (made by :mod:`.qdq` from a QuantizeLinear/DequantizeLinear pair):
    scales and zero points are attributes, so they stay constants."""
    per = len(scale) > 1
    return fake_quant(x, np.asarray(scale, np.float32) if per else float(scale[0]),
                      np.asarray(zero_point) if per else int(zero_point[0]), int(qmin),
                      int(qmax), axis=int(axis) % x.ndim if per else None)


def _dropout(ctx, x, *rest, ratio=0.5, **_):
    """ONNX ``Dropout`` (ratio an input from opset 12 on, an attribute before): the identity
    unless the module trains; the file's ``training_mode`` input is not obeyed, since
    ``OnnxModule.eval()`` is how a user asks for inference here."""
    if rest and rest[0] is not None:
        ratio = float(_np(rest[0]))
    if not ctx.module.training or not _is_tensor(x) or float(ratio) == 0.0:
        return x
    return dropout(x, float(ratio), True)


def _gelu(ctx, x, *, approximate="none", **_):
    """ONNX ``Gelu`` (opset 20, what torch writes for ``nn.GELU`` there; also the fused
    erf form): ``approximate="tanh"`` is torch's ``GELU(approximate="tanh")``."""
    if approximate == "none":
        return ops.gelu_erf(x)
    if approximate != "tanh":
        raise UnsupportedOnnx(f"Gelu with approximate={approximate!r} is not supported")
    inner = (x + x * x * x * 0.044715) * float(np.sqrt(2.0 / np.pi))
    return x * 0.5 * (inner.tanh() + 1.0)


def _flatten(ctx, x, *, axis=1, **_):
    n = int(np.prod(x.shape[:axis]))
    return x.reshape((n, -1))


_OPS = {
    "Identity": lambda ctx, x, **_: x,
    "Add": _binary(np.add, lambda a, b: a + b),
    "Sub": _binary(np.subtract, lambda a, b: a - b),
    "Mul": _binary(np.multiply, lambda a, b: a * b),
    "Div": _binary(lambda a, b: a // b if a.dtype.kind in "iu" else a / b, lambda a, b: a / b),
    "Pow": lambda ctx, a, b, **_: a ** (float(_np(b)) if np.asarray(_np(b)).size == 1 else b),
    "Sqrt": lambda ctx, x, **_: x.sqrt(),
    "Exp": lambda ctx, x, **_: x.exp(),
    "Erf": lambda ctx, x, **_: ops.erf(x),
    "Relu": lambda ctx, x, **_: relu(x),
    "Sigmoid": lambda ctx, x, **_: x.sigmoid(),
    "Tanh": lambda ctx, x, **_: x.tanh(),
    "LeakyRelu": lambda ctx, x, alpha=0.01, **_: leaky_relu(x, float(alpha)),
    "Dropout": _dropout,
    "IsNaN": _is_nan,
    "Where": _where,
    "HardSigmoid": lambda ctx, x, alpha=0.2, beta=0.5, **_: ops.hard_sigmoid(x, alpha, beta),
    "HardSwish": lambda ctx, x, **_: ops.affine_hard_swish(x),
    "AffineHardSwish": lambda ctx, x, a, b, c, d, **_: ops.affine_hard_swish(x, a, b, c, d),
    "Gelu": _gelu,
    "Clip": _clip,
    "Softmax": _softmax,
    "MatMul": lambda ctx, a, b, **_: a @ b,
    "Linear": lambda ctx, a, w, b, **_: ops.linear(a, w, b),
    "Gemm": _gemm,
    "Conv": _conv,
    "BatchNormalization": _batch_norm,
    "MaxPool": _pool("Max"),
    "AveragePool": _pool("Average"),
    "GlobalAveragePool": lambda ctx, x, **_: x.mean(axis=(2, 3), keepdims=True),
    "ReduceMean": _reduce_mean,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Concat": _concat,
    "Slice": _slice,
    "Shape": _shape,
    "Cast": _cast,
    "Gather": _gather,
    "LayerNormalization": _layer_norm,
    "FakeQuant": _fake_quant,
}
# made by _fuse_activations (FakeQuant: by .qdq), not in ONNX files
_FUSED = ("AffineHardSwish", "Linear", "FakeQuant")  # Gelu: also a file's op (opset 20)
SUPPORTED_OPS = tuple(sorted(set(_OPS) - set(_FUSED)) + ["Constant"])
_BN_STATS = {3, 4}  # BatchNormalization inputs that are running statistics


def _safe(name: str, taken: set) -> str:
    base = re.sub(r"\W", "_", name).strip("_") or "w"
    if base[0].isdigit():
        base = "w_" + base
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out


def _fuse_activations(nodes: list, values: dict) -> list:
    """Elementwise chains written out by the exporter, run as one node each:

    * GELU with erf, ``x * (erf(x / sqrt 2) + 1) * 0.5`` (five nodes) -> ``GeluErfFn``;
    * hard swish ``s * clip(s + 3, 0, 6) / 6`` with PP-OCRv4's learnable affine scalars
      around it, ``c * hswish(a * x + b) + d`` (up to eight nodes) -> ``AffineHardSwish``.

    Only chains whose inner values have no other consumer are fused; the weights and the
    file do not change."""
    prod = {outs[0]: k for k, (_, _, outs, _) in enumerate(nodes)}
    uses = _consumers(nodes)

    def scalar(name):
        v = values.get(name)
        return float(np.asarray(v).reshape(())) if v is not None and np.size(v) == 1 and \
            np.asarray(v).dtype.kind == "f" else None

    def only(name):
        u = uses.get(name, [])
        return nodes[u[0]] if len(u) == 1 else (None, None, None, None)

    def other(ins, name):
        return ins[1] if ins[0] == name else ins[0]

    out, dead = list(nodes), set()
    for k, (op, ins, outs, _) in enumerate(nodes):
        if op == "Erf" and ins[0] in prod:  # GELU
            d = prod[ins[0]]
            dop, dins = nodes[d][0], nodes[d][1]
            if dop != "Div" or not np.isclose(scalar(dins[1]) or 0, np.sqrt(2.0)) or \
                    len(uses[ins[0]]) != 1:
                continue
            x = dins[0]
            a_op, a_ins, a_outs, _ = only(outs[0])
            if a_op != "Add" or scalar(other(a_ins, outs[0])) != 1.0:
                continue
            m_op, m_ins, m_outs, _ = only(a_outs[0])
            if m_op != "Mul" or other(m_ins, a_outs[0]) != x:
                continue
            h_op, h_ins, h_outs, _ = only(m_outs[0])
            if h_op != "Mul" or scalar(other(h_ins, m_outs[0])) != 0.5:
                continue
            ids = [d, k, prod[a_outs[0]], prod[m_outs[0]], prod[h_outs[0]]]
            dead |= set(ids[:-1])
            out[ids[-1]] = ("Gelu", [x], h_outs, {})
        elif op == "Clip" and ins[0] in prod and len(ins) == 3 and scalar(ins[1]) == 0.0 \
                and scalar(ins[2]) == 6.0:  # hard swish
            add3 = prod[ins[0]]
            s_name = nodes[add3][1][0] if scalar(nodes[add3][1][1]) == 3.0 else None
            if nodes[add3][0] != "Add" or s_name is None or len(uses[ins[0]]) != 1:
                continue
            m_op, m_ins, m_outs, _ = only(outs[0])
            if m_op != "Mul" or other(m_ins, outs[0]) != s_name:
                continue
            v_op, v_ins, v_outs, _ = only(m_outs[0])
            if v_op != "Div" or scalar(v_ins[1]) != 6.0:
                continue
            chain = [add3, k, prod[m_outs[0]], prod[v_outs[0]]]
            a, b, c, dd, x, last = 1.0, 0.0, 1.0, 0.0, s_name, v_outs[0]
            if s_name in prod and len(uses[s_name]) == 2:  # b: s = t + b, a: t = a * x
                sa = nodes[prod[s_name]]
                if sa[0] == "Add" and scalar(sa[1][1]) is not None:
                    t, b = sa[1][0], scalar(sa[1][1])
                    x = t
                    chain.insert(0, prod[s_name])
                    ta = nodes[prod[t]] if t in prod else None
                    if ta and ta[0] == "Mul" and len(uses[t]) == 1:
                        ka = [scalar(n) for n in ta[1]]
                        if ka[0] is not None or ka[1] is not None:
                            a = ka[0] if ka[0] is not None else ka[1]
                            x = ta[1][1] if ka[0] is not None else ta[1][0]
                            chain.insert(0, prod[t])
            c_op, c_ins, c_outs, _ = only(last)
            if c_op == "Mul" and scalar(other(c_ins, last)) is not None:
                c = scalar(other(c_ins, last))
                last = c_outs[0]
                chain.append(prod[last])
                d_op, d_ins, d_outs, _ = only(last)
                if d_op == "Add" and scalar(other(d_ins, last)) is not None:
                    dd = scalar(other(d_ins, last))
                    last = d_outs[0]
                    chain.append(prod[last])
            dead |= set(chain[:-1])
            out[chain[-1]] = ("AffineHardSwish", [x], [last], {"a": a, "b": b, "c": c, "d": dd})
    return [n for k, n in enumerate(out) if k not in dead]


def _consumers(nodes: list) -> dict:
    """value name -> the indices of the nodes that read it."""
    uses: dict = {}
    for k, (_, ins, _, _) in enumerate(nodes):
        for name in ins:
            uses.setdefault(name, []).append(k)
    return uses


def _sole_add(nodes: list, uses: dict, k: int):
    """``(j, other input, outputs)`` when node ``k``'s output is read only by node ``j``, a
    two-input ``Add``; else None."""
    out = nodes[k][2][0]
    if len(uses.get(out, [])) != 1:
        return None
    j = uses[out][0]
    op2, ins2, outs2, _ = nodes[j]
    if op2 != "Add" or len(ins2) != 2:
        return None
    return j, (ins2[1] if ins2[0] == out else ins2[0]), outs2


def _fold_conv_bias(nodes: list, shapes: dict) -> list:
    """A ``Conv`` without bias whose only consumer is ``Add`` of a per-channel weight
    ((C,) or (1, C, 1, 1), as Paddle exports its folded batch norms) takes that weight as
    its bias and the ``Add`` becomes an ``Identity``: the bias is added in place inside the
    convolution instead of in one more pass over a strided view. Same weights, same file."""
    uses = _consumers(nodes)
    out = list(nodes)
    for k, (op, ins, outs, attrs) in enumerate(nodes):
        found = _sole_add(nodes, uses, k) if op == "Conv" and len(ins) == 2 else None
        if found is None:
            continue
        j, other, outs2 = found
        cout = shapes.get(ins[1], (None,))[0]
        shape = shapes.get(other)
        if shape is None or cout is None or tuple(s for s in shape if s != 1) != (cout,) \
                or (len(shape) == 4 and shape[1] != cout) or len(shape) not in (1, 4):
            continue
        out[k] = (op, [*ins, other], outs, attrs)
        out[j] = ("Identity", [outs[0]], outs2, {})
    return out


def _fold_matmul_bias(nodes: list, shapes: dict) -> list:
    """``MatMul`` by a 2-D weight whose only consumer is ``Add`` of a (M,) weight becomes one
    ``Linear`` node (the bias added in place) and the ``Add`` an ``Identity``."""
    uses = _consumers(nodes)
    out = list(nodes)
    for k, (op, ins, outs, _attrs) in enumerate(nodes):
        w = shapes.get(ins[1]) if op == "MatMul" else None
        found = _sole_add(nodes, uses, k) if w is not None and len(w) == 2 else None
        if found is None:
            continue
        j, other, outs2 = found
        if shapes.get(other) != (w[1],):
            continue
        out[k] = ("Linear", [ins[0], ins[1], other], outs, {})
        out[j] = ("Identity", [outs[0]], outs2, {})
    return out


def _refuse_unknown(nodes) -> None:
    """One line naming each operator the importer lacks and where it is: the node's name
    (torch writes the module path, ``/body/body.1/Tanh``) or, unnamed, its output."""
    where: dict = {}
    for n in nodes:
        if n.op_type not in SUPPORTED_OPS and n.op_type != "FakeQuant":
            where.setdefault(n.op_type, []).append(n.name or (n.output[0] if n.output else "?"))
    if not where:
        return
    said = []
    for op in sorted(where):
        more = len(where[op]) - 1
        said.append(f"{op} at {where[op][0]}" + (f" (and {more} more)" if more else ""))
    raise UnsupportedOnnx(f"the graph uses operators this importer does not run: "
                          f"{'; '.join(said)} (supported: {', '.join(SUPPORTED_OPS)})")


class OnnxModule(Module):
    """A loaded ONNX graph (one input, one output) whose forward is skiff autograd.

    Parameters
    ----------
    model : onnx.ModelProto
        The graph (kept, so :meth:`export` writes a copy with the trained weights).
    fuse : bool
        Run written-out activations (GELU with erf, hard swish with affine scalars) as one
        node each, and fold per-channel adds into the preceding conv (the same numbers
        within float rounding; ``False`` runs every node as the file has it).
    """

    def __init__(self, model, *, fuse: bool = True):
        super().__init__()
        from onnx import numpy_helper

        object.__setattr__(self, "proto", model)
        graph = model.graph
        self.opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                         default=13)
        _refuse_unknown(graph.node)
        consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        for n in graph.node:
            if n.op_type == "Constant":
                a = n.attribute[0]
                if a.name != "value":
                    raise UnsupportedOnnx(f"Constant with {a.name!r} is not supported")
                consts[n.output[0]] = numpy_helper.to_array(a.t)
        stats = {n.input[i] for n in graph.node if n.op_type == "BatchNormalization"
                 for i in _BN_STATS if i < len(n.input)}
        taken: set = set()
        self.onnx_names: dict[str, str] = {}  # parameter or buffer name -> tensor name in file
        self._values: dict[str, object] = {}  # tensor name -> Parameter / buffer / constant
        for name, arr in consts.items():
            if arr.dtype.kind == "f" and arr.size > 1:
                key = _safe(name, taken)
                self.onnx_names[key] = name
                if name in stats:
                    self.register_buffer(key, Tensor(arr.astype(np.float32)))
                else:
                    self.register_parameter(key, Parameter(arr.astype(np.float32)))
            else:
                self._values[name] = arr
        nodes = [(n.op_type, list(n.input), list(n.output), _attrs(n))
                 for n in graph.node if n.op_type != "Constant"]
        if fuse:
            shapes = {self.onnx_names[k]: tuple(getattr(self, k).shape) for k in self.onnx_names}
            nodes = _fold_conv_bias(nodes, shapes)
            nodes = _fold_matmul_bias(nodes, shapes)
            nodes = _fuse_activations(nodes, self._values)
        self._nodes = nodes
        init_names = {t.name for t in graph.initializer}
        self.input_name = next(i.name for i in graph.input if i.name not in init_names)
        self.output_name = graph.output[0].name

    @classmethod
    def load(cls, path: str | Path, *, fuse: bool = True) -> OnnxModule:
        """Read an ``.onnx`` file (``onnx`` is imported here, only when a graph is loaded)."""
        import onnx

        return cls(onnx.load(str(path)), fuse=fuse)

    def _lookup(self, name):
        if name in self._values:
            return self._values[name]
        key = self._key_of.get(name)
        if key is None:
            raise KeyError(name)
        return getattr(self, key)

    @property
    def _key_of(self):
        cache = self.__dict__.get("_key_cache")
        if cache is None:
            cache = {v: k for k, v in self.onnx_names.items()}
            self.__dict__["_key_cache"] = cache
        return cache

    def forward(self, x, *, outputs: tuple = ()):
        """Run the graph on ``x`` (N, C, H, W); the graph's output, or a dict of the tensors
        named in ``outputs`` (for checks against onnxruntime's intermediate values)."""
        ctx = _Ctx(self)
        env = {self.input_name: x if isinstance(x, Tensor) else Tensor(x)}
        for op, ins, outs, attrs in self._plan(tuple(outputs) or (self.output_name,)):
            args = []
            for name in ins:
                if name == "":
                    args.append(None)
                elif name in env:
                    args.append(env[name])
                else:
                    args.append(self._lookup(name))
            try:
                y = _OPS[op](ctx, *args, **attrs)
            except UnsupportedOnnx as e:  # which node, in one line (round 48)
                raise UnsupportedOnnx(f"ONNX node {op} -> {outs[0]!r}: {e}") from None
            except Exception as e:
                shapes = [getattr(a, "shape", None) for a in args]
                raise RuntimeError(f"ONNX node {op} -> {outs[0]!r} failed on inputs of shapes "
                                   f"{shapes}: {e}") from e
            env[outs[0]] = y
        if outputs:
            return {k: env[k] for k in outputs}
        return env[self.output_name]

    def _plan(self, wanted: tuple) -> list:
        """The nodes the ``wanted`` values depend on, in graph order (a recognizer trained on
        its logits skips the final softmax over all classes)."""
        plans = self.__dict__.setdefault("_plans", {})
        wanted = (id(self._nodes),) + wanted
        plan = plans.get(wanted)
        if plan is None:
            need, keep = set(wanted[1:]), []
            for node in reversed(self._nodes):
                if any(o in need for o in node[2]):
                    keep.append(node)
                    need.update(i for i in node[1] if i)
            plan = plans[wanted] = keep[::-1]
        return plan

    def export(self, path: str | Path) -> Path:
        """Write the graph with this module's weights; see :func:`.export.export_onnx`."""
        from .export import export_onnx

        return export_onnx(self, path)
