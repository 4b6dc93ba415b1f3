"""ConvTranspose2d and Upsample against torch's (float64, outputs and gradients), and a small
convolutional autoencoder that learns to reconstruct with them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.train.core import nn
from skiff.kernels.train.core.tensor import Tensor

TOL = {"rtol": 1e-10, "atol": 1e-12}


@pytest.mark.parametrize("kw", [
    {"kernel_size": 3},
    {"kernel_size": 3, "stride": 2, "padding": 1, "output_padding": 1},
    {"kernel_size": (2, 4), "stride": (2, 3), "padding": (0, 2)},
    {"kernel_size": 4, "stride": 2, "padding": 3},
    {"kernel_size": 2, "stride": 2, "bias": False},
])
def test_conv_transpose_equals_torch(kw):
    torch.manual_seed(0)
    t = torch.nn.ConvTranspose2d(3, 5, **kw).double()
    m = nn.ConvTranspose2d(3, 5, dtype=np.float64, **kw)
    assert list(m.state_dict()) == list(t.state_dict())
    m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 7))
    xs, xt = Tensor(x, requires_grad=True, dtype=np.float64), torch.tensor(x, requires_grad=True)
    y, yt = m(xs), t(xt)
    assert y.shape == tuple(yt.shape)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), **TOL)
    for (name, p), tp in zip(m.named_parameters(), t.parameters()):
        np.testing.assert_allclose(p.grad, tp.grad.numpy(), err_msg=name, **TOL)


def test_upsample_equals_torch_and_bad_settings_are_named():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5))
    xs, xt = Tensor(x, requires_grad=True, dtype=np.float64), torch.tensor(x, requires_grad=True)
    y, yt = nn.Upsample((2, 3))(xs), torch.nn.Upsample(scale_factor=(2, 3))(xt)
    np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), **TOL)
    # round 28: bilinear (refused before) is torch's (test_porter_r28_signatures.py)
    with pytest.raises(ValueError, match="must be smaller than the stride"):
        nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=2)


def test_a_convolutional_autoencoder_learns_to_reconstruct():
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.trainer import Trainer

    rng = np.random.default_rng(2)
    imgs = np.zeros((256, 1, 8, 8), np.float32)
    for k, (r, c) in enumerate(rng.integers(1, 6, (256, 2))):
        imgs[k, 0, r:r + 2, c:c + 2] = 1.0  # a 2x2 square somewhere
    train_random.seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),
                          nn.ConvTranspose2d(8, 1, 4, stride=2, padding=1))
    trainer = Trainer(model, lr=1e-2, batch_size=32, loss="mse")
    before = trainer.evaluate((imgs, imgs))["val_loss"]
    trainer.train((imgs, imgs), epochs=10)  # (20 until round 41: 0.06 of it at 10)
    after = trainer.evaluate((imgs, imgs))["val_loss"]
    assert after < 0.2 * before, (before, after)
