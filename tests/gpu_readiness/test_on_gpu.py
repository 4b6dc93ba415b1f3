"""The fixes of this folder, run for real on a GPU (these skip without one)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.backend import cupy, to_numpy
from skiff.kernels.backend.testing import check_op

pytestmark = pytest.mark.gpu


def test_cuda_sources_load_and_every_kernel_resolves():
    from skiff.kernels.solve import cuda as solve_cuda
    from skiff.kernels.train.core import packed_attention as PA

    for sfx in ("f32", "f64"):
        for k in ("fwd", "bwd_dq", "bwd_dkdv"):
            assert PA._module().get_function(f"packed_attn_{k}_{sfx}") is not None
    for name in ("apply_var", "apply_const", "gs_var", "gs_const", "residual_restrict_var",
                 "residual_restrict_const", "prolong_add", "restrict_t", "residual_const",
                 "axpy_norm", "jacobi_dot", "csr_spmv", "dot"):
        assert solve_cuda.module().get_function(name) is not None


@pytest.mark.parametrize("heads", [1, 3])
def test_packed_attention_gpu_matches_cpu(heads):
    from skiff.kernels.train.core import packed_attention as PA

    cp = cupy()
    rng = np.random.default_rng(0)
    lens = [4, 1, 6]
    total = sum(lens)
    cu = np.concatenate([[0], np.cumsum(lens)])
    q, k, v, g = (rng.standard_normal((total, heads, 8)) for _ in range(4))
    want_o, want_lse = PA.packed_attention_fwd.reference(q.copy(), k, v, cu, 0.3)
    qd, kd, vd, gd = (cp.asarray(a) for a in (q, k, v, g))
    o, lse = PA.packed_attention_fwd(qd, kd, vd, cu, 0.3)
    np.testing.assert_allclose(to_numpy(o), want_o, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(qd), q)  # the input is left alone
    assert check_op(PA.packed_attention_bwd, qd, kd, vd, o, lse, gd, cu, 0.3, rtol=1e-9,
                    atol=1e-11, require_fast=True)


def test_adamw_gpu_with_a_float64_gradient_on_float32_weights():
    from skiff.kernels.train.core import optim

    cp = cupy()
    rng = np.random.default_rng(1)
    p, m = (cp.asarray(rng.standard_normal(9), dtype=cp.float32) for _ in range(2))
    v = cp.abs(cp.asarray(rng.standard_normal(9), dtype=cp.float32))
    g = cp.asarray(rng.standard_normal(9))
    assert check_op(optim.adamw_update, p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.01, 2,
                    rtol=1e-5, atol=1e-7, require_fast=True)


def test_mpi_comm_takes_device_arrays():
    pytest.importorskip("mpi4py")
    from skiff.kernels.train.parallel import MPIComm

    cp = cupy()
    comm = MPIComm()
    x = cp.arange(6, dtype=cp.float32)
    assert comm.allreduce_(x, "mean") is x
    out = comm.allgather(x)
    assert isinstance(out, cp.ndarray) and out.shape == (comm.size, 6)


def test_autograd_op_with_a_host_operand():
    from skiff.kernels.train.core.tensor import Tensor

    a = Tensor(np.arange(3.0), device="cuda", requires_grad=True)
    out = (a * np.array([1.0, 2.0, 3.0])).sum()
    out.backward()
    np.testing.assert_allclose(to_numpy(a.grad), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_solver_matrix_on_the_gpu_is_float64(dtype):
    import scipy.sparse as sp

    from skiff.kernels.solve.operators import matrix_on

    cp = cupy()
    A = sp.diags([2.0, 3.0, 4.0]).astype(dtype)
    for given in (A, A.toarray(), cp.asarray(A.toarray())):
        M = matrix_on(given, cp)
        assert M.dtype == np.float64
        np.testing.assert_array_equal(to_numpy(M.toarray()), A.toarray())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,c", [(3, 5), (700, 48), (2, 1500)])
@pytest.mark.parametrize("affine", [True, False])
def test_fused_layer_norm_gpu_matches_reference(dtype, n, c, affine):
    from skiff.kernels.train.core.nn import fused

    cp = cupy()
    rng = np.random.default_rng(7)
    x = cp.asarray(rng.standard_normal((n, c)) * 3 + 1, dtype=dtype)
    w = cp.asarray(rng.standard_normal(c), dtype=dtype) if affine else None
    b = cp.asarray(rng.standard_normal(c), dtype=dtype) if affine else None
    tol = {"rtol": 2e-4, "atol": 2e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    assert check_op(fused.layer_norm_fwd, x, w, b, 1e-5, require_fast=True, **tol)
    _, xhat, rstd = fused.layer_norm_fwd.reference(x, w, b, 1e-5)
    g = cp.asarray(rng.standard_normal((n, c)), dtype=dtype)
    assert check_op(fused.layer_norm_bwd, g, xhat, rstd, w, require_fast=True, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_gelu_and_sum_squares_gpu_match_reference(dtype):
    from skiff.kernels.train.core.nn import fused

    cp = cupy()
    rng = np.random.default_rng(8)
    x = cp.asarray(rng.standard_normal((37, 19)) * 3, dtype=dtype)
    g = cp.asarray(rng.standard_normal((37, 19)), dtype=dtype)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-14}
    assert check_op(fused.gelu_tanh, x, require_fast=True, **tol)
    assert check_op(fused.gelu_tanh_grad, x, g, require_fast=True, **tol)
    arrays = [cp.asarray(rng.standard_normal(s), dtype=dtype) for s in ((3, 4), (300_001,), (0,))]
    assert check_op(fused.sum_squares, *arrays, require_fast=True, atol=0,
                    rtol=1e-5 if dtype == np.float32 else 1e-10)  # cuBLAS sdot sums in float


def test_solve_csr_product_and_dot_on_the_gpu_match_the_references():
    import cupyx.scipy.sparse as csp
    import scipy.sparse as sp

    from skiff.kernels.solve import cuda as solve_cuda
    from skiff.kernels.solve import fused

    cp = cupy()
    rng = np.random.default_rng(9)
    A = sp.random(3000, 2000, density=0.005, format="csr", random_state=1)
    Ad = csp.csr_matrix(A)
    x = cp.asarray(rng.standard_normal(2000))
    out = cp.empty(3000)
    assert check_op(fused.csr_matvec, Ad.indptr, Ad.indices, Ad.data, x, out, rtol=1e-12,
                    atol=1e-14, require_fast=True)
    D = solve_cuda.device_csr(Ad)
    np.testing.assert_allclose(to_numpy(D @ x), A @ to_numpy(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(to_numpy(D @ x[::1]), to_numpy(Ad @ x), rtol=1e-12, atol=1e-14)
    X = cp.asarray(rng.standard_normal((2000, 3)))  # a block of vectors: cupyx's product
    np.testing.assert_allclose(to_numpy(D @ X), A @ to_numpy(X), rtol=1e-12, atol=1e-14)
    y = cp.asarray(rng.standard_normal(2000))
    assert check_op(fused.dot, x, y, rtol=1e-12, atol=1e-12, require_fast=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multi_tensor_adamw_and_clipping_on_the_gpu_match_the_references(dtype):
    from skiff.kernels.train.core import optim
    from skiff.kernels.train.core.nn import fused

    cp = cupy()
    rng = np.random.default_rng(10)
    shapes = [(3, 4), (300_001,), (0,), (17, 5)]
    arrays = []
    for shape in shapes:
        p, g, m = (cp.asarray(rng.standard_normal(shape), dtype=dtype) for _ in range(3))
        arrays += [p, g, m, cp.abs(cp.asarray(rng.standard_normal(shape), dtype=dtype))]
    tol = {"rtol": 1e-5, "atol": 1e-7} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-14}
    assert check_op(optim.adamw_many, *arrays, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                    weight_decay=0.01, steps=(1, 5, 2, 9), require_fast=True, **tol)
    grads = arrays[1::4]
    assert check_op(fused.scale_many, *grads, coef=0.37, require_fast=True, **tol)
    assert check_op(fused.sum_squares, *grads, require_fast=True, atol=0,
                    rtol=1e-5 if dtype == np.float32 else 1e-10)
