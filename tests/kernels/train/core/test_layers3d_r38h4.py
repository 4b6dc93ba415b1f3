"""Round 38 (h4): ``ReflectionPad3d``, ``ReplicationPad3d``, ``CircularPad3d``,
``AdaptiveMaxPool3d``/``adaptive_max_pool3d``, ``LPPool3d``/``lp_pool3d`` against torch 2.13
(values and input gradients, float64), ``FeatureAlphaDropout`` by its law (whole channels
dropped to one constant, mean and variance of a standard-normal input kept, identity in
eval) next to torch's."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)
X = R.normal(size=(2, 3, 5, 6, 7))


@pytest.mark.parametrize("make", [
    lambda nn: nn.ReflectionPad3d((1, 2, 0, 1, 2, 1)), lambda nn: nn.ReplicationPad3d(2),
    lambda nn: nn.CircularPad3d((1, 0, 2, 1, 1, 2)), lambda nn: nn.AdaptiveMaxPool3d((2, 4, 3)),
    lambda nn: nn.AdaptiveMaxPool3d((5, None, 7)), lambda nn: nn.AdaptiveMaxPool3d(1),
    lambda nn: nn.LPPool3d(2, (2, 3, 2), stride=(1, 2, 2)), lambda nn: nn.LPPool3d(1.5, 2)])
def test_3d_layers_are_torchs(make):
    w = None
    outs = []
    for lib in (torch, skiff):
        x = lib.tensor(np.abs(X) if isinstance(make(lib.nn), lib.nn.LPPool3d) else X,
                       requires_grad=True)
        y = make(lib.nn)(x)
        if w is None:
            w = R.normal(size=tuple(y.shape))
        (y * lib.tensor(w)).sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy()))
    for a, b in zip(outs[1], outs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(skiff.nn.functional.adaptive_max_pool3d(
        skiff.tensor(X[0]), 2).numpy(), torch.nn.functional.adaptive_max_pool3d(
        torch.tensor(X[0]), 2).numpy())


def test_feature_alpha_dropout_drops_whole_channels_with_torchs_law():
    skiff.manual_seed(0)
    torch.manual_seed(0)
    x = R.normal(size=(400, 8, 4, 4))
    p = 0.3
    for lib in (skiff, torch):
        m = lib.nn.FeatureAlphaDropout(p)
        y = m(lib.tensor(x)).numpy()
        alpha = -1.6732632423543772 * 1.0507009873554805
        a = ((1 - p) * (1 + p * alpha * alpha)) ** -0.5
        kept = np.isclose(y, a * x + (-a * alpha * p)).all(axis=(2, 3))
        dropped = np.isclose(y, a * alpha + (-a * alpha * p)).all(axis=(2, 3))
        assert (kept ^ dropped).all()  # a channel is kept or dropped whole
        assert abs(dropped.mean() - p) < 0.03
        assert abs(y.mean()) < 0.03 and abs(y.var() - 1) < 0.05
        m.eval()
        np.testing.assert_array_equal(m(lib.tensor(x)).numpy(), x)
    with pytest.raises(ValueError, match="between 0 and 1"):
        skiff.nn.functional.feature_alpha_dropout(skiff.tensor(x), 1.5, training=True)
