"""ERNIE-4.5 inference without a graph: fused weights, plain float32 arrays, fused kernels.

What :class:`~.ernie.ErnieForCausalLM` runs when no gradient is wanted (``generate``,
``generate_batch``, ``model(ids)`` under ``no_grad``), on the host, in float32. The numbers
are those of the graph path (the same math in the same order, up to the rounding of a
GEMM that has more columns); what changes is the work:

* **fused weights**: each layer's ``q|k|v`` projections are one (H*D + 2*K*D, C) matrix and
  ``gate|up`` one (2*I, C) matrix, so a layer runs four GEMMs, not seven. The fused matrix
  *is* the storage: the parameters' ``.data`` become row views of it (made once, on the first
  inference call), so an optimizer step or any in-place edit of a weight is seen at once; a
  parameter whose ``.data`` is replaced (``load_state_dict``, a cast, a shard) is noticed by
  identity and its group fused again. A parameter that is a view of someone else's buffer
  (a ZeRO flat buffer) is never re-pointed: its group runs unfused.
* **rows as the GEMM wants them**: many rows (a prefill) as ``x @ W^T``; a few rows (a
  decode step) as ``(W @ x^T)^T``, which OpenBLAS runs 1.3-1.8x faster there.
* **only the rows asked for**: with ``last_only`` the last layer's attention output,
  ``o_proj`` and MLP, the final norm and the head run for each sequence's last position only
  (every position's keys and values are still computed and cached): the logits asked for are
  the same.
* **fused elementwise kernels** (numba, each with a numpy reference twin registered as a
  :func:`~skiff.kernels.backend.custom_op`, compared in the tests): RMSNorm, the rotary
  embedding of q and k in place in the fused projection's output, and SwiGLU
  ``silu(gate) * up`` from the fused ``gate|up`` output.

:func:`fast_path` says whether a model can take it (plain ``nn.Linear`` projections, no
LoRA, float32 numpy weights) and returns its :class:`InferenceWeights`; MoE layers' experts
are called as modules inside the fast path.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from skiff.kernels.backend import custom_op, numba_available

from ..core import nn

__all__ = ["InferenceWeights", "fast_path", "rms_norm_rows", "rotary_rows_", "swiglu_rows",
           "few_rows_matmul", "mid_rows_matmul", "prefill", "decode_step", "forward_fast",
           "forward_packed_fast", "forward_step_fast"]


# ---- elementwise kernels: numpy references and numba twins ----------------------------------
@custom_op("ernie.rms_norm_rows")
def rms_norm_rows(x, w, eps):
    """RMSNorm of rows x (N, C) with scale w (C,), in x's dtype (skiff's RMSNorm order)."""
    rstd = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    return (x * rstd) * w


@custom_op("ernie.rotary_rows_")
def rotary_rows_(buf, cos, sin, heads, head_dim):
    """Rotate, in place, the interleaved pairs of the first ``heads`` heads of each row of
    buf (N, F) (head ``h`` is columns ``h*D .. h*D+D``) by the angles of cos, sin (N, D/2);
    returns buf."""
    N = buf.shape[0]
    x = buf[:, :heads * head_dim].reshape(N, heads, head_dim // 2, 2)
    c, s = cos[:, None, :], sin[:, None, :]
    x0, x1 = x[..., 0].copy(), x[..., 1].copy()
    x[..., 0] = x0 * c - x1 * s
    x[..., 1] = x1 * c + x0 * s
    return buf


@custom_op("ernie.swiglu_rows")
def swiglu_rows(gu):
    """``silu(gate) * up`` of rows gu (N, 2*I) holding ``gate | up``; returns (N, I)."""
    inner = gu.shape[1] // 2
    g = gu[:, :inner]
    return g * (1 / (1 + np.exp(-g))) * gu[:, inner:]


@custom_op("ernie.few_rows_matmul")
def few_rows_matmul(x, w):
    """``x @ w.T`` for a few rows x (B, C) against a tall w (N, C): (B, N). The numba twin
    reads each pair of w's rows once for four rows of x at a time (eight running sums),
    1.4-1.7x faster than OpenBLAS for 2..16 rows (8 rows against the 0.3B's 103424-row
    head: 41 ms against 68 ms)."""
    return x @ w.T


@custom_op("ernie.mid_rows_matmul")
def mid_rows_matmul(x, w):
    """``x @ w.T`` for tens to a few hundred rows x (M, C) against w (N, C): (M, N). The
    fast twin runs onnxruntime's MLAS GEMM (a ``Gemm`` node with ``transB``; onnxruntime is
    already skiff's OCR engine), 10-30% faster than OpenBLAS for 17..256 rows (128 rows
    against the 0.3B's layer weights: 24.4 ms against 28.5 ms per layer); OpenBLAS is as
    fast from ~256 rows on."""
    return x @ w.T


def _onnxruntime_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


@functools.lru_cache(maxsize=4)
def _gemm_session(threads: int):
    import onnxruntime as ort  # lazy: skiff imports fast without it
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Gemm", ["A", "B"], ["Y"], transB=1)], "rows_times_weight_t",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", "K"]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, ["N", "K"])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", "N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads  # 0: onnxruntime's default (every core)
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def _blas_threads() -> int:
    """The thread count BLAS was given (OMP/OPENBLAS_NUM_THREADS), 0 when unset."""
    import os

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


@mid_rows_matmul.implement("cpu", "onnxruntime", available=_onnxruntime_available)
def _mid_rows_mlas(x, w):
    if not _numba_ok(x, w) or x.ndim != 2 or w.ndim != 2 or x.shape[0] == 0:
        return mid_rows_matmul.reference(x, w)
    return _gemm_session(_blas_threads()).run(None, {"A": x, "B": w})[0]


@functools.lru_cache(maxsize=1)
def _kernels():
    import numba

    @numba.njit(cache=True, fastmath=True)
    def rms(x, w, eps, out):  # pragma: no cover - compiled
        n, c = x.shape
        for i in range(n):
            acc = np.float32(0.0)
            for j in range(c):
                acc += x[i, j] * x[i, j]
            r = np.float32(1.0 / np.sqrt(acc / c + eps))
            for j in range(c):
                out[i, j] = (x[i, j] * r) * w[j]

    @numba.njit(cache=True, fastmath=True)
    def rope(buf, cos, sin, heads, d):  # pragma: no cover - compiled
        n = buf.shape[0]
        half = d // 2
        for i in range(n):
            for h in range(heads):
                base = h * d
                for p in range(half):
                    a = buf[i, base + 2 * p]
                    b = buf[i, base + 2 * p + 1]
                    c = cos[i, p]
                    s = sin[i, p]
                    buf[i, base + 2 * p] = a * c - b * s
                    buf[i, base + 2 * p + 1] = b * c + a * s

    @numba.njit(cache=True, fastmath=True)
    def swiglu(gu, out):  # pragma: no cover - compiled
        n, inner = out.shape
        one = np.float32(1.0)
        for i in range(n):
            for j in range(inner):
                g = gu[i, j]
                out[i, j] = g * (one / (one + np.exp(-g))) * gu[i, inner + j]

    @numba.njit(cache=True, fastmath=True)
    def few_rows(x, w, out):  # pragma: no cover - compiled
        nb, c_ = x.shape
        n = w.shape[0]
        last = nb - 1
        for j in range(0, n - 1, 2):  # two rows of w against four rows of x
            w0 = w[j]
            w1 = w[j + 1]
            for b in range(0, nb, 4):
                x0 = x[b]
                x1 = x[min(b + 1, last)]
                x2 = x[min(b + 2, last)]
                x3 = x[min(b + 3, last)]
                a00 = a01 = a02 = a03 = np.float32(0.0)
                a10 = a11 = a12 = a13 = np.float32(0.0)
                for c in range(c_):
                    u = w0[c]
                    v = w1[c]
                    a00 += u * x0[c]
                    a01 += u * x1[c]
                    a02 += u * x2[c]
                    a03 += u * x3[c]
                    a10 += v * x0[c]
                    a11 += v * x1[c]
                    a12 += v * x2[c]
                    a13 += v * x3[c]
                out[b, j] = a00
                out[b, j + 1] = a10
                if b + 1 < nb:
                    out[b + 1, j] = a01
                    out[b + 1, j + 1] = a11
                if b + 2 < nb:
                    out[b + 2, j] = a02
                    out[b + 2, j + 1] = a12
                if b + 3 < nb:
                    out[b + 3, j] = a03
                    out[b + 3, j + 1] = a13
        if n % 2:  # an odd last row of w
            for b in range(nb):
                acc = np.float32(0.0)
                for c in range(c_):
                    acc += w[n - 1, c] * x[b, c]
                out[b, n - 1] = acc

    return rms, rope, swiglu, few_rows


def _numba_ok(*arrays) -> bool:
    return all(isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous
               for a in arrays)


@rms_norm_rows.implement("cpu", "numba", available=numba_available)
def _rms_numba(x, w, eps):
    if not _numba_ok(x, w) or x.ndim != 2:
        return rms_norm_rows.reference(x, w, eps)
    out = np.empty_like(x)
    _kernels()[0](x, w, np.float32(eps), out)
    return out


@rotary_rows_.implement("cpu", "numba", available=numba_available)
def _rope_numba(buf, cos, sin, heads, head_dim):
    if not _numba_ok(buf, cos, sin) or buf.ndim != 2:
        return rotary_rows_.reference(buf, cos, sin, heads, head_dim)
    _kernels()[1](buf, cos, sin, int(heads), int(head_dim))
    return buf


@swiglu_rows.implement("cpu", "numba", available=numba_available)
def _swiglu_numba(gu):
    if not _numba_ok(gu) or gu.ndim != 2:
        return swiglu_rows.reference(gu)
    out = np.empty((gu.shape[0], gu.shape[1] // 2), dtype=gu.dtype)
    _kernels()[2](gu, out)
    return out


@few_rows_matmul.implement("cpu", "numba", available=numba_available)
def _few_rows_numba(x, w):
    if not _numba_ok(x, w) or x.ndim != 2 or w.ndim != 2 or x.shape[0] == 0:
        return few_rows_matmul.reference(x, w)
    out = np.empty((x.shape[0], w.shape[0]), dtype=x.dtype)
    _kernels()[3](x, w, out)
    return out


# ---- fused weights ---------------------------------------------------------------------------
class _Group:
    """Parameters that multiply the same input (rows stacked): one fused matrix whose row
    blocks are the parameters' storage, or, when a parameter may not be re-pointed, the
    parameters as they are."""

    def __init__(self, params, old_base=None):
        self.params = [p for p in params]
        arrays = [p.data for p in self.params]
        ok = all(isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous
                 and (_owned(a) or (old_base is not None and a.base is old_base))
                 for a in arrays) and len({a.shape[1:] for a in arrays}) == 1
        if ok and len(arrays) > 1:
            fused = np.concatenate(arrays, axis=0)
            views, start = [], 0
            for p, a in zip(self.params, arrays):
                p.data = fused[start:start + a.shape[0]]
                views.append(p.data)
                start += a.shape[0]
            self.fused, self.views = fused, views
        else:
            self.fused, self.views = None, arrays

    def current(self) -> bool:
        return all(p.data is v for p, v in zip(self.params, self.views))

    def refreshed(self) -> _Group:
        return self if self.current() else _Group(self.params, self.fused)

    def parts(self) -> list:
        """The matrices to multiply by: the fused one, or each parameter's."""
        return [self.fused] if self.fused is not None else list(self.views)


def _owned(a) -> bool:
    """Whether array ``a`` is the whole of its memory: it owns it, wraps a plain buffer, or
    reshapes a whole array (what a checkpoint reader returns); not a slice of a larger
    buffer (a ZeRO flat buffer), whose owner would stop seeing the parameter once it is
    pointed elsewhere."""
    return (a.flags.owndata or not isinstance(a.base, np.ndarray)
            or a.base.size == a.size)


class _Layer:
    def __init__(self, layer):
        a = layer.self_attn
        self.H, self.K, self.D = a.H, a.K, a.D
        self.ln1, self.ln2 = layer.input_layernorm, layer.post_attention_layernorm
        self.eps1, self.eps2 = float(self.ln1.eps), float(self.ln2.eps)
        projs = (a.q_proj, a.k_proj, a.v_proj)
        self.qkv = _Group([p.weight for p in projs])
        self.qkv_b = _Group([p.bias for p in projs]) if a.q_proj.bias is not None else None
        self.o, self.o_b = a.o_proj.weight, a.o_proj.bias
        mlp = layer.mlp
        self.moe = None if _plain_mlp(mlp) else mlp
        if self.moe is None:
            self.gu = _Group([mlp.gate_proj.weight, mlp.up_proj.weight])
            self.gu_b = (_Group([mlp.gate_proj.bias, mlp.up_proj.bias])
                         if mlp.gate_proj.bias is not None else None)
            self.down, self.down_b = mlp.down_proj.weight, mlp.down_proj.bias

    def refresh(self) -> None:
        self.qkv = self.qkv.refreshed()
        if self.qkv_b is not None:
            self.qkv_b = self.qkv_b.refreshed()
        if self.moe is None:
            self.gu = self.gu.refreshed()
            if self.gu_b is not None:
                self.gu_b = self.gu_b.refreshed()


def _plain_mlp(mlp) -> bool:
    """A SwiGLU MLP of three plain ``nn.Linear`` (ernie.ErnieMLP without LoRA)."""
    return (getattr(mlp, "gate_up_lora", 1) is None
            and all(type(getattr(mlp, n, None)) is nn.Linear
                    for n in ("gate_proj", "up_proj", "down_proj")))


class InferenceWeights:
    """A model's weights as the fast path reads them (see the module docstring); made once
    per model by :func:`fast_path`, refreshed there when a parameter's storage changed."""

    def __init__(self, model):
        self.layers = [_Layer(layer) for layer in model.model.layers]

    def refresh(self) -> InferenceWeights:
        for layer in self.layers:
            layer.refresh()
        return self


def fast_path(model) -> InferenceWeights | None:
    """The model's :class:`InferenceWeights` when it can run the fast path now, else None:
    host float32 weights, plain ``nn.Linear`` attention projections and head (no LoRA);
    SKIFF_REFERENCE_OPS=1 turns it off (the graph path is the reference)."""
    import os

    if os.environ.get("SKIFF_REFERENCE_OPS"):
        return None
    emb = model.model.embed_tokens.weight.data
    if not isinstance(emb, np.ndarray) or emb.dtype != np.float32:
        return None
    if type(model.lm_head) is not nn.Linear or model.lm_head.weight.data.dtype != np.float32:
        return None
    for layer in model.model.layers:
        a = layer.self_attn
        if not all(type(m) is nn.Linear and isinstance(m.weight.data, np.ndarray)
                   and m.weight.data.dtype == np.float32
                   for m in (a.q_proj, a.k_proj, a.v_proj, a.o_proj)):
            return None
        if not hasattr(layer.mlp, "experts") and not _plain_mlp(layer.mlp):
            return None  # a dense MLP with LoRA: the graph path
    w = _WEIGHTS.get(model)
    if w is None or len(w.layers) != len(model.model.layers):
        w = _WEIGHTS[model] = InferenceWeights(model)
        return w
    return w.refresh()


# each model's fused weights, kept apart from the model so that a copy or a pickle of it
# never carries fused matrices that no longer share memory with its parameters
_WEIGHTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# ---- the forward passes ----------------------------------------------------------------------
def _rows_times(x, parts, bias=None):
    """x (M, C) times each matrix of ``parts`` (N_i, C) transposed, side by side:
    (M, sum N_i), contiguous. One row as a GEMV ``W x``; 2..16 rows by
    :func:`few_rows_matmul`; 17..256 by :func:`mid_rows_matmul`; more as ``x W^T``
    (OpenBLAS; ``(W x^T)^T`` is a few percent faster in its GEMM at 128 rows, but the
    transposed result costs more to make contiguous)."""
    M = x.shape[0]
    if M == 1:
        outs = [(w @ x[0])[None] for w in parts]
    elif M <= 16:
        outs = [few_rows_matmul(x, w) for w in parts]
    elif M <= 256:
        outs = [mid_rows_matmul(x, w) for w in parts]
    else:
        outs = [x @ w.T for w in parts]
    y = np.concatenate(outs, axis=1) if len(outs) > 1 else np.ascontiguousarray(outs[0])
    if bias is not None:
        y += bias
    return y


def _split_rows(group, bias_group, n):
    """The matrices (and bias) of a q|k|v group split after its first ``n`` rows: ([q],
    [k, v] or the fused k|v rows), (q bias, k|v bias)."""
    if group.fused is not None:
        w = ([group.fused[:n]], [group.fused[n:]])
    else:
        w = ([group.views[0]], list(group.views[1:]))
    b = _bias(bias_group)
    return w, (None, None) if b is None else (b[:n], b[n:])


def _bias(group):
    return None if group is None else np.concatenate(group.parts(), axis=0)


def _mlp(L: _Layer, h):
    if L.moe is not None:
        from ..core.tensor import Tensor

        return L.moe(Tensor(h)).data
    a = swiglu_rows(_rows_times(h, L.gu.parts(), _bias(L.gu_b)))
    return _rows_times(a, [L.down.data], None if L.down_b is None else L.down_b.data)


def _attention_last(q, k, v, cu, scale):
    """Attention of each sequence's last position only: q (S, H, D) the last rows, k and v
    (N, K, D) the packed keys and values; returns (S, H, D)."""
    S, H, D = q.shape
    K = k.shape[1]
    R = H // K
    out = np.empty_like(q)
    for b in range(S):
        s, e = int(cu[b]), int(cu[b + 1])
        qs = q[b].reshape(K, R, D) * q.dtype.type(scale)
        att = qs @ k[s:e].transpose(1, 2, 0)  # (K, R, L)
        att -= att.max(axis=-1, keepdims=True)
        np.exp(att, out=att)
        att /= att.sum(axis=-1, keepdims=True)
        out[b] = (att @ v[s:e].transpose(1, 0, 2)).reshape(H, D)
    return out


def prefill(model, weights: InferenceWeights, tokens, cu, cos, sin, store=None,
            last_only: bool = False):
    """Logits of a packed token stream tokens (N,) with sequence bounds ``cu`` (S+1,) and
    rotary cos, sin (N, D/2): (N, V), or (S, V) of each sequence's last token with
    ``last_only``. ``store(layer, k, v)`` receives each layer's keys and values (N, K, D)."""
    from .ernie_generate import packed_attention_gqa

    emb = model.model.embed_tokens.weight.data
    x = emb[tokens]  # (N, C), a copy
    N = x.shape[0]
    last = cu[1:] - 1
    n_layers = len(weights.layers)
    for i, L in enumerate(weights.layers):
        H, K, D = L.H, L.K, L.D
        h = rms_norm_rows(x, L.ln1.weight.data, L.eps1)
        if last_only and i == n_layers - 1:  # queries of the last rows, keys of all
            w, b = _split_rows(L.qkv, L.qkv_b, H * D)
            kv = _rows_times(h, w[1], b[1])  # (N, 2K D)
            rotary_rows_(kv, cos, sin, K, D)
            q = _rows_times(h[last], w[0], b[0])  # (S, H D)
            rotary_rows_(q, np.ascontiguousarray(cos[last]), np.ascontiguousarray(sin[last]),
                         H, D)
            k, v = kv[:, :K * D].reshape(N, K, D), kv[:, K * D:].reshape(N, K, D)
            if store is not None:
                store(i, k, v)
            y = _attention_last(q.reshape(-1, H, D), k, v, cu, D ** -0.5)
            x = x[last]  # only the last rows go on
        else:
            qkv = _rows_times(h, L.qkv.parts(), _bias(L.qkv_b))  # (N, (H + 2K) D)
            rotary_rows_(qkv, cos, sin, H + K, D)
            q = qkv[:, :H * D].reshape(N, H, D)
            k = qkv[:, H * D:(H + K) * D].reshape(N, K, D)
            v = qkv[:, (H + K) * D:].reshape(N, K, D)
            if store is not None:
                store(i, k, v)
            y = packed_attention_gqa(q, k, v, cu, D ** -0.5)
        x += _rows_times(y.reshape(y.shape[0], H * D), [L.o.data],
                         None if L.o_b is None else L.o_b.data)
        x += _mlp(L, rms_norm_rows(x, L.ln2.weight.data, L.eps2))
    if last_only and n_layers == 0:
        x = x[last]
    return _head(model, x)


def _head(model, x):
    norm = model.model.norm
    h = rms_norm_rows(np.ascontiguousarray(x), norm.weight.data, float(norm.eps))
    head = model.lm_head
    return _rows_times(h, [head.weight.data], None if head.bias is None else head.bias.data)


def decode_step(model, weights: InferenceWeights, ids, keys, values, lengths, cos, sin,
                rows=None):
    """Logits (B, V) of one new token per row, ids (B,), row ``b`` at position
    ``lengths[b]`` of cache row ``rows[b]`` (default b); ``keys[layer]``, ``values[layer]``
    (B_cache, K, capacity, D) are written at those positions and read up to them."""
    emb = model.model.embed_tokens.weight.data
    x = emb[ids]  # (B, C)
    B = x.shape[0]
    lengths = np.asarray(lengths, dtype=np.int64)
    idx = np.arange(B) if rows is None else np.asarray(rows, dtype=np.int64)
    S = int(lengths.max()) + 1
    same = bool((lengths == lengths[0]).all())
    beyond = None if same else (np.arange(S)[None, :] > lengths[:, None])  # (B, S)
    for i, L in enumerate(weights.layers):
        H, K, D = L.H, L.K, L.D
        R = H // K
        h = rms_norm_rows(x, L.ln1.weight.data, L.eps1)
        qkv = _rows_times(h, L.qkv.parts(), _bias(L.qkv_b))
        rotary_rows_(qkv, cos, sin, H + K, D)
        q = qkv[:, :H * D].reshape(B, K, R, D)
        kc, vc = keys[i], values[i]
        kc[idx, :, lengths] = qkv[:, H * D:(H + K) * D].reshape(B, K, D)
        vc[idx, :, lengths] = qkv[:, (H + K) * D:].reshape(B, K, D)
        if rows is None:
            ks, vs = kc[:B, :, :S], vc[:B, :, :S]  # (B, K, S, D) views
        else:
            ks, vs = kc[idx, :, :S], vc[idx, :, :S]
        att = (q * q.dtype.type(D ** -0.5)) @ ks.transpose(0, 1, 3, 2)  # (B, K, R, S)
        if beyond is not None:  # positions past a row's own length
            np.copyto(att, -np.inf, where=beyond[:, None, None, :])
        att -= att.max(axis=-1, keepdims=True)
        np.exp(att, out=att)
        att /= att.sum(axis=-1, keepdims=True)
        y = (att @ vs).reshape(B, H * D)
        x += _rows_times(y, [L.o.data], None if L.o_b is None else L.o_b.data)
        x += _mlp(L, rms_norm_rows(x, L.ln2.weight.data, L.eps2))
    return _head(model, x)


# ---- entry points for ErnieForCausalLM (None: take the graph path) ---------------------------
def forward_fast(model, idx, cache, last_only: bool):
    """``model.forward`` without a graph: rows (B, T) of equal length from position 0 (one
    packed prefill, keys and values into ``cache``), or one new position per row after
    ``cache.length``. Logits (B, T or 1, V), or None when the fast path does not apply."""
    from ..core.tensor import is_grad_enabled

    idx = getattr(idx, "data", idx)  # a Tensor of ids
    if is_grad_enabled() or not isinstance(idx, np.ndarray):
        return None
    B, T = idx.shape
    past = cache.length if cache is not None else 0
    if past and T != 1:
        return None
    w = fast_path(model)
    if w is None:
        return None
    cos, sin = model.rotary(np.tile(np.arange(past, past + T), B))
    if past:  # a decode step: every row at position ``past``
        logits = decode_step(model, w, idx.reshape(-1), cache.k, cache.v,
                             np.full(B, past, dtype=np.int64), cos, sin)
        cache.length += 1
        return logits.reshape(B, 1, -1)
    cu = np.arange(B + 1, dtype=np.int64) * T
    store = None
    if cache is not None:
        if T > cache.capacity:
            raise ValueError(f"KV cache full: 0 + {T} positions > capacity {cache.capacity}")

        def store(layer, k, v):
            if cache.k[layer] is None:
                shape = (B, k.shape[1], cache.capacity, k.shape[2])
                cache.k[layer] = np.empty(shape, dtype=k.dtype)
                cache.v[layer] = np.empty(shape, dtype=v.dtype)
            cache.k[layer][:, :, :T] = k.reshape(B, T, *k.shape[1:]).transpose(0, 2, 1, 3)
            cache.v[layer][:, :, :T] = v.reshape(B, T, *v.shape[1:]).transpose(0, 2, 1, 3)
    logits = prefill(model, w, idx.reshape(-1), cu, cos, sin, store, last_only)
    if cache is not None:
        cache.length += T
    return logits.reshape(B, 1 if last_only else T, -1)


def forward_packed_fast(model, tokens, cu, cos, sin, cache, last_only: bool):
    """``model.forward_packed`` without a graph (None when the fast path does not apply)."""
    from ..core.tensor import is_grad_enabled

    tokens = getattr(tokens, "data", tokens)
    if is_grad_enabled() or not isinstance(tokens, np.ndarray):
        return None
    w = fast_path(model)
    if w is None:
        return None
    store = None if cache is None else (
        lambda layer, k, v: cache.store_packed(layer, k, v, cu))
    return prefill(model, w, tokens, cu, cos, sin, store, last_only)


def forward_step_fast(model, idx, cache, rows, cos, sin):
    """``model.forward_step`` without a graph, before ``cache.lengths`` moves on (None when
    the fast path does not apply)."""
    from ..core.tensor import is_grad_enabled

    idx = getattr(idx, "data", idx)
    if is_grad_enabled() or not isinstance(idx, np.ndarray) or cache.k[0] is None:
        return None
    w = fast_path(model)
    if w is None:
        return None
    lengths = cache.lengths if rows is None else cache.lengths[rows]
    if int(lengths.max()) >= cache.capacity:
        raise ValueError(f"KV cache full: a row reached capacity {cache.capacity}")
    return decode_step(model, w, idx, cache.k, cache.v, lengths, cos, sin, rows)
