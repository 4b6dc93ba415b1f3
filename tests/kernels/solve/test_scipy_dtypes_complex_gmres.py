"""skiff.solve as a SciPy user expects it (round 26): the returned dtype follows A and b,
GMRES's ``maxiter`` counts restart cycles and ``restart=None`` is SciPy's 20, and complex
systems run through CG (Hermitian), BiCGStab, GMRES and the direct solve. SciPy is the oracle."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import skiff
from skiff.kernels.solve.krylov import SolveError


def _laplacian(n):
    return sp.diags([-1.0, 2.05, -1.0], [-1, 0, 1], shape=(n, n)).tocsr()


def _convection(n, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.diags([-1.4, 2.2, -0.6], [-1, 0, 1], shape=(n, n)).tolil()
    A[0, n - 1] = 0.3     # not banded: GMRES needs several cycles
    return (A + sp.diags(0.1 * rng.random(n))).tocsr()


def _complex_rhs(n, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n) + 1j * rng.standard_normal(n)


def _pr_norm_count(A, b, **kw):
    count = []
    x, info = sla.gmres(A, b, callback=lambda r: count.append(r), callback_type="pr_norm", **kw)
    return x, info, len(count)


@pytest.mark.parametrize("a_dtype, b_dtype", [(np.float32, np.float32),
                                              (np.float32, np.float64),
                                              (np.int64, np.int64),
                                              (np.complex64, np.complex64),
                                              (np.float64, np.complex128)])
def test_returned_dtype_is_scipys(a_dtype, b_dtype):
    A = _laplacian(60)
    rng = np.random.default_rng(3)
    b = rng.standard_normal(60) + (1j * rng.standard_normal(60) if np.dtype(b_dtype).kind == "c"
                                   else 0)
    As, bs = (A * 4).astype(a_dtype), (b * 4 if np.dtype(b_dtype).kind != "i" else
                                       np.arange(60)).astype(b_dtype)
    x_ref, info = sla.gmres(As, bs, rtol=1e-5, restart=60)
    sol = skiff.solve(As, bs, method="gmres", precond="none", rtol=1e-5, restart=60)
    assert info == 0 and sol.converged
    assert sol.x.dtype == x_ref.dtype
    exact = sla.spsolve(As.astype(np.complex128).tocsc(), bs.astype(np.complex128))
    scale = np.linalg.norm(exact)
    assert np.linalg.norm(sol.x - exact) <= 1e-4 * scale
    assert np.linalg.norm(x_ref - exact) <= 1e-4 * scale


def test_float32_linear_operator_returns_float32():
    A = _laplacian(40).astype(np.float32)
    L = sla.LinearOperator(A.shape, matvec=lambda v: A @ v, dtype=np.float32)
    b = np.ones(40, np.float32)
    x_ref, _ = sla.cg(L, b, rtol=1e-6)
    sol = skiff.solve(L, b, method="cg", rtol=1e-6)
    assert sol.x.dtype == x_ref.dtype == np.float32
    np.testing.assert_allclose(sol.x, x_ref, rtol=1e-4)


def test_gmres_maxiter_counts_restart_cycles_as_scipy():
    A, b = _convection(200), np.ones(200)
    x_ref, info, inner = _pr_norm_count(A, b, rtol=1e-12, restart=5, maxiter=3)
    sol = skiff.solve(A, b, method="gmres", precond="none", rtol=1e-12, restart=5, maxiter=3)
    assert info == 3 and inner == 15           # scipy: 3 cycles of 5
    assert not sol.converged and sol.iterations == inner
    assert sol.scipy_info == info and tuple(sol)[1] == info
    assert "restart cycles" in sol.status
    # the same Krylov spaces from x0 = 0: the same iterate after 3 cycles
    np.testing.assert_allclose(sol.x, x_ref, rtol=1e-9, atol=1e-12)


def test_gmres_restart_none_is_scipys_20():
    A, b = _convection(300, seed=2), np.ones(300)
    x_ref, info, inner = _pr_norm_count(A, b, rtol=1e-9)            # restart=None: 20
    sol = skiff.solve(A, b, method="gmres", precond="none", rtol=1e-9, restart=None)
    assert info == 0 and sol.converged
    assert sol.iterations == inner and inner > 20   # more than one cycle, as many as scipy
    np.testing.assert_allclose(sol.x, x_ref, rtol=1e-7, atol=1e-10)
    _, info2, _ = _pr_norm_count(A, b, rtol=1e-9, maxiter=1)
    one = skiff.solve(A, b, method="gmres", precond="none", rtol=1e-9, restart=None,
                      maxiter=1)
    assert one.iterations == 20 and one.scipy_info == info2 == 1


def _hermitian(n, seed=4):
    rng = np.random.default_rng(seed)
    off = 0.4 * (rng.standard_normal(n - 1) + 1j * rng.standard_normal(n - 1))
    return (sp.diags(np.full(n, 2.5)) + sp.diags(off, 1) + sp.diags(off.conj(), -1)).tocsr()


def test_complex_hermitian_cg_is_scipys():
    A = _hermitian(150)
    b = _complex_rhs(150)
    its = []
    x_ref, info = sla.cg(A, b, rtol=1e-10, callback=lambda xk: its.append(1))
    sol = skiff.solve(A, b, method="cg", precond="none", rtol=1e-10)
    assert info == 0 and sol.converged and sol.x.dtype == np.complex128
    assert abs(sol.iterations - len(its)) <= 1
    np.testing.assert_allclose(sol.x, x_ref, rtol=1e-8, atol=1e-10)
    auto = skiff.solve(A, b, rtol=1e-10)             # Hermitian PD: auto picks CG
    assert auto.method == "cg" and auto.converged
    np.testing.assert_allclose(auto.x, x_ref, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("method", ["gmres", "bicgstab"])
def test_complex_non_hermitian_as_scipy(method):
    n = 120
    A = (_convection(n) + 1j * sp.diags(np.linspace(0.1, 0.5, n)) +
         sp.diags(np.full(n - 2, 0.2j), 2)).tocsr()
    b = _complex_rhs(n, seed=5)
    if method == "gmres":
        x_ref, info, inner = _pr_norm_count(A, b, rtol=1e-10, restart=30)
    else:
        its = []
        x_ref, info = sla.bicgstab(A, b, rtol=1e-10, callback=lambda xk: its.append(1))
        inner = len(its)
    sol = skiff.solve(A, b, method=method, precond="none", rtol=1e-10, restart=30)
    assert info == 0 and sol.converged and sol.x.dtype == np.complex128
    assert abs(sol.iterations - inner) <= 1
    exact = sla.spsolve(A.tocsc(), b)
    np.testing.assert_allclose(sol.x, exact, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(sol.x, x_ref, rtol=1e-7, atol=1e-8)
    with pytest.raises(SolveError, match="Hermitian"):
        skiff.solve(A, b, method="cg", precond="none")


def test_complex_preconditioned_operators_and_direct():
    n = 100
    A = (_convection(n, seed=6) + 0.3j * sp.eye(n)).tocsr()
    b = _complex_rhs(n, seed=7)
    exact = sla.spsolve(A.tocsc(), b)
    for kw in ({"precond": "jacobi"}, {"M": sla.spilu(A.tocsc())},
               {"precond": "auto"}, {"precond": "amg"}, {"method": "direct"}):
        sol = skiff.solve(A, b, **{"method": "gmres", **kw}, rtol=1e-11)
        assert sol.converged, kw
        np.testing.assert_allclose(sol.x, exact, rtol=1e-8, atol=1e-9, err_msg=str(kw))
    L = sla.LinearOperator(A.shape, matvec=lambda v: A @ v, dtype=np.complex128)
    sol = skiff.solve(L, b, method="bicgstab", rtol=1e-11)
    np.testing.assert_allclose(sol.x, exact, rtol=1e-8, atol=1e-9)
    with pytest.raises(ValueError, match="precond='amg', 'jacobi', 'none'"):
        skiff.solve(A, b, method="gmres", precond="chebyshev")   # AMG is complex since r27
    with pytest.raises(ValueError, match="pipecg"):
        skiff.solve(_hermitian(50), _complex_rhs(50), method="pipecg")


def test_real_system_complex_rhs_keeps_its_preconditioner():
    """A real A with a complex b (a time-harmonic right-hand side): the real AMG applies to
    the real and imaginary parts; SciPy's answer is that of the two real solves."""
    A = _laplacian(400) + sp.diags(np.linspace(0, 0.5, 400))
    b = _complex_rhs(400, seed=8)
    sol = skiff.solve(A, b, method="cg", precond="amg", rtol=1e-10)
    assert sol.converged and sol.x.dtype == np.complex128 and "amg" in sol.precond
    exact = sla.spsolve(A.tocsc(), b.real) + 1j * sla.spsolve(A.tocsc(), b.imag)
    np.testing.assert_allclose(sol.x, exact, rtol=1e-8, atol=1e-9)
    x_ref, info = sla.cg(A, b, rtol=1e-10)
    assert info == 0 and np.linalg.norm(sol.x - x_ref) <= 1e-7 * np.linalg.norm(exact)
    # a complex x0 with a real A and b: a real x, as SciPy's (which drops x0's imaginary
    # part; skiff iterates from it, towards the same real solution)
    x0 = 0.1j * np.ones(400) + 0.2
    with pytest.warns(np.exceptions.ComplexWarning):
        xs, _ = sla.gmres(A, b.real, x0=x0, rtol=1e-10)
    s0 = skiff.solve(A, b.real, x0=x0, method="gmres", rtol=1e-10)
    assert s0.x.dtype == xs.dtype == np.float64
    np.testing.assert_allclose(s0.x, sla.spsolve(A.tocsc(), b.real), rtol=1e-7, atol=1e-9)


def test_gmres_callback_types_as_scipy():
    A, b = _convection(150, seed=9), np.random.default_rng(9).standard_normal(150)
    for ctype in ("pr_norm", "legacy"):
        ref, got = [], []
        with np.errstate(all="ignore"):
            sla.gmres(A, b, rtol=1e-10, restart=10, callback=ref.append, callback_type=ctype)
        skiff.solve(A, b, method="gmres", precond="none", rtol=1e-10, restart=10,
                    callback=got.append, callback_type=ctype)
        assert all(np.isscalar(v) for v in got)
        assert len(got) == len(ref)          # one residual per inner iteration
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-13)
    ref, got = [], []
    x_ref, _ = sla.gmres(A, b, rtol=1e-10, restart=10, callback=lambda x: ref.append(x.copy()),
                         callback_type="x")
    sol = skiff.solve(A, b, method="gmres", precond="none", rtol=1e-10, restart=10,
                      callback=lambda x: got.append(x.copy()), callback_type="x")
    assert len(got) == len(ref) == sol.cycles      # once per restart cycle
    for mine, theirs in zip(got, ref):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got[-1], sol.x)
    with pytest.raises(ValueError, match="callback_type"):
        skiff.solve(A, b, method="gmres", callback=print, callback_type="residual")


@pytest.mark.parametrize("name, hint", [("qmr", "bicgstab"),
                                        ("lgmres", "restart="), ("spsolve", "method='direct'"),
                                        ("lsqr", "least squares")])
def test_scipy_method_names_say_what_to_use(name, hint):
    A, b = _laplacian(20), np.ones(20)
    getattr(sla, name)   # a real scipy.sparse.linalg name
    with pytest.raises(ValueError, match=hint):
        skiff.solve(A, b, method=name)


def test_m_none_is_scipys_no_preconditioner_and_a_pyamg_solver_is_its_cycle():
    import pyamg

    A, b = _laplacian(200), np.ones(200)
    its = []
    sla.cg(A, b, rtol=1e-9, M=None, callback=lambda xk: its.append(1))
    sol = skiff.solve(A, b, method="cg", rtol=1e-9, M=None)
    assert sol.precond == "none" and sol.iterations == len(its)
    assert skiff.solve(A, b, method="cg", rtol=1e-9, precond=None).iterations == len(its)
    ml = pyamg.smoothed_aggregation_solver(A)
    its = []
    sla.cg(A, b, rtol=1e-9, M=ml.aspreconditioner(), callback=lambda xk: its.append(1))
    sol = skiff.solve(A, b, method="cg", rtol=1e-9, M=ml)     # the solver itself
    assert sol.converged and abs(sol.iterations - len(its)) <= 1


def test_float32_result_reports_the_residual_of_the_rounded_x():
    A = _laplacian(300)
    b = np.random.default_rng(11).standard_normal(300)
    A32, b32 = A.astype(np.float32), b.astype(np.float32)
    sol = skiff.solve(A32, b32, method="cg", rtol=1e-10)
    assert sol.converged and sol.x.dtype == np.float32
    A64, b64 = A32.astype(np.float64), b32.astype(np.float64)
    by_hand = np.linalg.norm(b64 - A64 @ sol.x.astype(np.float64)) / np.linalg.norm(b64)
    assert sol.info["rounded_residual"] == pytest.approx(by_hand, rel=1e-6)
    assert sol.relative_residual <= 1e-10 < by_hand   # the float64 iterate's, then rounding
    x_ref, _ = sla.cg(A32, b32, rtol=1e-6)    # float32 iterations: no closer than rounding
    assert by_hand <= np.linalg.norm(b64 - A64 @ x_ref.astype(np.float64)) / np.linalg.norm(b64)


def test_complex_lists_real_factor_preconditioner_and_saved_solution(tmp_path):
    from skiff.kernels.solve import Solution

    rows, rhs = [[2, 1j], [-1j, 3]], [1, 1]
    np.testing.assert_allclose(skiff.solve(rows, rhs, rtol=1e-12).x, np.linalg.solve(rows, rhs),
                               rtol=1e-10)
    n = 120
    A = _convection(n, seed=12)
    Ac = (A + 0.2j * sp.eye(n)).tocsr()
    b = _complex_rhs(n, seed=13)
    ilu = sla.spilu(A.tocsc())    # a real factorisation as M of a complex system: by parts
    by_parts = sla.LinearOperator(Ac.shape, dtype=complex,
                                  matvec=lambda r: ilu.solve(r.real) + 1j * ilu.solve(r.imag))
    x_ref, info, inner = _pr_norm_count(Ac, b, M=by_parts, rtol=1e-10, restart=30)
    sol = skiff.solve(Ac, b, method="gmres", M=ilu, rtol=1e-10)
    assert info == 0 and sol.converged
    assert abs(sol.iterations - inner) <= 2          # right- vs SciPy's left-preconditioning
    np.testing.assert_allclose(sol.x, sla.spsolve(Ac.tocsc(), b), rtol=1e-7, atol=1e-9)
    back = Solution.load(sol.save(tmp_path / "x.npz"))
    assert back.x.dtype == np.complex128
    np.testing.assert_array_equal(back.x, sol.x)


def test_grid_problem_with_complex_b_names_the_matrix_route():
    from skiff.kernels.solve import poisson

    grid = poisson((12, 12))
    b = np.random.default_rng(14).standard_normal(144) * (1 + 0.5j)
    with pytest.raises(ValueError, match=r"problem.matrix\(\)"):
        skiff.solve(grid, b)
    A = grid.matrix()            # the named route gives SciPy's answer
    sol = skiff.solve(A, b, rtol=1e-11)
    np.testing.assert_allclose(sol.x, sla.spsolve(A.tocsc(), b), rtol=1e-8, atol=1e-10)
