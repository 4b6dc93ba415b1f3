"""GPU twins of the solve kernels: the CUDA source in ``kernels.cu`` loaded as a cupy RawModule.

One thread per cell; each fused reduction is a block sum plus one atomicAdd per block, so a
stencil apply with its dot product, or a residual with its restriction and norm, is a single
launch. cupy is imported only through :func:`skiff.kernels.backend.cupy` when a GPU op runs.

This module registers its twins on the ops of :mod:`.fused`, which names it with
:meth:`~skiff.kernels.backend.CustomOp.implement_in`: dispatch imports it at the first GPU call.
"""

from __future__ import annotations

import functools
from pathlib import Path

from skiff.kernels.backend import cupy, gpu_available

from . import fused

__all__ = ["SOURCE", "module", "device_csr"]

SOURCE_PATH = Path(__file__).with_name("kernels.cu")
SOURCE = SOURCE_PATH.read_text()
BLOCK = 256


@functools.lru_cache(maxsize=1)
def module():
    cp = cupy()
    return cp.RawModule(code=SOURCE, options=("--std=c++14",))


def _launch(name, n, args):
    cp = cupy()
    for a in args:  # the kernels read flat double* arrays: anything else would be garbage
        if isinstance(a, cp.ndarray) and (a.dtype != cp.float64 or not a.flags.c_contiguous):
            raise TypeError(f"solve kernel {name!r} needs float64 C-contiguous arrays, got "
                            f"{a.dtype} with strides {a.strides}")
    blocks = (int(n) + BLOCK - 1) // BLOCK
    module().get_function(name)((max(blocks, 1),), (BLOCK,), args)
    return cp


def _i(*vals):
    import numpy as np

    return tuple(np.int32(v) for v in vals)


@fused.apply_var.implement("gpu", "cuda", available=gpu_available)
def _apply_var_gpu(u, c0, c1, c2, diag, out):
    cp = cupy()
    dot = cp.zeros(1)
    _launch("apply_var", u.size, (u, c0, c1, c2, diag, out, dot, *_i(*u.shape)))
    return out, float(dot[0])


@fused.apply_const.implement("gpu", "cuda", available=gpu_available)
def _apply_const_gpu(u, a3, d0, d1, d2, out):
    cp = cupy()
    dot = cp.zeros(1)
    _launch("apply_const", u.size, (u, cp.asarray(a3), d0, d1, d2, out, dot, *_i(*u.shape)))
    return out, float(dot[0])


@fused.rbgs_var.implement("gpu", "cuda", available=gpu_available)
def _rbgs_var_gpu(u, f, c0, c1, c2, diag, sweeps, reverse):
    order = (1, 0) if reverse else (0, 1)
    for _ in range(int(sweeps)):
        for colour in order:
            _launch("gs_var", u.size, (u, f, c0, c1, c2, diag, *_i(*u.shape, colour)))
    return u


@fused.rbgs_const.implement("gpu", "cuda", available=gpu_available)
def _rbgs_const_gpu(u, f, a3, d0, d1, d2, sweeps, reverse):
    a = cupy().asarray(a3)
    order = (1, 0) if reverse else (0, 1)
    for _ in range(int(sweeps)):
        for colour in order:
            _launch("gs_const", u.size, (u, f, a, d0, d1, d2, *_i(*u.shape, colour)))
    return u


@fused.residual_restrict_var.implement("gpu", "cuda", available=gpu_available)
def _rr_var_gpu(u, f, c0, c1, c2, diag, fc):
    cp = cupy()
    rr = cp.zeros(1)
    fc[...] = 0
    _launch("residual_restrict_var", u.size,
            (u, f, c0, c1, c2, diag, fc, rr, *_i(*u.shape, *fc.shape)))
    return fc, float(rr[0])


@fused.residual_restrict_const.implement("gpu", "cuda", available=gpu_available)
def _rr_const_gpu(u, f, a3, d0, d1, d2, fc):
    cp = cupy()
    rr = cp.zeros(1)
    fc[...] = 0
    _launch("residual_restrict_const", u.size,
            (u, f, cp.asarray(a3), d0, d1, d2, fc, rr, *_i(*u.shape, *fc.shape)))
    return fc, float(rr[0])


@fused.prolong_add.implement("gpu", "cuda", available=gpu_available)
def _prolong_gpu(u, ec, signs):
    cp = cupy()
    _launch("prolong_add", u.size,
            (u, ec, cp.asarray(signs, dtype=cp.float64), *_i(*u.shape, *ec.shape)))
    return u


@fused.restrict_t.implement("gpu", "cuda", available=gpu_available)
def _restrict_t_gpu(r, fc, signs):
    cp = cupy()
    _launch("restrict_t", fc.size,
            (r, fc, cp.asarray(signs, dtype=cp.float64), *_i(*r.shape, *fc.shape)))
    return fc, float((r * r).sum())


@fused.residual_restrict_t_const.implement("gpu", "cuda", available=gpu_available)
def _rrt_const_gpu(u, f, a3, d0, d1, d2, fc, signs):
    """Two launches: the residual with its norm into a scratch grid, then its restriction."""
    cp = cupy()
    rr = cp.zeros(1)
    r = cp.empty_like(u)
    _launch("residual_const", u.size, (u, f, cp.asarray(a3), d0, d1, d2, r, rr, *_i(*u.shape)))
    _launch("restrict_t", fc.size,
            (r, fc, cp.asarray(signs, dtype=cp.float64), *_i(*u.shape, *fc.shape)))
    return fc, float(rr[0])


@fused.axpy_norm.implement("gpu", "cuda", available=gpu_available)
def _axpy_norm_gpu(x, r, p, q, alpha):
    import numpy as np

    cp = cupy()
    rr = cp.zeros(1)
    _launch("axpy_norm", x.size, (x, r, p, q, np.float64(alpha), rr, np.int64(x.size)))
    return x, r, float(rr[0])


@fused.jacobi_dot.implement("gpu", "cuda", available=gpu_available)
def _jacobi_dot_gpu(r, invdiag, z):
    import numpy as np

    cp = cupy()
    rz = cp.zeros(1)
    _launch("jacobi_dot", r.size, (r, invdiag, z, rz, np.int64(r.size)))
    return z, float(rz[0])


@fused.csr_matvec.implement("gpu", "cuda", available=gpu_available)
def _csr_matvec_gpu(indptr, indices, data, x, out):
    import numpy as np

    cp = cupy()
    if (indptr.dtype != cp.int32 or indices.dtype != cp.int32 or out.dtype != cp.float64
            or not out.flags.c_contiguous):
        return fused.csr_matvec.reference(indptr, indices, data, x, out)
    x = cp.ascontiguousarray(x, dtype=cp.float64)
    data = cp.ascontiguousarray(data, dtype=cp.float64)
    if out.size:  # int32 index arrays: not through _launch, which wants float64 only
        blocks = (out.size + BLOCK - 1) // BLOCK
        module().get_function("csr_spmv")((blocks,), (BLOCK,),
                                          (indptr, indices, data, x, out, np.int32(out.size)))
    return out


@fused.dot.implement("gpu", "cuda", available=gpu_available)
def _dot_gpu(a, b):
    import numpy as np

    cp = cupy()
    if a.dtype != cp.float64 or b.dtype != cp.float64 or a.shape != b.shape:
        return fused.dot.reference(a, b)
    a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
    out = cp.zeros(1)
    blocks = min(1024, (a.size + BLOCK - 1) // BLOCK)
    module().get_function("dot")((max(blocks, 1),), (BLOCK,), (a, b, out, np.int64(a.size)))
    return float(out[0])


@functools.lru_cache(maxsize=1)
def _device_csr_class():
    import cupyx.scipy.sparse as csp

    class DeviceCSR(csp.csr_matrix):
        """A cupyx CSR matrix whose product with a vector is one launch of ``csr_spmv``
        (through :func:`fused.csr_matvec`); everything else is cupyx's."""

        def __matmul__(self, other):
            cp = cupy()
            if (isinstance(other, cp.ndarray) and other.ndim == 1 and self.dtype == cp.float64
                    and other.shape[0] == self.shape[1] and other.dtype.kind == "f"):
                out = cp.empty(self.shape[0], dtype=cp.float64)
                return fused.csr_matvec(self.indptr, self.indices, self.data, other, out)
            return super().__matmul__(other)

    return DeviceCSR


def device_csr(A):
    """``A`` (a cupyx sparse matrix) as a float64 :class:`DeviceCSR` sharing its arrays."""
    A = A.tocsr()
    if A.dtype != cupy().float64:
        A = A.astype(cupy().float64)
    return _device_csr_class()(A)
