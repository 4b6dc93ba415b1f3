"""Every CUDA source skiff hands to cupy compiles, with cupy's NVRTC flags and with nvcc.

No GPU is needed: cupy's option assembly and its NVRTC wrapper run without a driver (see
:mod:`.cudacheck`). The kernels a Python launcher asks for by name must be in the module.
"""

from __future__ import annotations

import pytest

from skiff.kernels.solve import cuda as solve_cuda
from skiff.kernels.train.core import packed_attention as PA
from skiff.kernels.train.core.nn import fused_gpu

from . import cudacheck

needs_nvrtc = pytest.mark.skipif(cudacheck.nvrtc_version() is None,
                                 reason="cupy or libnvrtc missing")
needs_nvcc = pytest.mark.skipif(cudacheck.nvcc_path() is None, reason="nvcc missing")

# (id, source, options as the code passes them to cupy.RawModule, kernels the launchers use)
RAW_MODULES = [
    ("packed_attention", PA.CUDA_SOURCE.read_text(), ("-std=c++14",),
     [f"packed_attn_{k}_{s}" for k in ("fwd", "bwd_dq", "bwd_dkdv") for s in ("f32", "f64")]),
    ("solve", solve_cuda.SOURCE, ("--std=c++14",),
     ["apply_var", "apply_const", "gs_var", "gs_const", "residual_restrict_var",
      "residual_restrict_const", "prolong_add", "restrict_t", "residual_const", "axpy_norm",
      "jacobi_dot", "csr_spmv", "dot"]),
    ("train_fused", fused_gpu.SOURCE, ("--std=c++14",), fused_gpu.KERNELS),
]
each_module = pytest.mark.parametrize("name,source,options,kernels", RAW_MODULES,
                                      ids=[m[0] for m in RAW_MODULES])


def test_module_options_are_what_the_code_passes(monkeypatch):
    """The table above must follow the code: capture the options each module is built with."""
    from . import fakecupy

    fake = fakecupy.make()
    monkeypatch.setattr(PA, "cupy", lambda: fake)
    monkeypatch.setattr(solve_cuda, "cupy", lambda: fake)
    monkeypatch.setattr(fused_gpu, "cupy", lambda: fake)
    for m in (PA._module, solve_cuda.module, fused_gpu.module):
        m.cache_clear()
    try:
        got = {"packed_attention": PA._module(), "solve": solve_cuda.module(),
               "train_fused": fused_gpu.module()}
    finally:
        for m in (PA._module, solve_cuda.module, fused_gpu.module):
            m.cache_clear()
    for name, source, options, _ in RAW_MODULES:
        assert got[name].code == source, name
        assert got[name].options == options, name


@needs_nvrtc
@pytest.mark.parametrize("arch", ["70", "80", "90"])
@each_module
def test_raw_module_compiles_with_cupy_nvrtc(name, source, options, kernels, arch):
    ptx = cudacheck.cupy_nvrtc(source, options, arch=arch)
    entries = cudacheck.ptx_entries(ptx)
    missing = [k for k in kernels if k not in entries]
    assert not missing, f"{name}: kernels the launcher asks for are not in the module: {missing}"


@needs_nvrtc
@each_module
def test_raw_module_cubin_as_cupy_loads_it(name, source, options, kernels):
    """cupy compiles straight to a cubin (``-arch=sm_XX``) when NVRTC knows the GPU."""
    cubin = cudacheck.cupy_nvrtc(source, options, ptx=False)
    assert cubin[:4] == b"\x7fELF"
    for k in kernels:
        assert k.encode() in cubin, k


@needs_nvcc
@each_module
def test_raw_module_compiles_with_nvcc(name, source, options, kernels):
    ptx = cudacheck.nvcc_ptx(source, options)
    entries = cudacheck.ptx_entries(ptx)
    assert all(k in entries for k in kernels), sorted(entries)


@needs_nvrtc
@each_module
def test_ptx_parameters_match_c_signatures(name, source, options, kernels):
    """The C signatures the launch tests check against are the ones the compiler saw."""
    sizes = {"u64": 8, "s64": 8, "b64": 8, "f64": 8, "u32": 4, "s32": 4, "b32": 4, "f32": 4}
    entries = cudacheck.ptx_entries(cudacheck.cupy_nvrtc(source, options))
    sigs = cudacheck.c_signatures(source)
    for k in kernels:
        got = [sizes[t] for t in entries[k]]
        want = [8 if ptr else dt.itemsize for dt, ptr in sigs[k]]
        assert got == want, f"{k}: PTX parameter sizes {got}, C signature {want}"


@needs_nvrtc
def test_every_kernel_named_in_solve_cuda_is_in_the_module():
    """Kernels launched by name in solve/cuda.py (read from its source, so a new op counts)."""
    import inspect
    import re

    names = set(re.findall(r'_launch\(\s*"(\w+)"', inspect.getsource(solve_cuda)))
    assert names, "no _launch calls found"
    entries = cudacheck.ptx_entries(cudacheck.cupy_nvrtc(solve_cuda.SOURCE, ("--std=c++14",)))
    assert names <= set(entries), sorted(names - set(entries))
