"""Compile CUDA code the way cupy would, without a GPU, and read back what the kernels take.

cupy compiles a ``RawModule``/``ElementwiseKernel`` with NVRTC, after adding its own include
paths and flags. Only the last step (picking the architecture of the current device) needs a
driver, so :func:`cupy_nvrtc` runs cupy's own option assembly
(``cupy._core.core.compile_with_cache`` with the module cache step intercepted), adds what
``cupy.cuda.compiler`` adds for the device (``-ftz=true``, ``-arch``,
``--device-as-default-execution-space``) and compiles with cupy's NVRTC wrapper.
:func:`nvcc_ptx` is the independent second compiler.

:func:`ptx_entries` reads the parameters of each ``.entry`` from PTX and
:func:`c_signatures` the C types of each ``extern "C" __global__`` function (after the
preprocessor, so macro-built kernels count), which the launch tests hold the Python launch
arguments against.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

ARCH = "80"  # A100; the PTX from it runs on every later GPU


@functools.lru_cache(maxsize=1)
def nvrtc_version():
    """NVRTC's (major, minor), or None when cupy or libnvrtc is missing."""
    try:
        from cupy.cuda import compiler

        return compiler._get_nvrtc_version()
    except Exception:
        return None


def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    return "/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None


class _Captured(Exception):
    pass


def cupy_assembled(source: str, options: tuple = (), *, prepend_cupy_headers: bool) -> tuple:
    """``(source, options)`` exactly as cupy hands them to its module compiler."""
    from cupy._core import core
    from cupy.cuda import compiler

    seen = {}

    def capture(src, opts=(), **kw):
        seen["source"], seen["options"] = src, tuple(opts)
        raise _Captured

    real = compiler._compile_module_with_cache
    compiler._compile_module_with_cache = capture
    try:
        core.compile_with_cache(source, tuple(options), arch=ARCH,
                                prepend_cupy_headers=prepend_cupy_headers)
    except _Captured:
        pass
    finally:
        compiler._compile_module_with_cache = real
    return seen["source"], seen["options"]


def cupy_nvrtc(source: str, options: tuple = (), *, prepend_cupy_headers: bool = False,
               arch: str = ARCH, ptx: bool = True) -> str | bytes:
    """Compile as cupy would on a device of compute capability ``arch``.

    Returns PTX text (``ptx=True``, ``-arch=compute_XX``) or the cubin cupy itself would load
    (``-arch=sm_XX``). Raises ``cupy.cuda.compiler.CompileException`` with NVRTC's log.
    """
    from cupy.cuda import compiler

    src, opts = cupy_assembled(source, options, prepend_cupy_headers=prepend_cupy_headers)
    arch_opt = f"-arch=compute_{arch}" if ptx else f"-arch=sm_{arch}"
    opts = opts + ("-ftz=true", arch_opt, "--device-as-default-execution-space")
    prog = compiler._NVRTCProgram(src, "kern.cu", (), (), name_expressions=None,
                                  method="ptx" if ptx else "cubin")
    out, _ = prog.compile(opts)
    return out.decode() if ptx and isinstance(out, bytes) else out


def nvcc_ptx(source: str, options: tuple = (), arch: str = ARCH) -> str:
    """PTX from nvcc (raises AssertionError with the compiler output on failure)."""
    with tempfile.TemporaryDirectory() as tmp:
        cu, out = os.path.join(tmp, "k.cu"), os.path.join(tmp, "k.ptx")
        with open(cu, "w") as fh:
            fh.write(source)
        cmd = [nvcc_path(), "-ptx", f"-arch=sm_{arch}", *options, cu, "-o", out]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise AssertionError(f"nvcc failed ({' '.join(cmd)}):\n{proc.stderr}")
        with open(out) as fh:
            return fh.read()


_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+\w+(?:\[(\d+)\])?")


def ptx_entries(ptx: str) -> dict[str, list[str]]:
    """``{kernel name: [PTX parameter type, ...]}`` (``u64`` for pointers, ``f32``, ``u32``...;
    a by-value struct shows as ``b8[size]``)."""
    out = {}
    for name, params in _ENTRY.findall(ptx):
        kinds = []
        for typ, count in _PARAM.findall(params):
            kinds.append(f"{typ}[{count}]" if count else typ)
        out[name] = kinds
    return out


# C parameter types -> numpy dtypes (LP64: long is 64-bit)
C_TYPES = {
    "float": np.float32, "double": np.float64, "int": np.int32, "unsigned int": np.uint32,
    "unsigned": np.uint32, "long": np.int64, "long long": np.int64, "size_t": np.uint64,
    "unsigned long": np.uint64, "unsigned long long": np.uint64, "char": np.int8,
    "unsigned char": np.uint8, "short": np.int16, "bool": np.bool_, "ptrdiff_t": np.int64,
}
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)', re.S)


def c_signatures(source: str) -> dict[str, list[tuple[np.dtype, bool]]]:
    """``{kernel: [(dtype, is_pointer), ...]}`` of every ``extern "C" __global__`` kernel,
    read after the C preprocessor (``cpp -P``) so macro-instantiated kernels are included."""
    cpp = shutil.which("cpp")
    if cpp is not None:
        proc = subprocess.run([cpp, "-P", "-x", "c++", "-"], input=source,
                              capture_output=True, text=True, timeout=60)
        if proc.returncode == 0:
            source = proc.stdout
    out = {}
    for name, params in _KERNEL.findall(source):
        sig = []
        for param in (p.strip() for p in params.split(",") if p.strip()):
            pointer = "*" in param
            words = [w for w in re.split(r"[\s*]+", param)
                     if w and w not in ("const", "__restrict__", "volatile")]
            ctype = " ".join(words[:-1])
            if ctype not in C_TYPES:
                raise ValueError(f"{name}: unknown C type {ctype!r} in {param!r}")
            sig.append((np.dtype(C_TYPES[ctype]), pointer))
        out[name] = sig
    return out
