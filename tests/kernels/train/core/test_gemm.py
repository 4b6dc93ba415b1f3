"""How gemm.py hands row-major operands to column-major cuBLAS: ``layout``'s (op, ld, batch
stride) read back from the memory of numpy views must give the views themselves (the GPU
product itself is compared with ``a @ b`` in tests/gpu_readiness/test_step_graph_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core import gemm


def _read(x, op, ld, stride):
    """The matrices cuBLAS would see for ``x`` from its first element, as x's shape."""
    isz = x.itemsize
    r, c = x.shape[-2:]
    batch = int(np.prod(x.shape[:-2])) if x.ndim > 2 else 1
    inner = (ld * isz, isz) if op == gemm._OP_N else (isz, ld * isz)
    view = np.lib.stride_tricks.as_strided(x[(0,) * (x.ndim - 2)] if x.ndim > 2 else x,
                                           shape=(batch, r, c),
                                           strides=(stride * isz, *inner))
    return view.reshape(x.shape)


def _cases():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    qkv = rng.standard_normal((2, 6, 3, 4, 5))  # (B, T, 3, H, D) as the attention splits it
    yield "contiguous", base
    yield "transposed", np.swapaxes(base, -1, -2)
    yield "2-D", base[0, 0]
    yield "2-D transposed", base[0, 0].T
    yield "row slice", base[:, :, 1:4]
    yield "column slice", base[..., 2:6]
    yield "head view", qkv.transpose(2, 0, 3, 1, 4)[1]
    yield "head view transposed", np.swapaxes(qkv.transpose(2, 0, 3, 1, 4)[1], -1, -2)
    yield "one batch item", base[:1, 2:3]
    yield "a row", base[0, 0, 2:3]
    yield "a column", base[0, 0, :, 3:4]
    yield "broadcast batch", np.broadcast_to(base[0, 0], (4, 5, 7))


@pytest.mark.parametrize("name,x", list(_cases()), ids=[n for n, _ in _cases()])
def test_layout_reads_back_each_view_or_asks_for_a_copy(name, x):
    got = gemm.layout(x, x.itemsize)
    if got is None:  # copied first: then the contiguous copy must have a layout
        y = np.ascontiguousarray(x)
        got, x = gemm.layout(y, y.itemsize), y
        assert name in ("head view", "head view transposed", "a column"), name
    op, ld, stride = got
    np.testing.assert_array_equal(_read(x, op, ld, stride), x)


def test_mm_is_the_product_off_the_gpu():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 2))
    with gemm.own_cublas():
        assert gemm.active()
        np.testing.assert_array_equal(gemm.mm(a, b), a @ b)
    assert not gemm.active()
    np.testing.assert_array_equal(gemm.mm(a, b), a @ b)
