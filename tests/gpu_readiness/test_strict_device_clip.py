"""``clip_grad_norm_`` on a GPU: the 2-norm's clipping reads nothing back to the host (the
factor is chosen on the device by ``train.clip_many``, as torch's clamp does), the norm comes
back as a tensor on the gradients' device (torch's), and the numbers are torch's.

Before round 26 every clipped step read the norm with ``float()`` (a wait for the GPU's
whole queue each step) and returned it as a host tensor.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core import nn
from skiff.kernels.train.core.nn import fused, fused_gpu

from . import fakecupy, strictcupy
from .test_strict_device_training import host


def _grads(scale):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((4, 3)) * scale, rng.standard_normal(3) * scale]


def _skiff_params(grads, dev):
    params = []
    for g in grads:
        p = nn.Parameter(skiff.tensor(np.zeros_like(g), dtype=skiff.float64).to(dev))
        p._grad = skiff.tensor(g, dtype=skiff.float64).to(dev)._data
        params.append(p)
    return params


@pytest.mark.parametrize("scale", [10.0, 1e-3, np.inf, np.nan])  # clipped, kept, not finite
def test_clip_on_the_device_reads_nothing_back_and_equals_torch(monkeypatch, scale):
    grads = _grads(scale)
    tparams = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, g in zip(tparams, grads):
        p.grad = torch.tensor(g)
    want = torch.nn.utils.clip_grad_norm_(tparams, 1.0)
    ours_cpu = _skiff_params(grads, "cpu")
    norm_cpu = nn.utils.clip_grad_norm_(ours_cpu, 1.0)
    cp = strictcupy.install(monkeypatch)
    ours = _skiff_params(grads, "cuda:0")
    strictcupy.SYNCS.clear()
    norm = nn.utils.clip_grad_norm_(ours, 1.0)
    assert strictcupy.SYNCS == []
    assert isinstance(norm._data, cp.ndarray) and norm.dtype == skiff.float64
    np.testing.assert_allclose(host(norm), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(host(norm_cpu), want.numpy(), rtol=1e-12)
    for p, q, t in zip(ours, ours_cpu, tparams):
        np.testing.assert_array_equal(p._grad.get(), q._grad)  # the CPU's numbers, bit for bit
        if np.isfinite(scale):  # torch scales non-finite gradients too; skiff leaves them
            np.testing.assert_allclose(q._grad, t.grad.numpy(), rtol=1e-12)


def test_a_parameter_keeps_its_tensors_dtype_and_device(monkeypatch):
    want = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64)).dtype
    assert str(nn.Parameter(skiff.tensor(np.zeros(3), dtype=skiff.float64)).dtype) == \
        str(want).removeprefix("torch.")
    cp = strictcupy.install(monkeypatch)
    p = nn.Parameter(skiff.tensor(np.zeros(3), dtype=skiff.float64).to("cuda:0"))
    assert isinstance(p._data, cp.ndarray) and p.dtype == skiff.float64 and p.requires_grad


def test_error_if_nonfinite_still_reads_the_norm(monkeypatch):
    strictcupy.install(monkeypatch)
    ours = _skiff_params(_grads(np.inf), "cuda:0")
    with pytest.raises(RuntimeError, match="not finite"):
        nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)


@pytest.fixture
def fake(monkeypatch):
    cp = fakecupy.make()
    monkeypatch.setattr(fused_gpu, "cupy", lambda: cp)
    fused_gpu.module.cache_clear()
    yield cp
    fused_gpu.module.cache_clear()


@pytest.mark.parametrize("dtype,sfx", [(np.float32, "f32"), (np.float64, "f64")])
def test_clip_many_launches_once_with_the_norm_on_the_device(fake, dtype, sfx):
    arrays = [fakecupy.dev(np.ones((3, 4)), dtype), fakecupy.dev(np.ones(5), dtype),
              fakecupy.dev(np.ones(2), np.float16)]
    sumsq = fakecupy.dev(np.float64(400.0))
    fused_gpu._clip_many_gpu(sumsq, *arrays, max_norm=2.0)
    (launch,) = [x for m in fakecupy.RawModule.instances for x in m.launches]
    assert launch.name == f"clip_many_{sfx}"  # the signature itself is checked by the fake
    meta, n, status, max_norm, eps = launch.args
    assert int(n) == 2 and np.asarray(meta)[:3].tolist() == [0, 12, 17]
    assert isinstance(status, fakecupy.DeviceArray) and float(status[1]) == 400.0
    assert (float(max_norm), float(eps)) == (2.0, fused.CLIP_EPS)
    # the float16 array goes through the reference: 2 / (sqrt(400) + 1e-6)
    np.testing.assert_allclose(np.asarray(arrays[2], np.float64), 2.0 / (20.0 + 1e-6),
                               rtol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clip_many_gpu_matches_the_reference(dtype):  # pragma: no cover - GPU
    import cupy as cp

    rng = np.random.default_rng(1)
    host_arrays = [rng.standard_normal(s).astype(dtype) for s in ((70, 30), (5,), (1000,))]
    for scale in (100.0, 1e-4, np.inf):
        a = [cp.asarray(h * scale) for h in host_arrays]
        b = [cp.asarray(h * scale) for h in host_arrays]
        s = fused.sum_squares.reference(*a)
        fused_gpu._clip_many_gpu(s, *a, max_norm=1.0)
        fused.clip_many.reference(s, *b, max_norm=1.0)
        for x, y in zip(a, b):
            np.testing.assert_allclose(cp.asnumpy(x), cp.asnumpy(y), rtol=1e-6)
