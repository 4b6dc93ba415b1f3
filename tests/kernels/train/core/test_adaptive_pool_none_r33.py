"""`nn.AdaptiveAvgPool2d((None, 4))` keeps the height, as torch's (round 33: the functional
form took None and sizes that do not divide, the module's constructor refused None with a
TypeError). The oracle: torch 2.13's module on the same input, values and gradients."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402


@pytest.mark.parametrize("size", [(None, 4), (3, None), (2, 3), 4, (5, 7)])
def test_module_output_size_as_torch(size):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 7))
    ours = skiff.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    a = skiff.nn.AdaptiveAvgPool2d(size)(ours)
    b = torch.nn.AdaptiveAvgPool2d(size)(theirs)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(b.shape))
    (a * skiff.tensor(w)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(np.asarray(ours.grad.numpy()), theirs.grad.numpy(), atol=1e-12)
