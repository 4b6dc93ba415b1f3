"""Round 35 (h4): ``F.grid_sample(mode="bicubic")`` (it was refused) against torch 2.13:
values, the input's and the grid's gradients for each padding mode and ``align_corners``,
float64 and float32 (torch's: the grid unnormalized only, each of the 16 taps padded, cubic
convolution with A = -0.75)."""

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402

R = np.random.default_rng(358)


@pytest.mark.parametrize("padding,align", list(itertools.product(
    ["zeros", "border", "reflection"], [False, True])))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_grid_sample_bicubic(padding, align, dtype):
    img = R.standard_normal((2, 3, 6, 5)).astype(dtype)
    grid = R.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(dtype)  # some taps outside
    wt = R.standard_normal((2, 3, 4, 7)).astype(dtype)
    out = []
    for L in (skiff, torch):
        x, g = L.tensor(img, requires_grad=True), L.tensor(grid, requires_grad=True)
        y = L.nn.functional.grid_sample(x, g, mode="bicubic", padding_mode=padding,
                                        align_corners=align)
        (y * L.tensor(wt)).sum().backward()
        out.append((np.asarray(y.detach()), np.asarray(x.grad), np.asarray(g.grad)))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for a, b in zip(*out):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.abs(b).max())
