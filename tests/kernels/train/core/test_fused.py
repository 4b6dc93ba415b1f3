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
