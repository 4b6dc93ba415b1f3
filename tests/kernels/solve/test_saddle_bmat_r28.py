"""A saddle-point system handed over whole as ``scipy.sparse.bmat([[K, B^T], [B, None]])``
(round 28): ``auto`` builds a block-diagonal preconditioner (AMG on K, the diagonal of
``B diag(K)^-1 B^T`` for the constraints) and runs MINRES. Oracles: SciPy's ``spsolve`` (the
answer) and SciPy's ``minres`` without a preconditioner (what ran before)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from skiff.kernels.solve import Solver, solve
from skiff.kernels.solve.saddle import saddle_blocks


def _laplacian(m):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return sp.kronsum(T, T).tocsr()


def constrained(m=30):
    """A Laplacian with pair constraints u_i - u_(i+1) = 0 on every other unknown."""
    L = _laplacian(m)
    n = L.shape[0]
    B = sp.diags([1.0, -1.0], [0, 1], shape=(n // 2, n)).tocsr()
    K = sp.bmat([[L, B.T], [B, None]])
    return K, np.ones(K.shape[0])


def stokes(refine=4):
    """Taylor-Hood (P2/P1) Stokes on the unit square, velocity zero on the boundary: the
    pressure is determined up to a constant (K is singular, b consistent)."""
    skfem = pytest.importorskip("skfem")
    from skfem.models.general import divergence
    from skfem.models.poisson import vector_laplace

    m = skfem.MeshTri.init_sqsymmetric().refined(refine)
    ib = skfem.Basis(m, skfem.ElementVector(skfem.ElementTriP2()))
    pb = ib.with_element(skfem.ElementTriP1())
    A = vector_laplace.assemble(ib)
    B = -divergence.assemble(ib, pb)
    f = skfem.LinearForm(lambda v, w: v[0] * np.sin(np.pi * w.x[1]) + v[1] * w.x[0]).assemble(ib)
    ku = ib.complement_dofs(ib.get_dofs())
    K = sp.bmat([[A[ku][:, ku], B[:, ku].T], [B[:, ku], None]])
    return K, np.concatenate([f[ku], np.zeros(B.shape[0])]), len(ku)


def _scipy_minres_iterations(K, b):
    count = [0]
    sla.minres(K, b, rtol=1e-8, maxiter=20000,
               callback=lambda xk: count.__setitem__(0, count[0] + 1))
    return count[0]


def test_constrained_laplacian_auto_minres_block():
    K, b = constrained()
    ref = sla.spsolve(K.tocsc(), b)
    sol = solve(K, b, rtol=1e-10)
    assert sol.method == "minres" and sol.precond == "saddle" and sol.converged
    assert "saddle-point" in sol.info["solver"]
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    plain = solve(K, b, rtol=1e-10, precond="none")
    assert sol.iterations < plain.iterations


def test_stokes_from_bmat():
    """Stokes P2/P1: far fewer MINRES iterations than without a preconditioner (skiff's
    and SciPy's), and spsolve's velocity and pressure (up to its constant)."""
    K, b, nu = stokes()
    sol = solve(K, b, rtol=1e-9)
    assert sol.method == "minres" and sol.precond == "saddle" and sol.converged
    assert sol.iterations * 4 < _scipy_minres_iterations(K, b)
    # the oracle: the system bordered by the pressure mean (non-singular)
    npres = K.shape[0] - nu
    c = np.concatenate([np.zeros(nu), np.ones(npres)])[:, None]
    Kb = sp.bmat([[K, sp.csr_matrix(c)], [sp.csr_matrix(c.T), None]]).tocsc()
    # MMD on A^T A: 0.6 s CPU where SuperLU's default COLAMD took 3.3 (round 39)
    ref = sla.spsolve(Kb, np.append(b, 0.0), permc_spec="MMD_ATA")[:-1]
    u, p = sol.x[:nu], sol.x[nu:] - sol.x[nu:].mean()
    assert np.linalg.norm(u - ref[:nu]) <= 1e-6 * np.linalg.norm(ref[:nu])
    assert np.linalg.norm(p - ref[nu:]) <= 1e-5 * np.linalg.norm(ref[nu:])


def test_blocks_found_in_any_order():
    """The unknowns interleaved (a random permutation): the same blocks, the same answer."""
    K, b = constrained(20)
    perm = np.random.default_rng(4).permutation(K.shape[0])
    Kp = K.tocsr()[perm][:, perm]
    U, Z = saddle_blocks(Kp.tocsr())
    assert Z.size == K.shape[0] - 400 and U.size == 400
    sol = solve(Kp, b[perm], rtol=1e-10)
    assert sol.precond == "saddle" and sol.converged
    ref = sla.spsolve(Kp.tocsc(), b[perm])
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_block_preconditioner_is_spd():
    """MINRES needs M symmetric positive definite: u.Mv = v.Mu and u.Mu > 0."""
    K, _ = constrained(16)
    s = Solver(K, precond="saddle", method="minres")
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal(K.shape[0]), rng.standard_normal(K.shape[0])
    mu, mv = np.empty_like(u), np.empty_like(v)
    s.M(u, mu)
    s.M(v, mv)
    assert abs(u @ mv - v @ mu) <= 1e-10 * abs(u @ mv)
    assert u @ mu > 0 and v @ mv > 0


def test_saddle_refused_where_it_does_not_apply():
    with pytest.raises(ValueError, match="precond 'saddle' is for a real symmetric saddle"):
        Solver(_laplacian(8), precond="saddle", method="minres")
    K, _ = constrained(8)
    K = K.tolil()
    K[0, K.shape[0] - 1] = 5.0    # not symmetric: no saddle blocks; auto keeps its way
    sol = solve(K.tocsr(), np.ones(K.shape[0]), method="gmres", maxiter=50)
    assert sol.precond == "none"


def test_the_terminal_takes_the_block_preconditioner(tmp_path, runs_dir, capsys, monkeypatch):
    """A saddle-point .mtx from a terminal: MINRES with the block preconditioner (the
    summary says so), spsolve's x; and --precond saddle on a plain Laplacian is refused."""
    import json
    import os
    import subprocess
    import sys

    import scipy.io as sio

    K, b = constrained(16)
    sio.mmwrite(str(tmp_path / "K.mtx"), K, symmetry="symmetric")
    np.save(tmp_path / "b.npy", b)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "skiff", "solve", *args],
                              capture_output=True, text=True, timeout=180, cwd=tmp_path,
                              env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})

    out = cli("K.mtx", "b.npy", "--rtol", "1e-10", "--save", "x.npz", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["result"]["converged"] and doc["result"]["method"] == "minres"
    x = np.load(tmp_path / "x.npz")["field"].ravel()
    ref = sla.spsolve(K.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
    sio.mmwrite(str(tmp_path / "L.mtx"), _laplacian(8))
    from skiff.cli import main  # in this process (round 41: an interpreter less)

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["solve", "L.mtx", "--precond", "saddle"])   # a usage error, before any run
    err = capsys.readouterr().err
    assert code == 2 and "--precond saddle is for a real symmetric" in err, err
    assert not any(runs_dir.glob("*saddle*")) and len(list(runs_dir.iterdir())) == 1


def test_stabilised_saddle_point():
    """[[K, B^T], [B, -C]] with a small C (a stabilisation): auto ran GMRES with AMG built on
    the indefinite whole and stagnated at |r|/|b| = 1; now MINRES with diag(C + B D^-1 B^T)
    for the constraints: spsolve's x, in fewer iterations than SciPy's minres without M."""
    m = 30
    L = _laplacian(m)
    n = L.shape[0]
    B = sp.diags([1.0, -1.0], [0, 1], shape=(n // 2, n))
    K = sp.bmat([[L, B.T], [B, -0.01 * sp.identity(n // 2)]]).tocsr()
    b = np.ones(K.shape[0])
    sol = solve(K, b, rtol=1e-9)
    assert sol.method == "minres" and sol.precond == "saddle" and sol.converged
    ref = sla.spsolve(K.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    assert sol.iterations < _scipy_minres_iterations(K, b)


def test_indefinite_matrices_that_are_no_saddle_point():
    """A Helmholtz-like matrix whose diagonal changes sign and blockdiag(L, -L) (no
    coupling) are not taken for saddle points: auto keeps GMRES with AMG there."""
    m = 24
    L = _laplacian(m)
    n = L.shape[0]
    H = (L - sp.diags(np.linspace(3.0, 5.0, n))).tocsr()
    assert (H.diagonal() <= 0).any() and (H.diagonal() > 0).any()
    assert saddle_blocks(H) is None
    D = sp.bmat([[L, None], [None, -L]]).tocsr()
    assert saddle_blocks(D) is None
    sol = solve(D, np.ones(2 * n), rtol=1e-8)
    assert sol.precond == "amg" and sol.converged
