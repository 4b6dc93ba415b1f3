"""A researcher's own discretised PDEs (scikit-fem) through skiff's AMG, against pyamg and SciPy.

    python benchmarks/bench_pde_user.py [--cases p1,p2,...] [--small] [--no-write]

Each (case, tool) runs in a fresh process with one BLAS/numba thread. skiff: ``Solver(A,
method=..., precond="amg", near_nullspace=B)`` set up once, then ``solve``; pyamg:
``smoothed_aggregation_solver(A, B=B)`` then ``ml.solve(b, tol=1e-8, accel=...)`` (its users'
way; ``symmetry='nonsymmetric'`` for the non-symmetric cases); the relative residual is the
true ``|b - Ax|/|b|`` of the returned x. A small warm-up solve runs first in each process, so
the setup figures exclude numba's one-time load of its cached kernels (~0.3-0.45 s per fresh
process; pyamg has no such cost). ``heat`` is 20 implicit-Euler steps with one matrix (setup
once, 20 solves: the total is what a time stepper pays).

Cases: P1/P2 Poisson on scikit-fem's unstructured disc, an 8x8 checkerboard coefficient
1e-6..1e6, rotated anisotropic diffusion (eps 1e-3, 30 degrees), 3D P1 Poisson, 2D/3D linear
elasticity with the rigid-body modes (``skiff.kernels.solve.amg_modes.rigid_body_modes``),
heat, Helmholtz (K - 100 M, indefinite: GMRES) and convection-diffusion (eps 1e-2: GMRES).
Round 27: ``helmc``, Helmholtz with an absorbing boundary (K - k^2 M - i k M_boundary, k = 20,
complex symmetric: GMRES with complex AMG; pyamg ``symmetry='symmetric'``), ``el3e``, 3-D
elasticity at nu = 0.45 with ``strength='evolution'`` and the rigid-body modes (both tools),
``el3s`` the same with each tool's default strength, and ``heat100``: 100 implicit-Euler steps.
Round 28: ``helmcocg``, ``helmc`` with skiff's COCG (what ``auto`` takes for A = A^T; pyamg's
``accel='bicgstab'``); ``gel2``, pyamg.gallery's 2-D elasticity (300x300, CSR, its rigid-body
modes: skiff aggregates its nodes); ``bratu``, Bratu's problem ``-Δu = 6 e^u`` (5-point, 500²)
by 6 Newton steps: skiff one ``Solver`` and ``update`` (AMG's aggregates kept), pyamg a new
hierarchy per step; ``stokes``, Taylor-Hood Stokes from ``scipy.sparse.bmat`` (36 483
unknowns): skiff ``auto`` (MINRES with its saddle-point block preconditioner), against
SciPy's ``minres`` with the same block built on pyamg's V-cycle (SciPy stops on its own
estimate: see the residual column).
Round 36: ``aniso3``, 7-point 3-D 40^3 with y and z at 1e-2: skiff ``auto`` (classical AMG
for the anisotropy) against pyamg's ``ruge_stuben_solver`` (its SA takes 25 iterations).
Round 33: ``cells3drs``, ``p1rs``, ``p3drs``, ``contrastrs``, ``anisors``, ``jump2rs``: the
matrices of ``cells3d``, ``p1``, ... with classical AMG in both tools (skiff
``Solver(A, precond='amg', amg='classical')``, pyamg ``ruge_stuben_solver(A)``, theta 0.25).
Round 32: ``cells3d``, 3-D finite volumes with 30 % of the cells at 1e6 at random
(32 768), against pyamg's ``ruge_stuben_solver`` (its SA takes 981 iterations). skiff's AMG
smooths 3-D systems (the el3* and free3 rows, el3d) with nodal-block
symmetric Gauss-Seidel as pyamg does (el3i 87 -> 66 CG iterations, pyamg 66).
Round 29: ``el3i``, 3-D elasticity at nu = 0.49 (near-incompressible) with the rigid-body
modes; ``aniso4``, ``aniso`` with eps = 1e-4; ``jump2``, P2 on the unstructured disc with
inclusions of 1e6 and 1e-6 (a coefficient evaluated at the quadrature points: elements
straddle the jumps; spsolve's own |r|/|b| is ~2e-7, so rtol 1e-8 is out of reach and both run
to their limit or stop on attainable accuracy); ``cn200``, Crank-Nicolson for the heat
equation, 200 steps with one setup; ``free3``, 3-D elasticity with no support (singular: the
six rigid-body modes are its null space, given as ``near_nullspace``; b orthogonal to them).
``jump2s``: ``jump2`` with each tool's Schwarz smoother (skiff
``smoother='schwarz-overlap'``: additive, on the aggregates grown by their neighbours;
pyamg ``presmoother=postsmoother=('schwarz', {'sweep': 'symmetric'})``: overlapping, one
patch per unknown).
Round 29 (h11): ``graphba``, the Laplacian of a Barabasi-Albert graph (networkx, 50 000 nodes,
3 edges per new node) plus 1e-3 I, a random b: a scale-free network's hubs (skiff's setup
ran over 300 s before its fill guard; both tools' defaults).
Round 31: ``el3d``, 3-D elasticity (nu = 0.3, 24 843 unknowns) with the Dirichlet rows set
by ``skfem.enforce`` (identity rows, the columns kept: not symmetric): skiff ``auto`` (CG on
the symmetric rest since round 31, GMRES before), pyamg ``symmetry='nonsymmetric'`` with
``accel='gmres'`` (a non-symmetric matrix's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
       "MKL_NUM_THREADS": "1"}
for _k, _v in ENV.items():
    os.environ.setdefault(_k, _v)

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "pde_user.md"


# ------------------------------------------------------------------------------ the cases
def _elasticity(k, nu):
    import skfem
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    from skiff.kernels.solve.amg_modes import rigid_body_modes

    axes = [np.linspace(0, 4, 4 * k + 1)] + [np.linspace(0, 1, k + 1)] * 2
    ib = skfem.Basis(skfem.MeshTet.init_tensor(*axes), skfem.ElementVector(skfem.ElementTetP1()))
    A = linear_elasticity(*lame_parameters(1e3, nu)).assemble(ib)
    b = skfem.LinearForm(lambda v, w: -v[1]).assemble(ib)
    A, b, keep = _inner(A, b, ib, ib.get_dofs(lambda x: x[0] == 0.0))
    return A, b, rigid_body_modes(ib.doflocs.T)[keep]


def _enforced_elasticity(k, nu):
    """``_elasticity``'s problem with the Dirichlet rows set by ``skfem.enforce`` (identity
    rows, the columns kept: not symmetric) instead of condensed out."""
    import skfem
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    from skiff.kernels.solve.amg_modes import rigid_body_modes

    axes = [np.linspace(0, 4, 4 * k + 1)] + [np.linspace(0, 1, k + 1)] * 2
    ib = skfem.Basis(skfem.MeshTet.init_tensor(*axes), skfem.ElementVector(skfem.ElementTetP1()))
    A = linear_elasticity(*lame_parameters(1e3, nu)).assemble(ib)
    b = skfem.LinearForm(lambda v, w: -v[1]).assemble(ib)
    A, b = skfem.enforce(A, b, D=ib.get_dofs(lambda x: x[0] == 0.0))
    return A.tocsr(), b, rigid_body_modes(ib.doflocs.T)


def _inner(A, b, basis, D=None):
    keep = basis.complement_dofs(basis.get_dofs() if D is None else D)
    return A[keep][:, keep].tocsr(), b[keep], keep


def _diffusion(mesh, elem, coef=None):
    import skfem
    from skfem.helpers import grad
    from skfem.models.poisson import laplace, unit_load

    ib = skfem.Basis(mesh, elem)
    if coef is None:
        A = laplace.assemble(ib)
    else:
        @skfem.BilinearForm
        def a(u, v, w):
            return coef(grad(u), grad(v), w)
        A = a.assemble(ib)
    return ib, A, unit_load.assemble(ib)


def _rotated_anisotropy(r, eps):
    """P1 diffusion on the unit square with the tensor diag(1, eps) turned 30 degrees."""
    from skfem import ElementTriP1, MeshTri

    cs, sn = np.cos(np.pi / 6), np.sin(np.pi / 6)
    Q = np.array([[cs, -sn], [sn, cs]])
    K = Q @ np.diag([1.0, eps]) @ Q.T
    ib, A, b = _diffusion(MeshTri.init_sqsymmetric().refined(8 - r), ElementTriP1(),
                          lambda gu, gv, w: sum(K[i, j] * gu[i] * gv[j]
                                                for i in range(2) for j in range(2)))
    return (*_inner(A, b, ib)[:2], None)


def build(case: str, small: bool):
    if case in CLASSICAL:   # the same matrix, classical AMG in both tools
        return build(CLASSICAL[case], small)
    import skfem
    from skfem import ElementTriP1, ElementTriP2, MeshTri

    r = 1 if small else 0
    if case in ("p1", "p2"):
        ib, A, b = _diffusion(MeshTri.init_circle(8 - r if case == "p1" else 7 - r),
                              ElementTriP1() if case == "p1" else ElementTriP2())
        return (*_inner(A, b, ib)[:2], None)
    if case == "contrast":
        m = MeshTri.init_sqsymmetric().refined(8 - r)
        c = m.p[:, m.t].mean(axis=1)
        cell = np.clip((np.floor(c[0] * 8) + 8 * np.floor(c[1] * 8)).astype(int), 0, 63)
        kappa = 10 ** np.random.default_rng(0).uniform(-6, 6, 64)[cell]
        kf = skfem.Basis(m, skfem.ElementTriP0()).interpolate(kappa)
        ib, _, b = _diffusion(m, ElementTriP1())
        A = skfem.BilinearForm(lambda u, v, w: w.k * (u.grad[0] * v.grad[0]
                                                      + u.grad[1] * v.grad[1])).assemble(ib, k=kf)
        return (*_inner(A, b, ib)[:2], None)
    if case in ("aniso", "aniso4"):  # rotated 30 degrees, eps 1e-3 or 1e-4
        return _rotated_anisotropy(r, 1e-3 if case == "aniso" else 1e-4)
    if case == "p3d":
        ib, A, b = _diffusion(skfem.MeshTet().refined(5 - r), skfem.ElementTetP1())
        return (*_inner(A, b, ib)[:2], None)
    if case in ("el2", "el3"):
        from skfem.models.elasticity import lame_parameters, linear_elasticity

        from skiff.kernels.solve.amg_modes import rigid_body_modes

        k = (2 ** (6 - r)) if case == "el2" else 2 ** (3 - r)
        axes = [np.linspace(0, 4, 4 * k + 1)] + [np.linspace(0, 1, k + 1)] * (
            1 if case == "el2" else 2)
        if case == "el2":
            m, e = MeshTri.init_tensor(*axes), ElementTriP1()
        else:
            m, e = skfem.MeshTet.init_tensor(*axes), skfem.ElementTetP1()
        ib = skfem.Basis(m, skfem.ElementVector(e))
        A = linear_elasticity(*lame_parameters(1e3, 0.3)).assemble(ib)
        b = skfem.LinearForm(lambda v, w: -v[1]).assemble(ib)
        A, b, keep = _inner(A, b, ib, ib.get_dofs(lambda x: x[0] == 0.0))
        return A, b, rigid_body_modes(ib.doflocs.T)[keep]
    if case in ("el3e", "el3s"):
        return _elasticity(2 ** (3 - r), 0.45)
    if case == "el3i":
        return _elasticity(2 ** (3 - r), 0.49)
    if case == "el3d":
        return _enforced_elasticity(2 ** (4 - r), 0.3)
    if case in ("jump2", "jump2s"):
        def kappa(x):
            s = np.sin(7 * x[0]) * np.sin(7 * x[1])
            return np.where(s > 0.3, 1e6, np.where(s < -0.3, 1e-6, 1.0))

        ib, A, b = _diffusion(MeshTri.init_circle(5 - r), ElementTriP2(),
                              lambda gu, gv, w: kappa(w.x) * (gu[0] * gv[0] + gu[1] * gv[1]))
        return (*_inner(A, b, ib)[:2], None)
    if case == "cn200":
        from skfem.models.poisson import mass
        ib, K, b = _diffusion(MeshTri.init_circle(7 - r), ElementTriP1())
        M = mass.assemble(ib)
        A, b, keep = _inner(M + 0.5e-3 * K, b, ib)
        return A, b, (M - 0.5e-3 * K)[keep][:, keep].tocsr()
    if case == "free3":
        from skfem.models.elasticity import lame_parameters, linear_elasticity

        from skiff.kernels.solve.amg_modes import rigid_body_modes

        k = 2 ** (3 - r)
        axes = [np.linspace(0, 4, 4 * k + 1)] + [np.linspace(0, 1, k + 1)] * 2
        ib = skfem.Basis(skfem.MeshTet.init_tensor(*axes),
                         skfem.ElementVector(skfem.ElementTetP1()))
        A = linear_elasticity(*lame_parameters(1e3, 0.3)).assemble(ib).tocsr()
        B = rigid_body_modes(ib.doflocs.T)
        Q, _ = np.linalg.qr(B)
        b = np.random.default_rng(0).standard_normal(A.shape[0])
        return A, b - Q @ (Q.T @ b), B
    if case == "gel2":
        import pyamg

        A, B = pyamg.gallery.linear_elasticity((150, 150) if small else (300, 300))
        return A.tocsr(), np.random.default_rng(0).standard_normal(A.shape[0]), B
    if case == "stokes":
        from skfem.models.general import divergence
        from skfem.models.poisson import vector_laplace

        m = MeshTri.init_sqsymmetric().refined(5 - r)
        ib = skfem.Basis(m, skfem.ElementVector(ElementTriP2()))
        pb = ib.with_element(ElementTriP1())
        K, D = vector_laplace.assemble(ib), -divergence.assemble(ib, pb)
        f = skfem.LinearForm(lambda v, w: v[0] * np.sin(np.pi * w.x[1]) + v[1] * w.x[0])
        ku = ib.complement_dofs(ib.get_dofs())
        import scipy.sparse as sp

        A = sp.bmat([[K[ku][:, ku], D[:, ku].T], [D[:, ku], None]]).tocsr()
        return A, np.concatenate([f.assemble(ib)[ku], np.zeros(D.shape[0])]), len(ku)
    if case == "bratu":
        import scipy.sparse as sp

        k = 250 if small else 500
        T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
        return (sp.kronsum(T, T) * (k + 1) ** 2).tocsr(), np.zeros(k * k), 6.0
    if case in ("helmc", "helmcocg"):
        from skfem.models.poisson import mass
        mesh = MeshTri.init_sqsymmetric().refined(7 - r)
        ib = skfem.Basis(mesh, ElementTriP1())
        fb = skfem.FacetBasis(mesh, ElementTriP1())
        from skfem.models.poisson import laplace
        k = 20.0
        A = (laplace.assemble(ib) - k * k * mass.assemble(ib) - 1j * k * mass.assemble(fb))
        b = skfem.LinearForm(lambda v, w: np.exp(-100 * ((w.x[0] - 0.5) ** 2
                                                        + (w.x[1] - 0.3) ** 2)) * v)
        return A.tocsr(), b.assemble(ib).astype(np.complex128), None
    if case in ("heat", "heat100"):
        from skfem.models.poisson import mass
        ib, K, b = _diffusion(MeshTri.init_circle(8 - r), ElementTriP1())
        M = mass.assemble(ib)
        A, b, keep = _inner(M + 1e-3 * K, b, ib)
        return A, b, M[keep][:, keep].tocsr()
    if case == "helm":
        from skfem.models.poisson import mass
        ib, K, b = _diffusion(MeshTri.init_sqsymmetric().refined(7 - r), ElementTriP1())
        return (*_inner(K - 100.0 * mass.assemble(ib), b, ib)[:2], None)
    if case == "cd":
        ib, _, b = _diffusion(MeshTri.init_sqsymmetric().refined(7 - r), ElementTriP1())
        A = skfem.BilinearForm(lambda u, v, w: 1e-2 * (u.grad[0] * v.grad[0]
                                                       + u.grad[1] * v.grad[1])
                               + (u.grad[0] + 0.5 * u.grad[1]) * v).assemble(ib)
        return (*_inner(A, b, ib)[:2], None)
    if case == "graphba":
        import networkx as nx
        import scipy.sparse as sp

        n = 20000 if small else 50000
        L = nx.laplacian_matrix(nx.barabasi_albert_graph(n, 3, seed=1)).astype(float)
        return ((L + 1e-3 * sp.identity(n)).tocsr(),
                np.random.default_rng(0).standard_normal(n), None)
    if case == "cells3d":
        return (*_random_cells(16 if small else 32, 0.3), None)
    if case == "aniso3":   # round 36: 7-point 3-D, y and z coupled 1e-2 as strongly as x
        import scipy.sparse as sp

        m = 24 if small else 40
        T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
        Id = sp.identity(m)
        A = (sp.kron(sp.kron(T, Id), Id) + 1e-2 * sp.kron(sp.kron(Id, T), Id)
             + 1e-2 * sp.kron(sp.kron(Id, Id), T))
        return sp.csr_matrix(A), np.random.default_rng(0).standard_normal(m ** 3), None
    if case == "lap27":   # round 37: the 27-point 3-D Laplacian (a constant stencil)
        import scipy.sparse as sp

        m = 24 if small else 48
        one = sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(m, m))
        A = 27.0 * sp.identity(m ** 3) - sp.kron(sp.kron(one, one), one)
        return sp.csr_matrix(A), np.random.default_rng(0).standard_normal(m ** 3), None
    raise ValueError(f"unknown case {case!r}")


def _random_cells(n, fraction, high=1e6):
    """Cell-centred finite volumes on an n^3 grid, a fraction of the cells at ``high`` at
    random (heterogeneous permeability), harmonic face means, Dirichlet 0 outside."""
    import scipy.sparse as sp

    k = np.where(np.random.default_rng(0).random((n, n, n)) < fraction, high, 1.0)
    N = n ** 3
    idx = np.arange(N).reshape(n, n, n)
    rows, cols, vals, diag = [], [], [], np.zeros(N)
    for ax in range(3):
        a, i = np.moveaxis(k, ax, 0), np.moveaxis(idx, ax, 0)
        t = (2 * a[1:] * a[:-1] / (a[1:] + a[:-1])).ravel()
        p, q = i[1:].ravel(), i[:-1].ravel()
        rows += [p, q]
        cols += [q, p]
        vals += [-t, -t]
        np.add.at(diag, p, t)
        np.add.at(diag, q, t)
        np.add.at(diag, i[0].ravel(), 2 * a[0].ravel())
        np.add.at(diag, i[-1].ravel(), 2 * a[-1].ravel())
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(N, N)) + sp.diags(diag)
    return A.tocsr(), np.ones(N)


METHOD = {"helm": "gmres", "cd": "gmres", "helmc": "gmres", "helmcocg": "cocg",
          "stokes": "minres", "el3d": "auto"}
PYAMG_ACCEL = {"helmcocg": "bicgstab", "el3d": "gmres"}   # pyamg has no COCG
STRENGTH = {"el3e": "evolution"}   # both tools; otherwise each one's default
STEPS = {"heat": 20, "heat100": 100, "cn200": 200}
SCHWARZ = {"jump2s"}   # each tool's Schwarz smoother
# round 33: classical AMG in both tools (skiff amg='classical', pyamg ruge_stuben_solver,
# theta 0.25 both) on another case's matrix
CLASSICAL = {"cells3drs": "cells3d", "p1rs": "p1", "p3drs": "p3d", "contrastrs": "contrast",
             "anisors": "aniso", "jump2rs": "jump2"}
# pyamg's classical AMG (its SA takes 981 iterations on cells3d, 38 s; 25 on aniso3)
RUGE_STUBEN = {"cells3d", "aniso3"}
CASES = ["p1", "p2", "contrast", "aniso", "p3d", "el2", "el3", "heat", "helm", "cd",
         "helmc", "el3s", "el3e", "heat100", "helmcocg", "gel2", "bratu", "stokes",
         "el3i", "aniso4", "jump2", "cn200", "free3", "jump2s", "graphba", "el3d", "cells3d",
         "aniso3", "lap27", *CLASSICAL]


def _bratu(tool, L, lam, steps=6):
    """6 Newton steps on L u - lam e^u = 0 from u = 0: (setup s, solve s, mean iterations,
    relative residual of the last linear solve)."""
    import scipy.sparse as sp

    u, setup, solve, its, s = np.zeros(L.shape[0]), 0.0, 0.0, [], None
    for _ in range(steps):
        F = L @ u - lam * np.exp(u)
        J = (L - sp.diags(lam * np.exp(u))).tocsr()
        t0 = time.perf_counter()
        if tool == "skiff":
            from skiff.kernels.solve.solver import Solver

            s = Solver(J, method="cg", precond="amg") if s is None else s.update(J)
        else:
            import pyamg

            s = pyamg.smoothed_aggregation_solver(J)
        t1 = time.perf_counter()
        if tool == "skiff":
            sol = s.solve(-F, rtol=1e-8)
            du, k = np.asarray(sol.x), sol.iterations
        else:
            res = []
            du = s.solve(-F, tol=1e-8, accel="cg", residuals=res)
            k = len(res) - 1
        t2 = time.perf_counter()
        setup, solve = setup + t1 - t0, solve + t2 - t1
        its.append(k)
        u = u + du
    return setup, solve, sum(its) / steps, float(np.linalg.norm(F + J @ du) / np.linalg.norm(F))


def _stokes_pyamg_block(A, nu):
    """SciPy's minres's M: pyamg's V-cycle on K, diag(B diag(K)^-1 B^T)^-1 (skiff's block)."""
    import pyamg
    from scipy.sparse.linalg import LinearOperator

    K, D = A[:nu][:, :nu].tocsr(), A[nu:][:, :nu].tocsr()
    ml = pyamg.smoothed_aggregation_solver(K).aspreconditioner()
    sinv = 1.0 / np.asarray(abs(D).power(2) @ (1.0 / K.diagonal())).ravel()

    def apply(r):
        return np.concatenate([ml @ r[:nu], sinv * r[nu:]])

    return LinearOperator(A.shape, matvec=apply)


def _warm_skiff() -> None:
    """numba's one-time load out of the timings: a small solve, then wait (bounded) until the
    kernels are loaded (since round 27 a small solve runs the numpy twins and loads numba on a
    background thread, so the warm-up solve alone no longer loads it)."""
    import scipy.sparse as sp

    from skiff.kernels.solve import fused
    from skiff.kernels.solve.solver import Solver

    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(3000, 3000)).tocsr()
    Solver(A, method="cg", precond="amg").solve(np.ones(3000))
    deadline = time.monotonic() + 120
    while not fused.numba_loaded() and time.monotonic() < deadline:
        time.sleep(0.05)
    from skiff.kernels.solve.amg_rs import RugeStuben  # its numba kernels: cache load

    RugeStuben(sp.kron(A[:60, :60], sp.eye(60)) + sp.kron(sp.eye(60), A[:60, :60]))


# ------------------------------------------------------------------------------ one run
def run_one(case: str, tool: str, small: bool) -> dict:
    import scipy.sparse as sp

    A, b, extra = build(case, small)
    n = A.shape[0]
    if case == "bratu":
        warm = np.ones(3000)
        if tool == "skiff":   # numba's load, as the other cases' warm-up
            _warm_skiff()
        setup, solve, its, rel = _bratu(tool, A, extra)
        return {"case": case, "tool": tool, "method": "cg", "n": n, "nnz": int(A.nnz),
                "setup_s": setup, "solve_s": solve, "iterations": its, "relres": rel}
    if case == "stokes":
        if tool == "skiff":
            _warm_skiff()
        t0 = time.perf_counter()
        if tool == "skiff":
            from skiff.kernels.solve.solver import Solver

            s = Solver(A)   # auto: MINRES with the saddle-point block preconditioner
            t1 = time.perf_counter()
            sol = s.solve(b, rtol=1e-8)
            x, its = np.asarray(sol.x), sol.iterations
        else:
            from scipy.sparse.linalg import minres

            M = _stokes_pyamg_block(A, extra)
            t1 = time.perf_counter()
            count = [0]
            x, _ = minres(A, b, M=M, rtol=1e-8, maxiter=5000,
                          callback=lambda xk: count.__setitem__(0, count[0] + 1))
            its = count[0]
        t2 = time.perf_counter()
        return {"case": case, "tool": tool, "method": "minres", "n": n, "nnz": int(A.nnz),
                "setup_s": t1 - t0, "solve_s": t2 - t1, "iterations": its,
                "relres": float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))}
    steps = STEPS.get(case, 1)
    mass, B = (extra, None) if case in STEPS else (None, extra)
    strength = STRENGTH.get(case)
    method = METHOD.get(case, "cg")
    if tool == "pyamg":
        method = PYAMG_ACCEL.get(case, method)
    out = {"case": case, "tool": tool, "method": method, "n": n, "nnz": int(A.nnz)}
    warm = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(3000, 3000)).tocsr()
    if tool == "skiff":
        from skiff.kernels.solve.solver import Solver

        _warm_skiff()
        t0 = time.perf_counter()
        if case in CLASSICAL:
            s = Solver(A, method=method, precond="amg", amg="classical")
        elif strength is None:
            s = Solver(A, method=method, precond="amg", near_nullspace=B,
                       smoother="schwarz-overlap" if case in SCHWARZ else "rbgs")
        else:   # a strength of the user's choice: the hierarchy as the preconditioner
            from skiff.kernels.solve.amg import SmoothedAggregation

            s = Solver(A, method=method, precond=SmoothedAggregation(
                A, B=B, strength=strength).aspreconditioner())
        out["setup_s"] = time.perf_counter() - t0

        def one(rhs):
            sol = s.solve(rhs, rtol=1e-8, maxiter=3000)
            return np.asarray(sol.x).ravel(), sol.iterations
    else:
        import pyamg

        pyamg.smoothed_aggregation_solver(warm).solve(np.ones(3000), accel="cg")
        kw = {} if method == "cg" else {"symmetry": "nonsymmetric"}
        if case in ("helmc", "helmcocg"):
            kw = {"symmetry": "symmetric"}   # complex symmetric (not Hermitian)
        if strength is not None:
            kw["strength"] = strength
        if case in SCHWARZ:
            kw["presmoother"] = kw["postsmoother"] = ("schwarz", {"sweep": "symmetric"})
        t0 = time.perf_counter()
        ml = (pyamg.ruge_stuben_solver(A) if case in RUGE_STUBEN or case in CLASSICAL else
              pyamg.smoothed_aggregation_solver(A, B=B, **kw))
        out["setup_s"] = time.perf_counter() - t0

        def one(rhs):
            res = []
            x = ml.solve(rhs, tol=1e-8, accel=method, residuals=res, maxiter=3000)
            return x, len(res) - 1
    u, its = np.zeros(n, dtype=b.dtype), []
    t0 = time.perf_counter()
    for _ in range(steps):
        rhs = b if mass is None else mass @ u + 1e-3 * b
        u, k = one(rhs)
        its.append(k)
    out["solve_s"] = time.perf_counter() - t0
    out["iterations"] = its[0] if steps == 1 else sum(its) / steps
    out["relres"] = float(np.linalg.norm(rhs - A @ u) / np.linalg.norm(rhs))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--small", action="store_true", help="one refinement less (quick check)")
    ap.add_argument("--no-write", action="store_true", help=f"print only (no {RESULTS.name})")
    ap.add_argument("--one", nargs=2, metavar=("CASE", "TOOL"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(*args.one, args.small)))
        return
    load0 = os.getloadavg()[0]
    rows = []
    for case in args.cases.split(","):
        for tool in ("skiff", "pyamg"):
            cmd = [sys.executable, __file__, "--one", case, tool] + (["--small"] * args.small)
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                               env={**os.environ, **ENV, "PYTHONPATH": str(ROOT)})
            line = p.stdout.strip().splitlines()[-1:] or ["{}"]
            try:
                rows.append(json.loads(line[0]))
            except json.JSONDecodeError:
                rows.append({"case": case, "tool": tool, "error": p.stderr.strip()[-300:]})
            print(json.dumps(rows[-1]), flush=True)
    load1 = os.getloadavg()[0]
    total = {(r["case"], r["tool"]): r["setup_s"] + r["solve_s"] for r in rows if "error" not in r}
    table = ["| case | n | method | tool | iterations | setup s | solve s | total s | |r|/|b| "
             "| pyamg / skiff total |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            table.append(f"| {r['case']} | | | {r['tool']} | error: {r['error'][:80]} "
                         f"| | | | | |")
            continue
        peer = total.get((r["case"], "pyamg"))
        ratio = (f"**{peer / total[(r['case'], 'skiff')]:.2f}x**"
                 if r["tool"] == "skiff" and peer else "")
        table.append(f"| {r['case']} | {r['n']} | {r['method']} | {r['tool']} | "
                     f"{r['iterations']:g} | {r['setup_s']:.3f} | {r['solve_s']:.3f} | "
                     f"{r['setup_s'] + r['solve_s']:.3f} | {r['relres']:.1e} | {ratio} |")
    text = (f"load average {load0:.2f} before the run, {load1:.2f} after, {os.cpu_count()} "
            f"cores; OPENBLAS_NUM_THREADS=1 for both\n\n" + "\n".join(table))
    print(text)
    if not args.no_write:
        notes = ""   # the hand-written notes below the table stay
        if RESULTS.exists() and "\nNotes" in RESULTS.read_text():
            old = RESULTS.read_text()
            notes = "\n" + old[old.index("\nNotes") + 1:]
        RESULTS.write_text("# A researcher's PDEs: skiff AMG vs pyamg SA\n\n"
                           "`python benchmarks/bench_pde_user.py` (one process per row, "
                           "one thread; setup excludes numba's one-time load)\n\n" + text +
                           "\n" + notes)

if __name__ == "__main__":
    main()
