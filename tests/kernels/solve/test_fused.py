"""Every fused solve kernel against its plain-xp reference twin, on 2D and 3D grids."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from skiff.kernels.backend import numba_available, registered_ops, to_device
from skiff.kernels.backend.testing import check_op
from skiff.kernels.solve import fused
from skiff.kernels.solve.cuda import SOURCE_PATH
from skiff.kernels.solve.stencil import ConstStencil, VarStencil

SHAPES = [(1, 8, 6), (1, 7, 9), (4, 6, 8), (5, 3, 7)]


def _var(shape, rng):
    n0, n1, n2 = shape
    c0 = rng.uniform(0.5, 2.0, (n0 + 1, n1, n2))
    c1 = rng.uniform(0.5, 2.0, (n0, n1 + 1, n2))
    c2 = rng.uniform(0.5, 2.0, (n0, n1, n2 + 1))
    if n0 == 1:
        c0[:] = 0.0
    return VarStencil.from_faces(c0, c1, c2)


def _const(shape):
    a = (0.0 if shape[0] == 1 else 1.5, 2.0, 3.0)
    return ConstStencil(shape, a, (0.0, 4.0, 0.0), (2 * a[0], 0.0, 6.0))


def _dev(xp, *arrays):
    return [to_device(a, "cpu") if xp is np else xp.asarray(a) for a in arrays]


def _require(xp):
    # on the CPU the numba twin must exist (it is what we test); the GPU twin on a GPU
    return xp is not np or numba_available()


@pytest.mark.parametrize("shape", SHAPES)
def test_apply_and_residual_restrict(xp, shape):
    rng = np.random.default_rng(0)
    u, f = rng.standard_normal(shape), rng.standard_normal(shape)
    coarse = tuple(n // 2 if n % 2 == 0 and n >= 4 else n for n in shape)
    for st, apply_op, rr_op in ((_var(shape, rng), fused.apply_var, fused.residual_restrict_var),
                                (_const(shape), fused.apply_const,
                                 fused.residual_restrict_const)):
        arrays = _dev(xp, *st.arrays())
        uu, ff = _dev(xp, u, f)
        got = check_op(apply_op, uu, *arrays, xp.empty(shape), rtol=1e-12, atol=1e-10,
                       require_fast=_require(xp))
        assert got
        check_op(rr_op, uu, ff, *arrays, xp.zeros(coarse), rtol=1e-12, atol=1e-10,
                 require_fast=_require(xp))
        check_op(fused.restrict, ff, xp.zeros(coarse), rtol=1e-12, atol=1e-10,
                 require_fast=xp is np and numba_available())
        # the twin agrees with the assembled matrix too (an independent reference)
        out, dot = apply_op(uu, *arrays, xp.empty(shape))
        ref = st.to_csr() @ u.ravel()
        np.testing.assert_allclose(np.asarray(out.get() if xp is not np else out).ravel(), ref,
                                   rtol=1e-12, atol=1e-10)
        assert dot == pytest.approx(float(u.ravel() @ ref), rel=1e-10)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reverse", [False, True])
def test_rbgs(xp, shape, reverse):
    rng = np.random.default_rng(1)
    u, f = rng.standard_normal(shape), rng.standard_normal(shape)
    for st, op in ((_var(shape, rng), fused.rbgs_var), (_const(shape), fused.rbgs_const)):
        check_op(op, *_dev(xp, u, f, *st.arrays()), 2, reverse, rtol=1e-12, atol=1e-12,
                 require_fast=_require(xp))


def test_rbgs_is_gauss_seidel_on_the_matrix():
    """Red-black GS equals a plain GS sweep over the reordered (red first) matrix."""
    rng = np.random.default_rng(2)
    shape = (3, 4, 5)
    st = _var(shape, rng)
    u, f = rng.standard_normal(shape), rng.standard_normal(shape)
    A = st.to_csr().toarray()
    idx = np.indices(shape).sum(axis=0).ravel() % 2
    x, b = u.ravel().copy(), f.ravel()
    for colour in (0, 1):
        for i in np.nonzero(idx == colour)[0]:
            x[i] = (b[i] - A[i] @ x + A[i, i] * x[i]) / A[i, i]
    got = fused.rbgs_var(u.copy(), f, *st.arrays(), 1, False)
    np.testing.assert_allclose(got.ravel(), x, rtol=1e-12)


@pytest.mark.parametrize("fine,coarse", [((1, 8, 6), (1, 4, 3)), ((4, 6, 8), (2, 3, 4)),
                                         ((3, 8, 4), (3, 4, 2))])
def test_prolong_add(xp, fine, coarse):
    rng = np.random.default_rng(3)
    u, ec = rng.standard_normal(fine), rng.standard_normal(coarse)
    signs = np.array([-1.0, 1.0, 1.0, -1.0, -1.0, -1.0])
    check_op(fused.prolong_add, *_dev(xp, u, ec, signs), rtol=1e-12, atol=1e-12,
             require_fast=_require(xp))


@pytest.mark.parametrize("fine,coarse", [((1, 16, 8), (1, 8, 4)), ((8, 6, 4), (4, 3, 2)),
                                         ((1, 2, 10), (1, 1, 5)), ((6, 8, 3), (3, 4, 3))])
def test_restrict_t_twins_and_adjoint_of_prolong(xp, fine, coarse):
    """restrict_t is P^T / 2^d: <P e, r> = 2^d <e, R r> against the prolong_add kernel."""
    rng = np.random.default_rng(8)
    r, ec = rng.standard_normal(fine), rng.standard_normal(coarse)
    for signs in (np.array([-1.0, 1.0, 1.0, -1.0, -1.0, 1.0]), np.ones(6)):
        check_op(fused.restrict_t, *_dev(xp, r, np.empty(coarse), signs), rtol=1e-12,
                 atol=1e-12, require_fast=_require(xp))
        # the fused residual + transpose restriction of a uniform stencil against its parts
        shape3 = fine
        st = _const(shape3)
        u, f = rng.standard_normal(shape3), rng.standard_normal(shape3)
        check_op(fused.residual_restrict_t_const,
                 *_dev(xp, u, f, *st.arrays(), np.empty(coarse), signs), rtol=1e-11,
                 atol=1e-11, require_fast=_require(xp))
        pe = fused.prolong_add.reference(np.zeros(fine), ec, signs)
        fc = fused.restrict_t.reference(r, np.empty(coarse), signs)[0]
        d = sum(a != b for a, b in zip(fine, coarse))
        np.testing.assert_allclose((pe * r).sum(), 2**d * (ec * fc).sum(), rtol=1e-12)


def test_prolong_reproduces_linear_functions_inside():
    # a linear coarse field interpolates exactly away from the edges
    m = np.arange(6.0)
    ec = (m[None, :, None] * 2.0 + m[None, None, :] * 3.0)
    u = fused.prolong_add.reference(np.zeros((1, 12, 12)), ec, np.ones(6))
    x = (np.arange(12) + 0.5) / 2 - 0.5
    exact = x[:, None] * 2.0 + x[None, :] * 3.0
    np.testing.assert_allclose(u[0, 1:-1, 1:-1], exact[1:-1, 1:-1], atol=1e-12)


@pytest.mark.parametrize("n", [1, 17, 1000])
def test_vector_kernels(xp, n):
    rng = np.random.default_rng(4)
    x, r, p, q = (rng.standard_normal(n) for _ in range(4))
    check_op(fused.axpy_norm, *_dev(xp, x, r, p, q), 0.37, rtol=1e-12, atol=1e-12,
             require_fast=_require(xp))
    d = rng.uniform(0.5, 2, n)
    check_op(fused.jacobi_dot, *_dev(xp, r, d, np.empty(n)), rtol=1e-12, atol=1e-12,
             require_fast=_require(xp))


@pytest.mark.parametrize("n", [5, 300])
def test_pipecg_update(n):
    rng = np.random.default_rng(5)
    vs = rng.standard_normal((10, n))
    check_op(fused.pipecg_update, vs, 0.3, 0.7, rtol=1e-12, atol=1e-12,
             require_fast=numba_available())


def test_every_solve_op_has_cpu_and_gpu_twins():
    import skiff.kernels.solve.parallel.operator  # noqa: F401 (registers the block smoother)

    ops = {k: v for k, v in registered_ops().items() if k.startswith("solve.")}
    assert len(ops) == 17
    for name, op in ops.items():
        backends = {i.backend for i in op.impls}
        if name not in ("solve.csr_matvec", "solve.dot"):  # scipy/numpy are compiled already
            assert "cpu" in backends, name
        if name not in ("solve.pipecg_update", "solve.restrict", "solve.block_colour_const",
                        "solve.block_colour_var"):  # their xp twin runs on GPUs
            assert "gpu" in backends, name


def test_cuda_twins_load_at_the_first_gpu_lookup_only():
    """fused.py names cuda.py (which imports it) instead of importing it back."""
    import sys

    code = ("import sys\n"
            "from skiff.kernels.solve import fused\n"
            "assert 'skiff.kernels.solve.cuda' not in sys.modules\n"
            "fused.apply_var.available_impls('cpu')\n"
            "assert 'skiff.kernels.solve.cuda' not in sys.modules\n"
            "fused.apply_var.available_impls('gpu')\n"
            "assert 'skiff.kernels.solve.cuda' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None and not
                    __import__("os").path.exists("/usr/local/bin/nvcc"), reason="no nvcc")
def test_cuda_source_compiles(tmp_path):
    nvcc = shutil.which("nvcc") or "/usr/local/bin/nvcc"
    out = tmp_path / "kernels.ptx"
    proc = subprocess.run([nvcc, "-ptx", "-arch=sm_80", str(SOURCE_PATH), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ptx = out.read_text()
    for name in ("apply_var", "apply_const", "gs_var", "gs_const", "residual_restrict_var",
                 "residual_restrict_const", "prolong_add", "axpy_norm", "jacobi_dot",
                 "restrict_t"):
        assert f".entry {name}(" in ptx, name
