"""The table of ops whose backward the gradient tests check.

Each case: ``name``, ``fn(*tensors) -> tensor or tuple``, ``inputs``: list of
``(kind, shape[, high])`` with kind ``normal`` | ``pos`` (> 0.5) | ``away`` (away from kinks
and ties) | ``int`` (integers in [0, high), no grad) | ``bool`` (no grad).
"""

from __future__ import annotations

import numpy as np

from skiff.kernels.train.core import tensor as T

CASES = []


def case(name, fn, *inputs):
    CASES.append({"name": name, "fn": fn, "inputs": list(inputs)})


N, P, A = "normal", "pos", "away"

# ---- elementwise binary with broadcasting -----------------------------------------------------
case("add", lambda a, b: a + b, (N, (3, 4)), (N, (4,)))
case("add-bcast", lambda a, b: a + b, (N, (2, 1, 3)), (N, (4, 1)))
case("radd-scalar", lambda a: 2.5 + a, (N, (3,)))
case("sub", lambda a, b: a - b, (N, (3, 4)), (N, (3, 1)))
case("rsub", lambda a: 1.0 - a, (N, (2, 3)))
case("mul", lambda a, b: a * b, (N, (2, 3, 4)), (N, (3, 1)))
case("div", lambda a, b: a / b, (N, (3, 4)), (P, (4,)))
case("rdiv", lambda a: 2.0 / a, (P, (5,)))
case("pow-int", lambda a: a**3, (N, (3, 4)))
case("pow-frac", lambda a: a**0.5, (P, (3, 4)))
case("pow-tensor", lambda a, b: a**b, (P, (3,)), (N, (3,)))
case("neg", lambda a: -a, (N, (4,)))
# ---- matmul --------------------------------------------------------------------------------
case("matmul-2d", lambda a, b: a @ b, (N, (3, 4)), (N, (4, 2)))
case("matmul-3d-2d", lambda a, b: a @ b, (N, (2, 3, 4)), (N, (4, 5)))
case("matmul-batched", lambda a, b: a @ b, (N, (2, 3, 4)), (N, (2, 4, 5)))
case("matmul-bcast", lambda a, b: a @ b, (N, (3, 4)), (N, (2, 4, 2)))
case("matmul-vec", lambda a, b: a @ b, (N, (4,)), (N, (4, 3)))
case("matmul-mat-vec", lambda a, b: a @ b, (N, (2, 3, 4)), (N, (4,)))
# ---- elementwise unary ---------------------------------------------------------------------
case("exp", lambda a: a.exp(), (N, (3, 4)))
case("log", lambda a: a.log(), (P, (3, 4)))
case("tanh", lambda a: a.tanh(), (N, (3, 4)))
case("sqrt", lambda a: a.sqrt(), (P, (3, 4)))
case("abs", lambda a: a.abs(), (A, (3, 4)))
case("sigmoid", lambda a: a.sigmoid(), (N, (3, 4)))
case("relu", lambda a: a.relu(), (A, (3, 4)))
# ---- reductions ----------------------------------------------------------------------------
case("sum-all", lambda a: a.sum(), (N, (3, 4)))
case("sum-axis", lambda a: a.sum(axis=1), (N, (2, 3, 4)))
case("sum-axes-keep", lambda a: a.sum(axis=(0, 2), keepdims=True), (N, (2, 3, 4)))
case("mean-all", lambda a: a.mean(), (N, (3, 4)))
case("mean-axis", lambda a: a.mean(axis=-1, keepdims=True), (N, (2, 3, 4)))
case("var-axis", lambda a: a.var(axis=1), (N, (3, 5)))
case("var-ddof", lambda a: a.var(ddof=1), (N, (3, 5)))
case("max-axis", lambda a: a.max(axis=1), (A, (3, 5)))
case("max-all", lambda a: a.max(), (A, (3, 5)))
case("min-axis-keep", lambda a: a.min(axis=0, keepdims=True), (A, (3, 5)))
# ---- shape -----------------------------------------------------------------------------
case("reshape", lambda a: a.reshape(4, 3) * a.reshape(4, 3), (N, (3, 4)))
case("view-tuple", lambda a: a.view((2, 6)), (N, (3, 4)))
case("transpose", lambda a: a.transpose(2, 0, 1), (N, (2, 3, 4)))
case("T", lambda a: a.T, (N, (3, 4)))
case("permute", lambda a: a.permute((1, 0, 2)), (N, (2, 3, 4)))
case("swapaxes", lambda a: a.swapaxes(0, 2), (N, (2, 3, 4)))
case("flatten", lambda a: a.flatten(1), (N, (2, 3, 4)))
case("unsqueeze", lambda a: a.unsqueeze(1), (N, (2, 3)))
case("squeeze", lambda a: a.squeeze(1), (N, (2, 1, 3)))
case("expand", lambda a: a.expand(2, 3, 4), (N, (3, 1)))
case("getitem-slice", lambda a: a[1:, ::2], (N, (3, 4)))
case("getitem-int", lambda a: a[1], (N, (3, 4)))
case("getitem-ellipsis", lambda a: a[..., None, 1:3], (N, (2, 3, 4)))
case("getitem-array-dup", lambda a: a[np.array([0, 2, 0, 1])], (N, (3, 4)))
case("getitem-tensor-idx", lambda a, i: a[i], (N, (5, 3)), ("int", (2, 3), 5))
case("getitem-2arrays", lambda a: a[np.array([0, 1, 1]), np.array([2, 0, 2])], (N, (3, 4)))
case("getitem-mask", lambda a, m: a[m], (N, (3, 4)), ("bool", (3, 4)))
case("cat", lambda a, b: T.cat([a, b], axis=1), (N, (2, 3)), (N, (2, 2)))
case("stack", lambda a, b: T.stack([a, b], axis=1), (N, (2, 3)), (N, (2, 3)))
case("split", lambda a: T.split(a, [1, 3], axis=1), (N, (2, 4)))
case("split-unused", lambda a: T.split(a, 2, axis=0)[1] * 2, (N, (4, 3)))
case("where", lambda a, b, c: T.where(c, a, b), (N, (3, 4)), (N, (4,)), ("bool", (3, 4)))
case("masked_fill", lambda a, m: a.masked_fill(m, -3.0), (N, (3, 4)), ("bool", (3, 4)))
case("chain", lambda a, b: ((a @ b).tanh() * a.sum(axis=1, keepdims=True)).mean(axis=0),
     (N, (3, 4)), (N, (4, 2)))

# ---- nn.functional ---------------------------------------------------------------------------
from skiff.kernels.train.core.nn import functional as F  # noqa: E402


def _ignore_some(t):
    d = t._data.copy()
    d[::3] = -100
    return d


def _dropout(x):
    return F.dropout(x, 0.4, generator=np.random.default_rng(7))


case("linear", lambda x, w, b: F.linear(x, w, b), (N, (2, 3, 4)), (N, (5, 4)), (N, (5,)))
case("linear-nobias", lambda x, w: F.linear(x, w), (N, (3, 4)), (N, (2, 4)))
case("embedding", lambda w, i: F.embedding(i, w), (N, (5, 3)), ("int", (2, 4), 5))
case("layer_norm", lambda x, w, b: F.layer_norm(x, (5,), w, b), (N, (2, 3, 5)), (N, (5,)),
     (N, (5,)))
case("rms_norm", lambda x, w: F.rms_norm(x, w), (N, (3, 5)), (N, (5,)))
case("gelu-tanh", lambda x: F.gelu(x, approximate="tanh"), (N, (3, 4)))
case("gelu-none", lambda x: F.gelu(x, approximate="none"), (N, (3, 4)))
case("silu", lambda x: F.silu(x), (N, (3, 4)))
case("softmax", lambda x: F.softmax(x, axis=-1), (N, (3, 5)))
case("softmax-axis0", lambda x: F.softmax(x, axis=0), (N, (3, 5)))
case("log_softmax", lambda x: F.log_softmax(x), (N, (3, 5)))
case("cross_entropy", lambda x, t: F.cross_entropy(x, t), (N, (6, 4)), ("int", (6,), 4))
case("cross_entropy-ignore", lambda x, t: F.cross_entropy(x, _ignore_some(t)),
     (N, (6, 4)), ("int", (6,), 4))
case("cross_entropy-sum", lambda x, t: F.cross_entropy(x, t, reduction="sum"),
     (N, (6, 4)), ("int", (6,), 4))
case("cross_entropy-none", lambda x, t: F.cross_entropy(x, t, reduction="none"),
     (N, (2, 4, 3)), ("int", (2, 3), 4))  # torch's (N, C, d1): classes on axis 1
case("mse_loss", lambda a, b: F.mse_loss(a, b), (N, (3, 4)), (N, (3, 4)))
case("dropout", _dropout, (N, (4, 5)))
case("conv2d", lambda x, w, b: F.conv2d(x, w, b), (N, (2, 2, 5, 5)), (N, (3, 2, 3, 3)),
     (N, (3,)))
case("conv2d-stride-pad", lambda x, w: F.conv2d(x, w, None, stride=2, padding=1),
     (N, (1, 2, 5, 6)), (N, (2, 2, 3, 2)))
case("batch_norm-train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     (N, (3, 2, 2, 3)), (N, (2,)), (N, (2,)))
case("batch_norm-eval",
     lambda x, w, b: F.batch_norm(x, np.array([0.1, -0.2]), np.array([1.5, 0.5]), w, b,
                                  training=False),
     (N, (3, 2, 2, 3)), (N, (2,)), (N, (2,)))
case("max_pool2d", lambda x: F.max_pool2d(x, 2), (A, (2, 2, 4, 4)))
case("max_pool2d-overlap", lambda x: F.max_pool2d(x, 3, stride=2), (A, (1, 2, 5, 5)))
case("avg_pool2d", lambda x: F.avg_pool2d(x, 2), (N, (2, 2, 4, 4)))
case("avg_pool2d-overlap", lambda x: F.avg_pool2d(x, (2, 3), stride=1), (N, (1, 1, 4, 5)))
case("sdpa-causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     (N, (2, 2, 4, 3)), (N, (2, 2, 4, 3)), (N, (2, 2, 4, 3)))
case("sdpa-full", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
     (N, (1, 2, 3, 4)), (N, (1, 2, 5, 4)), (N, (1, 2, 5, 4)))
case("sdpa-bool-mask", lambda q, k, v: F.scaled_dot_product_attention(
    q, k, v, attn_mask=np.array([[True, False, True, True, False]] * 3)),
     (N, (1, 2, 3, 4)), (N, (1, 2, 5, 4)), (N, (1, 2, 5, 4)))
case("packed-attention", lambda q, k, v: F.packed_causal_attention(q, k, v, [0, 3, 4, 7]),
     (N, (7, 2, 3)), (N, (7, 2, 3)), (N, (7, 2, 3)))
_ANGLES = np.linspace(0.3, 5.0, 12).reshape(4, 1, 3)  # (T, 1, D/2): per position and pair
case("rotary", lambda x: F.rotary_embedding(x, np.cos(_ANGLES), np.sin(_ANGLES)),
     (N, (2, 4, 2, 6)))

# ---- more shapes for the elementwise ops: a 0-d scalar and a 3-D array ----------------------
_UNARY = {
    "neg": (N, lambda a: -a), "exp": (N, lambda a: a.exp()), "log": (P, lambda a: a.log()),
    "tanh": (N, lambda a: a.tanh()), "sqrt": (P, lambda a: a.sqrt()),
    "abs": (A, lambda a: a.abs()), "sigmoid": (N, lambda a: a.sigmoid()),
    "relu": (A, lambda a: a.relu()), "gelu-tanh": (N, lambda a: F.gelu(a, approximate="tanh")),
    "gelu-none": (N, lambda a: F.gelu(a, approximate="none")), "silu": (N, lambda a: F.silu(a)),
    "pow-frac": (P, lambda a: a**1.5),
}
for _name, (_kind, _fn) in _UNARY.items():
    for _shape in [(), (2, 3, 5)]:
        case(f"{_name}-{'x'.join(map(str, _shape)) or 'scalar'}", _fn, (_kind, _shape))
case("mul-scalar-tensor", lambda a, b: a * b, (N, ()), (N, (2, 3)))
case("div-bcast-3d", lambda a, b: a / b, (N, (2, 1, 4)), (P, (3, 1)))
