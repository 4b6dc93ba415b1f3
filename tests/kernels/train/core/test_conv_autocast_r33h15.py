"""Round 33 (h15): convolutions under CPU autocast and on bfloat16 inputs, as torch 2.13:
bfloat16 in, bfloat16 out (im2col, Winograd-sized, depthwise and grouped layers), float32
accumulation, gradients in each leaf's dtype."""
import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

CASES = [  # (x shape, w shape, groups, padding)
    ((2, 3, 7, 7), (4, 3, 3, 3), 1, 1),
    ((2, 8, 6, 6), (4, 8, 1, 1), 1, 0),
    ((2, 16, 8, 8), (16, 16, 3, 3), 1, 1),  # Winograd's shape in float32
    ((2, 8, 6, 6), (8, 1, 3, 3), 8, 1),  # depthwise
    ((2, 8, 6, 6), (8, 4, 3, 3), 2, 0),  # grouped
]


def _arrays(xs, ws, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(xs).astype(np.float32),
            (rng.standard_normal(ws) * 0.2).astype(np.float32),
            rng.standard_normal(ws[0]).astype(np.float32))


def _bf(a):
    return np.asarray(a.float().detach().numpy(), np.float32)


@pytest.mark.parametrize("xs,ws,groups,pad", CASES)
def test_conv2d_bfloat16_inputs_give_bfloat16_as_torch(xs, ws, groups, pad):
    x, w, b = _arrays(xs, ws)
    out = {}
    for lib in (skiff, torch):
        args = [lib.tensor(a).to(lib.bfloat16).requires_grad_() for a in (x, w, b)]
        y = lib.nn.functional.conv2d(*args, padding=pad, groups=groups)
        (y.float() ** 2).sum().backward()
        out[lib.__name__] = (y, [a.grad for a in args])
    (ys, gs), (yt, gt) = out["skiff"], out["torch"]
    assert str(ys.dtype) == "bfloat16" and yt.dtype == torch.bfloat16
    np.testing.assert_allclose(_bf(ys), _bf(yt), rtol=2e-2, atol=2e-2)
    for a, c in zip(gs, gt):
        assert str(a.dtype) == "bfloat16" and c.dtype == torch.bfloat16
        np.testing.assert_allclose(_bf(a), _bf(c), rtol=3e-2, atol=0.05 * np.abs(_bf(c)).max())


@pytest.mark.parametrize("xs,ws,groups,pad", CASES)
def test_conv2d_under_autocast_as_torch(xs, ws, groups, pad):
    x, w, b = _arrays(xs, ws, 1)
    out = {}
    for lib in (skiff, torch):
        args = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        with lib.autocast("cpu", dtype=lib.bfloat16):
            y = lib.nn.functional.conv2d(*args, padding=pad, groups=groups)
        (y.float() ** 2).sum().backward()
        out[lib.__name__] = (y, [a.grad for a in args])
    (ys, gs), (yt, gt) = out["skiff"], out["torch"]
    assert str(ys.dtype) == "bfloat16" and yt.dtype == torch.bfloat16
    np.testing.assert_allclose(_bf(ys), _bf(yt), rtol=2e-2, atol=2e-2)
    for a, c in zip(gs, gt):  # float32 leaves: float32 gradients
        assert str(a.dtype) == "float32" and c.dtype == torch.float32
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=3e-2,
                                   atol=0.05 * np.abs(c.numpy()).max())


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.Conv1d(8, 2, 1), (2, 8, 5)),
    (lambda nn: nn.Conv1d(4, 4, 3, groups=2, padding=1), (2, 4, 6)),
    (lambda nn: nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect"), (1, 4, 5, 5)),
    (lambda nn: nn.Conv2d(4, 4, 3, dilation=2, padding="same"), (1, 4, 6, 6)),
    (lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2), (1, 4, 4, 4)),
])
def test_conv_modules_under_autocast_give_bfloat16(make, shape):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    ys = {}
    for lib in (skiff, torch):
        lib.manual_seed(0)
        m = make(lib.nn)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            ys[lib.__name__] = (m, m(lib.tensor(x)))
    (ms, ys_), (mt, yt) = ys["skiff"], ys["torch"]
    assert str(ys_.dtype) == "bfloat16" and yt.dtype == torch.bfloat16
    # torch's weights: the same output within bfloat16 rounding
    ms.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in mt.state_dict().items()})
    with skiff.autocast("cpu", dtype=skiff.bfloat16):
        ys_ = ms(skiff.tensor(x))
    np.testing.assert_allclose(_bf(ys_), _bf(yt), rtol=2e-2, atol=3e-2)


def test_autocast_leaves_float64_and_plain_float32_alone():
    x = skiff.randn(1, 2, 5, 5, dtype=skiff.float64)
    w = skiff.randn(3, 2, 3, 3, dtype=skiff.float64)
    with skiff.autocast("cpu", dtype=skiff.bfloat16):
        assert str(skiff.nn.functional.conv2d(x, w).dtype) == "float64"
    assert str(skiff.nn.functional.conv2d(x.float(), w.float()).dtype) == "float32"
