"""The fused numba kernels against their plain-xp reference twins (check_op)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.backend import numba_available
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.nn import fused

TOL = {np.float32: (2e-5, 2e-6), np.float64: (1e-12, 1e-13)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_twins(dtype, affine):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((37, 24)) * 3 + 1).astype(dtype)
    w = rng.standard_normal(24).astype(dtype) if affine else None
    b = rng.standard_normal(24).astype(dtype) if affine else None
    rtol, atol = TOL[dtype]
    names = check_op(fused.layer_norm_fwd, x, w, b, 1e-5, rtol=rtol, atol=atol,
                     require_fast=numba_available())
    _, xhat, rstd = fused.layer_norm_fwd.reference(x, w, b, 1e-5)
    g = rng.standard_normal((37, 24)).astype(dtype)
    names += check_op(fused.layer_norm_bwd, g, xhat, rstd, w, rtol=rtol * 10, atol=atol * 10,
                      require_fast=numba_available())
    assert names == (["numba", "numba"] if numba_available() else [])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_grad_twins(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((5, 7, 11)) * 3).astype(dtype)
    g = rng.standard_normal((5, 7, 11)).astype(dtype)
    rtol, atol = TOL[dtype]
    check_op(fused.gelu_tanh_grad, x, g, rtol=rtol * 10, atol=atol * 10,
             require_fast=numba_available())


def test_non_contiguous_input_falls_back_to_reference():
    x = np.random.default_rng(2).standard_normal((8, 6)).astype(np.float32)[:, ::2]
    y, _, _ = fused.layer_norm_fwd(x, None, None, 1e-5)
    ref, _, _ = fused.layer_norm_fwd.reference(x, None, None, 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_rows_twins_with_repeated_and_negative_indices(dtype):
    from skiff.kernels.train.core.nn.fused import scatter_rows

    rng = np.random.default_rng(4)
    target = rng.standard_normal((17, 6)).astype(dtype)
    index = rng.integers(-17, 17, size=300)  # many repeats, some negative
    values = rng.standard_normal((300, 6)).astype(dtype)
    assert check_op(scatter_rows, target, index, values, rtol=1e-5 if dtype == np.float32
                    else 1e-12, atol=1e-5, require_fast=numba_available())
    with pytest.raises(IndexError):  # out of range: numpy's error, not a write past the end
        scatter_rows(target.copy(), np.array([0, 17]), values[:2])


def test_embedding_gradient_matches_torch():
    import torch

    from skiff.kernels.train.core.nn.functional import embedding
    from skiff.kernels.train.core.tensor import Tensor

    rng = np.random.default_rng(5)
    w = rng.standard_normal((11, 4)).astype(np.float32)
    idx = rng.integers(0, 11, size=(3, 9))
    g = rng.standard_normal((3, 9, 4)).astype(np.float32)
    tw = Tensor(w, requires_grad=True)
    embedding(idx, tw).backward(g)
    ref = torch.tensor(w, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(idx), ref).backward(torch.tensor(g))
    np.testing.assert_allclose(np.asarray(tw.grad), ref.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_forward_twins_including_the_tails(dtype):
    """The CPU twin computes x / (1 + exp(-2u)) (numpy's exp is SIMD where its tanh is not);
    the reference 0.5 x (1 + tanh u). Far tails overflow exp to inf on purpose: no warning."""
    import warnings

    rng = np.random.default_rng(6)
    x = np.concatenate([rng.standard_normal(1000) * 4, [-1e4, -60.0, -20.0, 0.0, 20.0, 1e4]])
    x = x.astype(dtype)
    rtol, atol = TOL[dtype]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_op(fused.gelu_tanh, x, rtol=rtol * 10, atol=atol * 10, require_fast=True)
        g = rng.standard_normal(x.size).astype(dtype)
        assert check_op(fused.gelu_tanh_grad, x, g, rtol=rtol * 10, atol=atol * 10,
                        require_fast=numba_available())
