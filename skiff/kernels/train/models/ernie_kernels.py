"""ERNIE-4.5 inference kernels: numpy reference twins and their fast implementations.

Each is a :func:`~skiff.kernels.backend.custom_op` (``SKIFF_REFERENCE_OPS=1`` forces the
reference; the tests compare every fast twin with it), used by :mod:`.ernie_infer`:

* ``rms_norm_rows``, ``rotary_rows_`` (in place, on the fused q|k|v output): numba loops,
  one pass each; ``swiglu_rows`` (from the fused gate|up output): numpy in place (its
  vectorised exp beats a numba loop's);
* ``few_rows_matmul``: ``x @ w.T`` for 2..16 rows (decode steps of a batch), a numba kernel
  that reads two rows of w once for four rows of x;
* ``mid_rows_matmul``: ``x @ w.T`` for 17..256 rows (a prompt), onnxruntime's MLAS GEMM;
* ``bf16_rows_matmul``: ``x @ w.T`` with float32 rows x and bfloat16 weights w (a model
  loaded with ``dtype="bfloat16"``), in float32 on the exact float32 values of w: up to 16
  rows a numba kernel that widens each pair of w's rows as it reads them (half the bytes of
  a float32 weight), more rows on a CPU with AVX512-BF16 the bf16 dot-product GEMM of
  :mod:`.ernie_bf16dot` (when x's values are bfloat16's), else by tiles of w widened in
  cache and the float32 GEMMs above;
* ``round_bf16_``: float32 values rounded, in place, to the nearest bfloat16 (ties to even,
  as torch's ``.to(torch.bfloat16)``): where a bfloat16 model in torch holds a bf16 tensor.
"""

from __future__ import annotations

import functools

import numpy as np

from skiff.kernels.backend import custom_op, numba_available

__all__ = ["rms_norm_rows", "rotary_rows_", "swiglu_rows", "few_rows_matmul",
           "mid_rows_matmul", "bf16_rows_matmul", "is_bf16", "round_bf16_"]


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


@custom_op("ernie.bf16_rows_matmul")
def bf16_rows_matmul(x, w):
    """``x @ w.T`` for float32 rows x (M, C) against bfloat16 weights w (N, C), in float32:
    (M, N) float32, the product with w widened to float32 (exact)."""
    return x @ w.astype(np.float32).T


@custom_op("ernie.round_bf16_")
def round_bf16_(a):
    """Round float32 ``a`` in place to bfloat16's values (nearest, ties to even; NaN stays
    NaN); returns a."""
    import ml_dtypes

    a[...] = a.astype(ml_dtypes.bfloat16).astype(np.float32)
    return a


def is_bf16(a) -> bool:
    """Whether ``a`` is a host array of ml_dtypes' bfloat16."""
    return isinstance(a, np.ndarray) and a.dtype.name == "bfloat16"


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

    global _block42  # a module global, not a closure cell: a closure's cells are part of
    # numba's cache key and a dispatcher pickles differently in each process, so the two
    # kernels calling it compiled again in every process (3-4 s each)

    @numba.njit(cache=True, fastmath=True, inline="always")
    def block42(w0, w1, x, b, out, j, two):  # pragma: no cover - compiled
        # rows j, j+1 of out's columns (j+1 only if ``two``) for rows b..b+3 of x: two
        # weight rows read once for four x rows, eight running sums
        nb, c_ = x.shape
        last = nb - 1
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
        if b + 1 < nb:
            out[b + 1, j] = a01
        if b + 2 < nb:
            out[b + 2, j] = a02
        if b + 3 < nb:
            out[b + 3, j] = a03
        if two:
            out[b, j + 1] = a10
            if b + 1 < nb:
                out[b + 1, j + 1] = a11
            if b + 2 < nb:
                out[b + 2, j + 1] = a12
            if b + 3 < nb:
                out[b + 3, j + 1] = a13

    @numba.njit(cache=True, fastmath=True)
    def few_rows(x, w, out):  # pragma: no cover - compiled
        nb = x.shape[0]
        n = w.shape[0]
        for j in range(0, n, 2):  # two rows of w against four rows of x
            two = j + 1 < n
            w0 = w[j]
            w1 = w[j + 1] if two else w[j]  # an odd last row: its sums once more, unused
            for b in range(0, nb, 4):
                _block42(w0, w1, x, b, out, j, two)

    @numba.njit(cache=True, fastmath=True)
    def few_rows_bf16(x, w, out):  # pragma: no cover - compiled
        # w: the bfloat16 weights as uint16; each pair of rows widened into a float32
        # buffer (the bits shifted up: exact), then as ``few_rows``
        nb, c_ = x.shape
        n = w.shape[0]
        bits = np.empty(2 * c_, dtype=np.uint32)
        wide = bits.view(np.float32)
        for j in range(0, n, 2):
            two = j + 1 < n
            for c in range(c_):
                bits[c] = np.uint32(w[j, c]) << np.uint32(16)
            if two:
                for c in range(c_):
                    bits[c_ + c] = np.uint32(w[j + 1, c]) << np.uint32(16)
            else:
                for c in range(c_):
                    bits[c_ + c] = np.uint32(0)
            w0 = wide[:c_]
            w1 = wide[c_:]
            if nb == 1:  # a decode step: two sums, not eight over a repeated row
                a00 = a10 = np.float32(0.0)
                x0 = x[0]
                for c in range(c_):
                    a00 += w0[c] * x0[c]
                    a10 += w1[c] * x0[c]
                out[0, j] = a00
                if two:
                    out[0, j + 1] = a10
                continue
            for b in range(0, nb, 4):
                _block42(w0, w1, x, b, out, j, two)

    @numba.njit(cache=True)
    def widen_bf16(w, out):  # pragma: no cover - compiled
        # bfloat16 bits (uint16) (n, c) -> float32 bits (uint32) (n, c)
        n, c_ = w.shape
        for i in range(n):
            for c in range(c_):
                out[i, c] = np.uint32(w[i, c]) << np.uint32(16)

    @numba.njit(cache=True)
    def round_bf16(bits):  # pragma: no cover - compiled
        # float32 bits (uint32, flat) -> the nearest bfloat16's bits, ties to even
        for i in range(bits.shape[0]):
            u = bits[i]
            if (u & np.uint32(0x7F800000)) == np.uint32(0x7F800000):  # inf / NaN
                if u & np.uint32(0x007FFFFF):
                    bits[i] = (u | np.uint32(0x00400000)) & np.uint32(0xFFFF0000)
                else:
                    bits[i] = u & np.uint32(0xFFFF0000)
                continue
            u = u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))
            bits[i] = u & np.uint32(0xFFFF0000)

    _block42 = block42
    return rms, rope, few_rows, few_rows_bf16, widen_bf16, round_bf16


_block42 = None  # set by _kernels (the 4x2 block both few-rows kernels run)


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


@swiglu_rows.implement("cpu", "numpy-inplace")
def _swiglu_inplace(gu):
    """One scratch array and numpy's vectorised exp: 1.8x faster than a numba loop (whose
    exp is not vectorised without SVML) at 128 rows of the 0.3B's MLP (0.53 ms vs 0.96)."""
    inner = gu.shape[1] // 2
    g = gu[:, :inner]
    out = np.negative(g)
    np.exp(out, out=out)
    out += 1
    np.divide(g, out, out=out)
    out *= gu[:, inner:]
    return out


@few_rows_matmul.implement("cpu", "numba", available=numba_available)
def _few_rows_numba(x, w):
    if not _numba_ok(x, w) or x.ndim != 2 or w.ndim != 2 or x.shape[0] == 0:
        return few_rows_matmul.reference(x, w)
    out = np.empty((x.shape[0], w.shape[0]), dtype=x.dtype)
    _kernels()[2](x, w, out)
    return out


@bf16_rows_matmul.implement("cpu", "numba", available=numba_available)
def _bf16_rows_numba(x, w):
    """From 8 rows, on a CPU with AVX512-BF16 and bf16-valued x: :mod:`.ernie_bf16dot`.
    Else up to 16 rows: :func:`_kernels`' ``few_rows_bf16`` (memory-bound: it reads half the
    bytes of the float32 kernel). More rows: w in tiles of ~1 MiB widened to float32 (in
    cache) and each tile through the float32 GEMM of that many rows (MLAS up to 256 rows,
    OpenBLAS beyond); the widening is 1/M of the GEMM's work."""
    if (not _numba_ok(x) or not is_bf16(w) or not w.flags.c_contiguous or x.ndim != 2
            or w.ndim != 2 or x.shape[0] == 0 or x.shape[1] != w.shape[1]):
        return bf16_rows_matmul.reference(x, w)
    M, C = x.shape
    N = w.shape[0]
    bits = w.view(np.uint16)
    out = np.empty((M, N), dtype=np.float32)
    kernels = _kernels()
    # the CPU's bf16 dot instruction (x's values bf16's, as a bf16 model's are): ~2x the
    # float32 GEMM on widened tiles, 1.5-1.9x the widening kernel from 8 rows on (fewer:
    # the weights' bytes bound both); as many threads as the float32 GEMMs take
    from .ernie_bf16dot import matmul as bf16_dot

    dot = bf16_dot(x, w, _blas_threads()) if M >= 8 else None
    if dot is not None:
        return dot
    if M <= 16:
        kernels[3](x, bits, out)
        return out
    rows = max(64, (1 << 18) // max(C, 1))
    tile = np.empty((min(rows, N), C), dtype=np.uint32)
    wide = tile.view(np.float32)
    for j in range(0, N, rows):
        n = min(rows, N - j)
        kernels[4](bits[j:j + n], tile[:n])
        out[:, j:j + n] = (mid_rows_matmul(x, wide[:n]) if M <= 256 else x @ wide[:n].T)
    return out


@round_bf16_.implement("cpu", "numba", available=numba_available)
def _round_bf16_numba(a):
    if not _numba_ok(a):
        return round_bf16_.reference(a)
    _kernels()[5](a.reshape(-1).view(np.uint32))
    return a
