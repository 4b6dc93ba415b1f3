"""The launchers of the fused training kernels (fused_gpu.py) against fused.cu's signatures.

The launchers run against :mod:`.fakecupy`: every launch is checked for argument count,
pointer vs value, dtypes and contiguity, and here also for covering every row and column the
kernel is asked to write. The GELU ElementwiseKernels are built with the real cupy class and
the source cupy would generate is compiled with NVRTC. Their numbers are checked on a real GPU
in test_on_gpu.py.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from skiff.kernels.train.core.nn import fused, fused_gpu

from . import cudacheck, fakecupy
from .fakecupy import dev
from .test_launch_args import _RecordingElementwise

DTYPES = [np.float32, np.float64]
SFX = {np.float32: "f32", np.float64: "f64"}


@pytest.fixture
def fake(monkeypatch):
    cp = fakecupy.make()
    monkeypatch.setattr(fused_gpu, "cupy", lambda: cp)
    fused_gpu.module.cache_clear()
    yield cp
    fused_gpu.module.cache_clear()


def _launches():
    return [launch for m in fakecupy.RawModule.instances for launch in m.launches]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,c", [(3, 5), (700, 48), (2, 1500)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_launches_cover_rows_and_columns(fake, dtype, n, c, affine):
    rng = np.random.default_rng(0)
    x = dev(rng.standard_normal((n, c)), dtype)
    w = dev(rng.standard_normal(c), dtype) if affine else None
    b = dev(rng.standard_normal(c), dtype) if affine else None
    y, xhat, rstd = fused_gpu._ln_fwd_gpu(x, w, b, 1e-5)
    assert y.shape == xhat.shape == (n, c) and rstd.shape == (n, 1)
    gx, gw, gb = fused_gpu._ln_bwd_gpu(dev(rng.standard_normal((n, c)), dtype), xhat, rstd, w)
    assert gx.shape == (n, c) and gw.shape == gb.shape == (c,)
    assert gw.dtype == gb.dtype == gx.dtype == dtype
    launches = {launch.name: launch for launch in _launches()}
    sfx = SFX[dtype]
    assert set(launches) == {f"ln_fwd_{sfx}", f"ln_bwd_rows_{sfx}", f"ln_bwd_cols_{sfx}",
                             f"ln_bwd_finish_{sfx}"}
    for name in (f"ln_fwd_{sfx}", f"ln_bwd_rows_{sfx}"):  # one block per row, warps whole
        assert launches[name].grid == (n,)
        (threads,) = launches[name].block
        assert threads % 32 == 0 and threads <= 1024
    cols = launches[f"ln_bwd_cols_{sfx}"]
    assert cols.block == (32, fused_gpu.COLS_Y)
    assert cols.grid[0] * 32 >= c
    rows_per_chunk = int(cols.args[-1])
    assert cols.grid[1] * rows_per_chunk >= n  # every row is in a chunk
    part = cols.args[2]
    assert part.shape == (2, cols.grid[1], c)
    fin = launches[f"ln_bwd_finish_{sfx}"]
    assert fin.threads >= c and int(fin.args[-1]) == cols.grid[1]


def test_layer_norm_cuda_constant_matches_python():
    import re

    m = re.search(r"#define\s+COLS_Y\s+(\d+)", fused_gpu.SOURCE)
    assert m and int(m.group(1)) == fused_gpu.COLS_Y


@pytest.mark.parametrize("bad", ["mixed", "strided", "3d", "empty"])
def test_layer_norm_falls_back_to_the_reference(fake, bad):
    """What the kernels cannot read as flat rows of one float type goes to the reference."""
    rng = np.random.default_rng(1)
    x = dev(rng.standard_normal((4, 6)), np.float32)
    w = dev(np.ones(6), np.float32)
    if bad == "mixed":
        w = dev(np.ones(6), np.float64)
    elif bad == "strided":
        x = dev(rng.standard_normal((4, 12)), np.float32)[:, ::2]
    elif bad == "3d":
        x = dev(rng.standard_normal((2, 2, 6)), np.float32)
    else:
        x = dev(np.zeros((0, 6)), np.float32)
    y, _, _ = fused_gpu._ln_fwd_gpu(x, w, None, 1e-5)
    assert y.shape == x.shape
    assert _launches() == []


def _table(launch, n):
    """The meta table of a *_many launch, decoded: offsets, pointers per tensor, doubles."""
    meta = np.asarray(launch.args[0])
    assert meta.dtype == np.int64 and int(launch.args[1]) == n
    offsets = meta[:n + 1]
    return offsets, meta[n + 1:]


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_squares_and_scale_launch_once_for_all_arrays(fake, dtype):
    arrays = [dev(np.ones((3, 4)), dtype), dev(np.ones(300_000), dtype),
              dev(np.zeros(0), dtype), dev(np.ones((5, 2)), np.float16)]
    fused_gpu._sum_squares_gpu(*arrays)
    fused_gpu._scale_many_gpu(*arrays, coef=0.5)
    sums, scales = _launches()
    sfx = SFX[dtype]
    assert (sums.name, scales.name) == (f"sumsq_many_{sfx}", f"scale_many_{sfx}")
    for launch in (sums, scales):  # the empty array and the float16 one are not in the table
        offsets, rest = _table(launch, 2)
        assert offsets.tolist() == [0, 12, 300_012]
        assert rest[:2].view(np.uint64).tolist() == [a.data.ptr for a in arrays[:2]]
        assert launch.block[0] % 32 == 0
    assert sums.args[2].dtype == np.float64 and sums.args[2].shape == ()
    np.testing.assert_array_equal(np.asarray(arrays[3]), 0.5)  # float16: the reference


def test_adamw_many_launches_once_per_float_type(fake):
    from skiff.kernels.train.core import optim

    rng = np.random.default_rng(3)

    def tensor(shape, dtype, gdtype=None):
        p, m = (dev(rng.standard_normal(shape), dtype) for _ in range(2))
        g = dev(rng.standard_normal(shape), gdtype or dtype)
        return [p, g, m, dev(np.abs(rng.standard_normal(shape)), dtype)]

    groups = [tensor((3, 4), np.float32), tensor(7, np.float64), tensor(5, np.float32),
              tensor(2, np.float32, np.float64)]  # a float64 gradient: updated on its own
    mixed = [a.copy() for a in groups[3]]
    steps = (1, 2, 3, 4)
    fused_gpu._adamw_many_gpu(*[a for g in groups for a in g], lr=1e-3, beta1=0.9,
                              beta2=0.999, eps=1e-8, weight_decay=0.01, steps=steps)
    launches = _launches()
    assert sorted(launch.name for launch in launches) == ["adamw_many_f32", "adamw_many_f64"]
    f32 = next(launch for launch in launches if launch.name == "adamw_many_f32")
    offsets, rest = _table(f32, 2)
    assert offsets.tolist() == [0, 12, 17]
    ptrs = rest[:8].view(np.uint64).tolist()
    assert ptrs == [a.data.ptr for a in groups[0] + groups[2]]
    doubles = rest[8:].view(np.float64)
    for k, step in enumerate((1, 3)):  # each tensor's own bias corrections
        assert doubles[2 * k] == pytest.approx(1e-3 / (1 - 0.9 ** step))
        assert doubles[2 * k + 1] == pytest.approx((1 - 0.999 ** step) ** 0.5)
    want = optim.adamw_update.reference(*[a.view(np.ndarray) for a in mixed], 1e-3, 0.9, 0.999,
                                        1e-8, 0.01, 4)
    np.testing.assert_allclose(np.asarray(groups[3][0]), want[0], rtol=1e-6)


def _recording(monkeypatch):
    pytest.importorskip("cupy")
    cp = fakecupy.make()
    fake = types.SimpleNamespace(**vars(cp), ElementwiseKernel=_RecordingElementwise)
    monkeypatch.setattr(fused_gpu, "cupy", lambda: fake)
    fused_gpu._gelu_kernels.cache_clear()
    _RecordingElementwise.calls = []


@pytest.mark.skipif(cudacheck.nvrtc_version() is None, reason="cupy or libnvrtc missing")
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_elementwise_kernels_compile_per_dtype(monkeypatch, dtype):
    _recording(monkeypatch)
    try:
        x = dev(np.linspace(-3, 3, 10), dtype)
        fused_gpu._gelu_gpu(x)
        fused_gpu._gelu_grad_gpu(x, x)
    finally:
        fused_gpu._gelu_kernels.cache_clear()
    assert len(_RecordingElementwise.calls) == 2
    for (code, options), name in zip(_RecordingElementwise.calls,
                                     ("skiff_gelu_tanh", "skiff_gelu_tanh_grad")):
        ctype = {np.float32: "float", np.float64: "double"}[dtype]
        assert f"typedef {ctype} T;" in code
        ptx = cudacheck.cupy_nvrtc(code, options, prepend_cupy_headers=True)
        assert name in cudacheck.ptx_entries(ptx)


def test_gelu_grad_with_a_gradient_of_another_dtype_falls_back(monkeypatch):
    _recording(monkeypatch)
    try:
        x = dev(np.linspace(-1, 1, 4), np.float32)
        g = dev(np.ones(4), np.float64)
        got = fused_gpu._gelu_grad_gpu(x, g)
    finally:
        fused_gpu._gelu_kernels.cache_clear()
    want = fused.gelu_tanh_grad.reference(np.asarray(x), np.asarray(g))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert _RecordingElementwise.calls == []
