"""The Python side of each GPU fast path launches its kernel with the right arguments.

The launchers run for real against :mod:`.fakecupy` (numpy arrays standing for device
arrays); each launch is checked against the kernel's C signature: argument count, pointer vs
value, dtype of every array and scalar, C-contiguity, grid/block types, and that the grid
covers every element. The ElementwiseKernel of AdamW is built with the real cupy class
(construction parses its signature without a GPU), its types resolved by cupy for the
arguments the launcher passes, and the source cupy would generate is compiled with NVRTC.
"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.solve import cuda as solve_cuda
from skiff.kernels.train.core import optim
from skiff.kernels.train.core import packed_attention as PA

from . import cudacheck, fakecupy
from .fakecupy import dev

DTYPES = [np.float32, np.float64]


@pytest.fixture
def fake(monkeypatch):
    cp = fakecupy.make()
    monkeypatch.setattr(PA, "cupy", lambda: cp)
    monkeypatch.setattr(solve_cuda, "cupy", lambda: cp)
    PA._module.cache_clear()
    solve_cuda.module.cache_clear()
    yield cp
    PA._module.cache_clear()
    solve_cuda.module.cache_clear()


def _launches(cp):
    return [launch for m in fakecupy.RawModule.instances for launch in m.launches]


# ---- packed attention ------------------------------------------------------------------------
def _qkv(rng, total, h, d, dtype):
    return [dev(rng.standard_normal((total, h, d)), dtype) for _ in range(3)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_packed_attention_launches(fake, dtype):
    rng = np.random.default_rng(0)
    total, h, d = 37, 3, 16
    q, k, v = _qkv(rng, total, h, d, dtype)
    cu = PA.check_cu_seqlens([0, 5, 5, 20, 37], total)
    o, lse = PA._fwd_gpu(q, k, v, cu, 0.25)
    assert o.shape == (total, h, d) and lse.shape == (total, h)
    assert o.dtype == dtype and lse.dtype == dtype
    do = dev(rng.standard_normal((total, h, d)), dtype)
    dq, dk, dv = PA._bwd_gpu(q, k, v, o, lse, do, cu, 0.25)
    assert dq.shape == dk.shape == dv.shape == (total, h, d)
    sfx = {np.float32: "f32", np.float64: "f64"}[dtype]
    names = [launch.name for launch in _launches(fake)]
    assert names == [f"packed_attn_fwd_{sfx}", f"packed_attn_bwd_dq_{sfx}",
                     f"packed_attn_bwd_dkdv_{sfx}"]
    for launch in _launches(fake):
        assert launch.threads >= total * h, launch.name


def test_packed_attention_non_contiguous_inputs(fake):
    """Views (e.g. q, k, v split from one projection) are made contiguous before launch."""
    rng = np.random.default_rng(1)
    qkv = dev(rng.standard_normal((12, 3, 2, 8)), np.float32)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
    cu = PA.check_cu_seqlens([0, 4, 12], 12)
    o, lse = PA._fwd_gpu(q, k, v, cu, 0.5)
    PA._bwd_gpu(q, k, v, o[:, :, :], lse.T.copy().T, o, cu, 0.5)
    assert len(_launches(fake)) == 3


def test_packed_attention_empty_batch_does_not_launch(fake):
    """A zero-size grid is an invalid launch configuration in CUDA."""
    q = k = v = dev(np.zeros((0, 2, 4)), np.float32)
    cu = PA.check_cu_seqlens([0, 0], 0)
    o, lse = PA._fwd_gpu(q, k, v, cu, 0.5)
    assert o.shape == (0, 2, 4) and lse.shape == (0, 2)
    dq, dk, dv = PA._bwd_gpu(q, k, v, o, lse, q, cu, 0.5)
    assert dq.shape == (0, 2, 4)
    assert _launches(fake) == []


def test_packed_attention_wide_heads_fall_back(fake):
    """D above the kernels' register arrays goes to the reference, not out of bounds."""
    rng = np.random.default_rng(2)
    q, k, v = _qkv(rng, 4, 1, PA._MAX_D + 1, np.float32)
    cu = PA.check_cu_seqlens([0, 4], 4)
    want = PA.packed_attention_fwd.reference(q.view(np.ndarray), k.view(np.ndarray),
                                             v.view(np.ndarray), cu, 0.1)
    got = PA._fwd_gpu(q, k, v, cu, 0.1)
    np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-5)
    assert _launches(fake) == []


def test_packed_attention_mixed_dtypes_fall_back(fake):
    """A float64 k under a float32 q would be read as float* by the f32 kernel."""
    rng = np.random.default_rng(5)
    q = dev(rng.standard_normal((5, 2, 4)), np.float32)
    k, v = (dev(rng.standard_normal((5, 2, 4)), np.float64) for _ in range(2))
    cu = PA.check_cu_seqlens([0, 5], 5)
    PA._fwd_gpu(q, k, v, cu, 0.5)
    assert _launches(fake) == []


def test_cuda_block_size_matches_python(fake):
    """packed_attention.cu reads blockDim, but kernels.cu hard-codes BLOCK for its shared
    buffer and index arithmetic: the Python launch must use the same number."""
    import re

    m = re.search(r"#define\s+BLOCK\s+(\d+)", solve_cuda.SOURCE)
    assert m and int(m.group(1)) == solve_cuda.BLOCK


# ---- solve ------------------------------------------------------------------------------------
def _grid(rng, shape):
    n0, n1, n2 = shape
    u = dev(rng.standard_normal(shape))
    c0 = dev(rng.random((n0 + 1, n1, n2)))
    c1 = dev(rng.random((n0, n1 + 1, n2)))
    c2 = dev(rng.random((n0, n1, n2 + 1)))
    diag = dev(4 + rng.random(shape))
    return u, c0, c1, c2, diag


@pytest.mark.parametrize("shape", [(1, 6, 10), (4, 6, 8)])
def test_solve_launches(fake, shape):
    rng = np.random.default_rng(3)
    u, c0, c1, c2, diag = _grid(rng, shape)
    n0, n1, n2 = shape
    f = dev(rng.standard_normal(shape))
    out = dev(np.zeros(shape))
    d0, d1, d2 = dev(rng.random(n0)), dev(rng.random(n1)), dev(rng.random(n2))
    a3 = (1.0, 1.0, 1.0)
    coarse = (max(1, n0 // 2), n1 // 2, n2 // 2)
    fc = dev(np.zeros(coarse))
    signs = (1.0, 1.0, -1.0, -1.0, 1.0, 1.0)
    solve_cuda._apply_var_gpu(u, c0, c1, c2, diag, out)
    solve_cuda._apply_const_gpu(u, a3, d0, d1, d2, out)
    solve_cuda._rbgs_var_gpu(u, f, c0, c1, c2, diag, 1, False)
    solve_cuda._rbgs_const_gpu(u, f, a3, d0, d1, d2, 1, True)
    solve_cuda._rr_var_gpu(u, f, c0, c1, c2, diag, fc)
    solve_cuda._rr_const_gpu(u, f, a3, d0, d1, d2, fc)
    solve_cuda._prolong_gpu(u, fc, signs)
    solve_cuda._restrict_t_gpu(u, fc, signs)
    solve_cuda._rrt_const_gpu(u, f, a3, d0, d1, d2, fc, signs)
    x, r, p, q = (dev(rng.standard_normal(u.size)) for _ in range(4))
    solve_cuda._axpy_norm_gpu(x, r, p, q, 0.5)
    solve_cuda._jacobi_dot_gpu(r, dev(1 + rng.random(u.size)), dev(np.zeros(u.size)))
    launches = _launches(fake)
    assert {launch.name for launch in launches} == {
        "apply_var", "apply_const", "gs_var", "gs_const", "residual_restrict_var",
        "residual_restrict_const", "prolong_add", "restrict_t", "residual_const", "axpy_norm",
        "jacobi_dot"}
    for launch in launches:
        assert launch.block == (solve_cuda.BLOCK,), launch.name
        cells = int(np.prod(coarse)) if launch.name == "restrict_t" else u.size
        assert launch.threads >= cells, launch.name


def test_csr_product_and_dot_launches(fake):
    import scipy.sparse as sp

    A = sp.random(300, 200, density=0.05, format="csr", random_state=0)
    indptr, indices = dev(A.indptr, np.int32), dev(A.indices, np.int32)
    x = dev(np.arange(400.0))[::2]  # a strided vector is made contiguous first
    out = dev(np.zeros(300))
    solve_cuda._csr_matvec_gpu(indptr, indices, dev(A.data), x, out)
    solve_cuda._dot_gpu(dev(np.ones(5000)), dev(np.ones(5000)))
    spmv, dot = _launches(fake)
    assert spmv.name == "csr_spmv" and spmv.threads >= 300
    assert dot.name == "dot" and int(dot.args[-1]) == 5000 and dot.block == (solve_cuda.BLOCK,)


def test_csr_product_with_int64_indices_falls_back(fake):
    """cupyx keeps int32 indices; anything else would be read as garbage by the kernel."""
    import scipy.sparse as sp

    A = sp.random(30, 20, density=0.2, format="csr", random_state=0)
    x = np.arange(20.0)
    out = dev(np.zeros(30))
    solve_cuda._csr_matvec_gpu(dev(A.indptr, np.int64), dev(A.indices, np.int64), dev(A.data),
                               dev(x), out)
    np.testing.assert_allclose(np.asarray(out), A @ x)
    assert _launches(fake) == []


def test_solve_launch_refuses_float32_and_strided_arrays(fake):
    """The kernels read flat double*: a float32 or strided grid must not be launched."""
    rng = np.random.default_rng(6)
    u, c0, c1, c2, diag = _grid(rng, (2, 4, 4))
    out = dev(np.zeros((2, 4, 4)))
    with pytest.raises(TypeError, match="float64 C-contiguous"):
        solve_cuda._apply_var_gpu(dev(u, np.float32), c0, c1, c2, diag, out)
    wide = dev(np.zeros((2, 4, 8)))
    with pytest.raises(TypeError, match="float64 C-contiguous"):
        solve_cuda._apply_var_gpu(u, c0, c1, c2, diag, wide[:, :, ::2])
    assert _launches(fake) == []


# ---- AdamW ElementwiseKernel -----------------------------------------------------------------
class _RecordingElementwise:
    """Builds the real cupy.ElementwiseKernel; a call resolves types as cupy does and keeps
    the CUDA source cupy would compile."""

    calls: list = []

    def __init__(self, in_params, out_params, operation, name="kernel", **kwargs):
        import cupy

        self.kernel = cupy.ElementwiseKernel(in_params, out_params, operation, name, **kwargs)

    def __call__(self, *args):
        from cupy._core import _carray, _kernel

        k = self.kernel
        assert len(args) in (k.nin, k.nargs), f"{len(args)} arguments for {k.nargs} params"
        types = tuple(a.dtype.type if isinstance(a, np.ndarray) else None for a in args)
        in_types, out_types, type_map = k._decide_params_type(types[:k.nin], types[k.nin:])
        infos = []
        for a, t in zip(args, in_types + out_types):
            if isinstance(a, np.ndarray):
                fakecupy.check_arg(k.name, len(infos), a, np.dtype(t), True)
                infos.append(_kernel._ArgInfo(1, _cupy_ndarray(), np.dtype(t), a.ndim, True,
                                              True))
            else:
                infos.append(_kernel._ArgInfo(3, type(a), np.dtype(t), 0, True, True))
        shapes = {a.shape for a in args if isinstance(a, np.ndarray)}
        assert len(shapes) == 1, f"arrays of different shapes {shapes}"
        infos.append(_kernel._ArgInfo(2, _carray.Indexer, None, len(shapes.pop()), True, True))
        code = _kernel._get_elementwise_kernel_code(tuple(infos), type_map, k.params,
                                                    k.operation, k.name, k.preamble)
        _RecordingElementwise.calls.append((code, tuple(k.kwargs.get("options", ()))))


def _cupy_ndarray():
    import cupy

    return cupy.ndarray


@pytest.mark.skipif(cudacheck.nvrtc_version() is None, reason="cupy or libnvrtc missing")
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_adamw_elementwise_kernel_compiles_per_dtype(monkeypatch, dtype):
    import types

    fake = types.SimpleNamespace(ElementwiseKernel=_RecordingElementwise)
    monkeypatch.setattr(optim, "cupy", lambda: fake)
    optim._cupy_adamw.cache_clear()
    _RecordingElementwise.calls = []
    try:
        rng = np.random.default_rng(4)
        p, g, m, v = (dev(rng.standard_normal((3, 5)), dtype) for _ in range(4))
        v = dev(np.abs(v), dtype)
        optim._adamw_cupy(p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.01, 3)
    finally:
        optim._cupy_adamw.cache_clear()
    (code, options), = _RecordingElementwise.calls
    ctype = {np.float16: "float16", np.float32: "float", np.float64: "double"}[dtype]
    assert f"typedef {ctype} T;" in code
    ptx = cudacheck.cupy_nvrtc(code, options, prepend_cupy_headers=True)
    assert "skiff_adamw_update" in cudacheck.ptx_entries(ptx)


def test_adamw_gpu_twin_accepts_a_gradient_of_another_dtype(monkeypatch):
    """The reference accepts e.g. float64 gradients on float32 weights; the fast twin must
    not raise cupy's TypeError on the ``T`` mismatch."""
    import types

    pytest.importorskip("cupy")

    fake = types.SimpleNamespace(ElementwiseKernel=_RecordingElementwise)
    monkeypatch.setattr(optim, "cupy", lambda: fake)
    optim._cupy_adamw.cache_clear()
    _RecordingElementwise.calls = []
    try:
        p, m, v = (dev(np.ones(4), np.float32) for _ in range(3))
        g = dev(np.ones(4), np.float64)
        optim._adamw_cupy(p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1)
    finally:
        optim._cupy_adamw.cache_clear()
    assert len(_RecordingElementwise.calls) == 1
