"""Round 37: a layer given a raw numpy array (float64, as numpy makes them) computes in the
layer's dtype, as skiff did before torch's refusal of two dtypes came in (h4): a hand-written
loop on numpy data failed with "expected m1 and m2 to have the same dtype" (CI at ede34c72).
A float64 Tensor is still refused as torch refuses it. Oracle: torch's layer with the same
weights on the input cast to float32."""

from __future__ import annotations

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def test_a_linear_layer_takes_a_float64_numpy_batch_in_its_dtype():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5))
    layer = skiff.nn.Linear(5, 3)
    out = layer(x)
    assert out.dtype == np.float32
    ref = torch.nn.Linear(5, 3)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.numpy()))
        ref.bias.copy_(torch.tensor(layer.bias.numpy()))
        want = ref(torch.tensor(x, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="same dtype"):
        layer(skiff.tensor(x, dtype=skiff.float64))   # a float64 Tensor: torch's refusal


def test_a_conv_layer_takes_a_float64_numpy_batch_in_its_dtype():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, 7, 7))
    layer = skiff.nn.Conv2d(2, 3, 3, padding=1)
    out = layer(x)
    assert out.dtype == np.float32
    ref = torch.nn.Conv2d(2, 3, 3, padding=1)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.numpy()))
        ref.bias.copy_(torch.tensor(layer.bias.numpy()))
        want = ref(torch.tensor(x, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
