"""The AVX512-BF16 GEMM of a bfloat16 model's prompt (``ernie_bf16dot``, round 32).

Oracles: the float64 product of the same bfloat16 values (numpy), torch's float32 linear on
them, and the reference twin of ``bf16_rows_matmul``. Each ``vdpbf16ps`` product of two bf16
numbers is exact in float32, so only the float32 sums' order differs (a few ulp of the
row's scale). Where the CPU lacks the instruction the kernel says so and is skipped.
"""

from __future__ import annotations

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")
torch = pytest.importorskip("torch")
from skiff.kernels.train.models import ernie_bf16dot  # noqa: E402
from skiff.kernels.train.models.ernie_kernels import bf16_rows_matmul  # noqa: E402

needs = pytest.mark.skipif(not ernie_bf16dot.available(), reason="no AVX512-BF16 here")


def _pair(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16).astype(np.float32)
    w = (rng.standard_normal((N, K)) * 0.05).astype(ml_dtypes.bfloat16)
    return x, w


@needs
@pytest.mark.parametrize("M,N,K", [(17, 33, 6), (24, 64, 128), (130, 200, 96), (8, 50, 64),
                                   (16, 24 * 3, 256), (11, 7, 2),
                                   (300, 96, 64), (41, 7, 2), (600, 64, 40)])
def test_bf16_dot_equals_the_product_of_the_bf16_values(M, N, K):
    x, w = _pair(M, N, K)
    got = ernie_bf16dot.matmul(x, w)
    assert got.shape == (M, N) and got.dtype == np.float32 and got.flags.c_contiguous
    want = x.astype(np.float64) @ w.astype(np.float64).T
    scale = np.abs(x).astype(np.float64) @ np.abs(w.astype(np.float64)).T
    assert np.all(np.abs(got - want) <= 1e-6 * scale + 1e-30)
    tw = torch.from_numpy(w.astype(np.float32))
    ref = torch.nn.functional.linear(torch.from_numpy(x), tw).numpy()
    assert np.all(np.abs(got - ref) <= 2e-6 * scale + 1e-30)
    np.testing.assert_allclose(bf16_rows_matmul(x, w), bf16_rows_matmul.reference(x, w),
                               rtol=0, atol=float(1e-6 * scale.max()))


@needs
def test_values_that_are_not_bf16_or_an_odd_width_keep_the_float32_path():
    x, w = _pair(20, 32, 64)
    x[3, 5] += 1e-4  # not a bfloat16 any more: the exact float32 product, not the dot
    assert ernie_bf16dot.matmul(x, w) is None
    got = bf16_rows_matmul(x, w)
    want = x.astype(np.float64) @ w.astype(np.float64).T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    x, w = _pair(20, 32, 63)
    assert ernie_bf16dot.matmul(x, w) is None
    np.testing.assert_allclose(bf16_rows_matmul(x, w),
                               x.astype(np.float64) @ w.astype(np.float64).T,
                               rtol=1e-5, atol=1e-6)


def test_the_kernel_says_whether_it_runs_here():
    import llvmlite.binding as ll

    assert ernie_bf16dot.available() == bool(ll.get_host_cpu_features().get("avx512bf16"))


@needs
@pytest.mark.parametrize("threads", [0, 2, 3])
def test_threads_split_w_and_give_the_same_numbers(threads):
    x, w = _pair(70 if threads != 3 else 12, 24 * 40 + 5, 96)
    one = ernie_bf16dot.matmul(x, w, threads=1)
    np.testing.assert_array_equal(ernie_bf16dot.matmul(x, w, threads=threads), one)
    want = x.astype(np.float64) @ w.astype(np.float64).T
    scale = np.abs(x).astype(np.float64) @ np.abs(w.astype(np.float64)).T
    assert np.all(np.abs(one - want) <= 1e-6 * scale + 1e-30)


@pytest.mark.parametrize("M", [10, 40])
def test_without_the_instruction_the_float32_paths_answer(monkeypatch, M):
    monkeypatch.setattr(ernie_bf16dot, "_kernel", lambda: None)  # a CPU without avx512_bf16
    assert not ernie_bf16dot.available()
    x, w = _pair(M, 50, 64)
    assert ernie_bf16dot.matmul(x, w) is None
    want = x.astype(np.float64) @ w.astype(np.float64).T
    np.testing.assert_allclose(bf16_rows_matmul(x, w), want, rtol=1e-5, atol=1e-5)
