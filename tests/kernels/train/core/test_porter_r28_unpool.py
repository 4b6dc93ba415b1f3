"""Round 28: max pooling's ``return_indices``, ``dilation`` and ``ceil_mode`` (1-D, 2-D, 3-D;
``nn.MaxPool1d`` also gained ``padding``) and ``MaxUnpool1d``/``2d``/``3d`` (SegNet's
decoder) against torch 2.13 in float64: values, indices, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(287)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


CASES = [
    (1, {"kernel_size": 3, "stride": 2, "padding": 1}, (2, 3, 10)),
    (1, {"kernel_size": 2, "dilation": 2, "ceil_mode": True}, (2, 2, 9)),
    (2, {"kernel_size": 2}, (2, 3, 6, 8)),
    (2, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}, (1, 2, 7, 6)),
    (2, {"kernel_size": (2, 3), "stride": 1, "dilation": (2, 1)}, (2, 2, 7, 7)),
    (3, {"kernel_size": 2, "stride": 2, "ceil_mode": True}, (1, 2, 5, 4, 5)),
]


@pytest.mark.parametrize("nd,kw,shape", CASES, ids=[str(i) for i in range(len(CASES))])
def test_max_pool_indices_and_unpool(nd, kw, shape):
    x = RNG.standard_normal(shape)
    x.reshape(-1)[::7] = x.reshape(-1)[1]  # ties: the first offset holding the max wins
    res = []
    for lib in (skiff, torch):
        t = lib.tensor(x, requires_grad=True)
        pool = getattr(lib.nn, f"MaxPool{nd}d")(return_indices=True, **kw)
        y, idx = pool(t)
        plain = getattr(lib.nn, f"MaxPool{nd}d")(**kw)(t)
        unkw = {k: v for k, v in kw.items() if k in ("kernel_size", "stride", "padding")}
        if kw.get("dilation", 1) != 1:  # torch's unpool refuses a dilated pool's sizes
            z = y * 1.0
        elif shape[-1] % 2 == 0 and not kw.get("padding") and not kw.get("ceil_mode"):
            z = getattr(lib.nn, f"MaxUnpool{nd}d")(**unkw)(y, idx)  # the default size
        else:
            z = getattr(lib.nn, f"MaxUnpool{nd}d")(**unkw)(y, idx, output_size=shape[2:])
        G = np.cos(np.arange(z.numel()) * 0.3).reshape(tuple(z.shape))
        ((z * lib.tensor(G)).sum() + (plain * plain).sum()).backward()
        res.append([y, idx, plain, z, t.grad])
    for a, b in zip(*res):
        a, b = _np(a), _np(b)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_functional_unbatched_and_errors():
    x = RNG.standard_normal((3, 6, 6))
    a, ia = skiff.nn.functional.max_pool2d(skiff.tensor(x), 2, return_indices=True)
    b, ib = torch.nn.functional.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(_np(ia), _np(ib))
    u = skiff.nn.functional.max_unpool2d(a, ia, 2)
    v = torch.nn.functional.max_unpool2d(b, ib, 2)
    np.testing.assert_allclose(_np(u), _np(v))
    with pytest.raises(ValueError, match="indices"):
        skiff.nn.functional.max_unpool2d(a, ia[:, :1], 2)
