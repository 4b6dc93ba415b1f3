"""index_select and Tensor.unfold with a negative dim (x.unfold(-1, size, step) frames a
signal; index_select(-1, ...) picks columns): both took axis 0; oracle torch 2.13."""

import numpy as np
import pytest
import torch

import skiff


def _np(t):
    return np.asarray(t.detach().numpy())


@pytest.mark.parametrize("dim", [-1, -2, 1, 0])
def test_index_select_negative_dim_values_and_gradients(dim):
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    idx = np.array([2, 0, 2])
    tx, sx = torch.tensor(x, requires_grad=True), skiff.tensor(x, requires_grad=True)
    to = tx.index_select(dim, torch.tensor(idx))
    so = sx.index_select(dim, skiff.tensor(idx))
    np.testing.assert_array_equal(_np(so), _np(to))
    np.testing.assert_array_equal(_np(skiff.index_select(sx, dim, skiff.tensor(idx))), _np(to))
    (to * 2).sum().backward()
    (so * 2).sum().backward()
    np.testing.assert_array_equal(_np(sx.grad), _np(tx.grad))


@pytest.mark.parametrize("dim,size,step", [(-1, 4, 2), (-2, 2, 1), (1, 3, 3)])
def test_unfold_negative_dim(dim, size, step):
    x = np.random.default_rng(1).standard_normal((2, 5, 9))
    tx, sx = torch.tensor(x, requires_grad=True), skiff.tensor(x, requires_grad=True)
    to, so = tx.unfold(dim, size, step), sx.unfold(dim, size, step)
    assert tuple(so.shape) == tuple(to.shape)
    np.testing.assert_array_equal(_np(so), _np(to))
    w = np.random.default_rng(2).standard_normal(tuple(to.shape))
    (to * torch.tensor(w)).sum().backward()
    (so * skiff.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(sx.grad), _np(tx.grad), rtol=1e-14)


def test_index_select_out_of_range_dim_is_refused():
    with pytest.raises(IndexError, match="out of range"):
        skiff.ones(2, 3).index_select(2, skiff.tensor(np.array([0])))
