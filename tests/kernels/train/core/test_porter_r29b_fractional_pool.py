"""FractionalMaxPool2d / F.fractional_max_pool2d against torch 2.13 given the same
_random_samples: values, indices and gradients (output_size and output_ratio, 3-D input)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import skiff
import skiff.nn.functional as SF


def _np(t):
    return np.asarray(t.detach().numpy())


@pytest.mark.parametrize("shape,k,kw", [
    ((2, 3, 11, 9), 2, {"output_size": (5, 4)}),
    ((2, 3, 11, 9), (3, 2), {"output_ratio": (0.5, 0.5)}),
    ((3, 10, 10), 3, {"output_size": 1}),
    ((1, 2, 7, 12), 2, {"output_ratio": (0.7, 0.4)}),
])
def test_values_indices_and_gradients_match_torch(shape, k, kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    n, c = (1, shape[0]) if len(shape) == 3 else shape[:2]
    u = rng.random((n, c, 2))
    tx, sx = torch.tensor(x, requires_grad=True), skiff.tensor(x, requires_grad=True)
    tv, ti = TF.fractional_max_pool2d(tx, k, return_indices=True,
                                      _random_samples=torch.tensor(u), **kw)
    sv, si = SF.fractional_max_pool2d(sx, k, return_indices=True,
                                      _random_samples=skiff.tensor(u), **kw)
    np.testing.assert_array_equal(_np(sv), _np(tv))
    np.testing.assert_array_equal(_np(si), _np(ti))
    w = rng.standard_normal(tuple(tv.shape))
    (tv * torch.tensor(w)).sum().backward()
    (sv * skiff.tensor(w)).sum().backward()
    np.testing.assert_array_equal(_np(sx.grad), _np(tx.grad))


def test_module_draws_its_own_samples_and_refuses_bad_settings():
    m = skiff.nn.FractionalMaxPool2d(2, output_ratio=0.5)
    y = m(skiff.tensor(np.random.default_rng(1).standard_normal((2, 1, 8, 8))))
    assert tuple(y.shape) == tuple(torch.nn.FractionalMaxPool2d(2, output_ratio=0.5)(
        torch.zeros(2, 1, 8, 8)).shape)
    with pytest.raises(ValueError, match="output size, or a pooling ratio"):
        skiff.nn.FractionalMaxPool2d(2)
    with pytest.raises(RuntimeError, match="too large"):
        SF.fractional_max_pool2d(skiff.ones(1, 1, 4, 4), 3, output_size=3)
