"""Round 28: ``F.affine_grid`` (2-D and 3-D) and ``F.grid_sample`` (bilinear and nearest;
zeros, border and reflection padding; both ``align_corners``) against torch 2.13 in float64:
values and the gradients of the input, the grid and ``theta``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(282)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _close(a, b, tol=1e-11):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _run(fn, *arrays):
    res = []
    for lib in (skiff, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *ts)
        G = np.cos(np.arange(out.numel()) * 0.7).reshape(tuple(out.shape))
        (out * lib.tensor(G)).sum().backward()
        res.append([out] + [t.grad for t in ts])
    for a, b in zip(*res):
        _close(a, b)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_against_torch(mode, padding, align):
    x = RNG.standard_normal((2, 3, 5, 6))
    # points inside, outside (up to 2.5 widths: several reflections) and off the pixel grid
    grid = RNG.uniform(-2.5, 2.5, (2, 4, 7, 2))

    def fn(lib, x, grid):
        return lib.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding,
                                             align_corners=align)

    _run(fn, x, grid)


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_2d_and_3d_through_grid_sample(align):
    theta = np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, -0.2]],
                      [[1.2, -0.3, 0.0], [0.25, 0.8, 0.3]]])
    x = RNG.standard_normal((2, 2, 6, 5))

    def fn(lib, theta, x):
        grid = lib.nn.functional.affine_grid(theta, (2, 2, 4, 3), align_corners=align)
        return lib.nn.functional.grid_sample(x, grid, align_corners=align)

    _run(fn, theta, x)
    theta3 = RNG.standard_normal((2, 3, 4))
    _run(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 1, 3, 4, 2), align_corners=align),
         theta3)


def test_grid_sample_errors_name_the_fix():
    x = skiff.ones(1, 1, 3, 3)
    # round 35: bicubic is supported (test_grid_bicubic_r35h4.py); an unknown mode names them
    with pytest.raises(ValueError, match="'bilinear', 'nearest' or 'bicubic'"):
        skiff.nn.functional.grid_sample(x, skiff.zeros(1, 2, 2, 2), mode="cubic")
    with pytest.raises(ValueError, match="grid \\(N, Ho, Wo, 2\\)"):
        skiff.nn.functional.grid_sample(x, skiff.zeros(1, 2, 2, 3))
    with pytest.raises(ValueError, match="theta"):
        skiff.nn.functional.affine_grid(skiff.zeros(1, 2, 3), (1, 1, 2, 2, 2))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_affine_grid_identity_is_bit_identical_to_torchs(dtype):
    """torch's linspace (two halves, fused multiply-adds) and its (n - 1) / n scaling: numpy's
    linspace is an ulp away at some points, which moves a point across a border's kink."""
    for n in (2, 3, 7, 13, 50, 101):
        for align in (False, True):
            eye = np.eye(2, 3)[None]
            a = torch.nn.functional.affine_grid(torch.tensor(eye, dtype=getattr(torch, dtype)),
                                                (1, 1, n, 3), align_corners=align)
            b = skiff.nn.functional.affine_grid(skiff.tensor(eye, dtype=getattr(skiff, dtype)),
                                                (1, 1, n, 3), align_corners=align)
            np.testing.assert_array_equal(_np(b), _np(a))
