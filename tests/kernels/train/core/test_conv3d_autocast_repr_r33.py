"""3-D convolutions under CPU autocast and the 3-D layers' printed forms, as torch 2.13's
(round 33: conv2d gained both (h15); Conv3d / ConvTranspose3d computed float32 under
autocast and printed `padding=(0, 0, 0)`, MaxPool3d / AvgPool3d printed nothing)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
import skiff.nn.functional as F  # noqa: E402

BF16_TOL = 2e-2


def _pair(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return skiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


@pytest.mark.parametrize("op", ["conv3d", "conv_transpose3d"])
def test_3d_convs_under_autocast_as_torch(op):
    xs, xt = _pair((1, 2, 4, 4, 4), 0)
    wshape = (3, 2, 2, 2, 2) if op == "conv3d" else (2, 3, 2, 2, 2)
    ws, wt = _pair(wshape, 1)
    with skiff.autocast("cpu", dtype=skiff.bfloat16):
        ys = getattr(F, op)(xs, ws)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        yt = getattr(torch.nn.functional, op)(xt, wt)
    assert str(ys.dtype).split(".")[-1] == str(yt.dtype).split(".")[-1] == "bfloat16"
    got = np.asarray(ys.float().detach().numpy())
    want = yt.float().detach().numpy()
    np.testing.assert_allclose(got, want, atol=BF16_TOL * np.abs(want).max())
    ys.float().sum().backward()
    yt.float().sum().backward()
    for a, b in ((xs, xt), (ws, wt)):
        assert str(a.grad.dtype).split(".")[-1] == str(b.grad.dtype).split(".")[-1]
        np.testing.assert_allclose(np.asarray(a.grad.numpy()), b.grad.numpy(),
                                   atol=BF16_TOL * np.abs(b.grad.numpy()).max())


@pytest.mark.parametrize("name,args,kwargs", [
    ("Conv3d", (2, 3, 3), {}), ("Conv3d", (2, 3, (1, 3, 3)), {"padding": 1, "bias": False}),
    ("ConvTranspose3d", (2, 3, 3), {}),
    ("ConvTranspose3d", (2, 3, 3), {"stride": 2, "output_padding": 1}),
    ("MaxPool3d", (2,), {}), ("MaxPool3d", ((2, 1, 2),), {"stride": 1, "padding": (1, 0, 1)}),
    ("AvgPool3d", (2,), {}), ("AvgPool3d", (3, 2, 1), {}),
])
def test_3d_layers_print_as_torch(name, args, kwargs):
    assert repr(getattr(skiff.nn, name)(*args, **kwargs)) == \
        repr(getattr(torch.nn, name)(*args, **kwargs))
