"""Source of notebooks/04-solving.ipynb (build with: python notebooks/build.py 04-solving)."""

# %% [markdown]
# # Solving PDEs from a cell: Poisson and a jumping coefficient, several ways
#
# Elliptic equations such as `-div(k grad u) = f` are the inner loop of most simulations: the
# pressure of an incompressible flow, heat conduction, electrostatics. Discretised on a grid
# they give a sparse symmetric system with millions of unknowns, and the choice of solver
# decides whether a solve takes milliseconds or minutes:
#
# * a **direct** solver (SciPy's SuperLU) factorises the matrix: exact, but its cost and memory
#   grow much faster than the number of unknowns;
# * a **Krylov** method (CG) with a cheap preconditioner (Jacobi) needs more iterations the
#   finer the grid, because information crosses the grid one cell per iteration;
# * **multigrid** fixes that: smoothing removes the rough part of the error on the fine grid,
#   the smooth rest is corrected on coarser grids, and the work per digit of accuracy stays
#   constant per unknown. *Full multigrid* starts from the coarsest grid and reaches the
#   accuracy of the discretisation in about one cycle.
#
# skiff runs these methods on fused kernels (one pass over the grid does a stencil apply and
# its dot product, or a residual, its restriction to the coarse grid and its norm), numba on
# the CPU and CUDA on a GPU. `SKIFF_QUICK=1` (what the tests set) uses a small grid.

# %%
import io
import os
import time

import numpy as np
from IPython.display import HTML, Image, display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import skiff
from skiff.kernels.solve import Solver, diffusion, grid_problem, poisson

QUICK = os.environ.get("SKIFF_QUICK") == "1"
N = 128 if QUICK else 1024
print("quick mode" if QUICK else "full mode", f"- {N}x{N} grid")


def show(fig):
    """Display a matplotlib Figure (object API, no pyplot) as a PNG."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")  # axis labels never cut off
    display(Image(data=buf.getvalue()))


def table(rows, header):
    cells = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    display(HTML(f"<table><tr>{cells}</tr>{body}</table>"))


# %% [markdown]
# ## Poisson from a magic line
#
# `%solve poisson` solves `-lap u = f` on the unit square with `u = 0` on the sides. Its
# right-hand side is manufactured so that the exact solution is `sin(pi x) sin(pi y)`, so the
# result also reports the discretisation error. The magic returns at once with a live job
# widget: the residual curve grows while the solve runs. `-o job` keeps the job in a variable.

# %%
%load_ext skiff

%solve poisson --grid {N}x{N} --method cg --precond mg --rtol 1e-8 --device auto -o job

# %% [markdown]
# The job's value is a `Solution`: the field, the residual history, iterations, time, the
# device and the memory bandwidth the kernels achieved. Its notebook view draws the field and
# the convergence curve.

# %%
job.wait(120)
sol = job.value
sol

# %% [markdown]
# ## The same problem, several ways
#
# `skiff.solve(problem, method=..., precond=...)` is the library call the magic makes. We time
# setup plus solve to a relative residual of 1e-8 for each route; the first call of each kernel
# compiles it (numba, cached on disk), so every method runs once before it is timed.

# %%
p = poisson((N, N))
routes = [("mg", "none"), ("fmg", "none"), ("cg", "mg"), ("cg", "amg"), ("cg", "chebyshev"),
          ("cg", "jacobi"), ("pipecg", "jacobi")]
results = {}
for method, precond in routes:
    skiff.solve(poisson((32, 32)), method=method, precond=precond)       # warm-up
    t0 = time.perf_counter()
    s = skiff.solve(p, method=method, precond=precond, rtol=1e-8, maxiter=20000)
    results[f"{method}+{precond}"] = (time.perf_counter() - t0, s)
table([(name, f"{t:.3f}", s.iterations, f"{s.relative_residual:.1e}", f"{s.error:.2e}")
       for name, (t, s) in results.items()],
      ["route", "setup + solve (s)", "iterations", "|r|/|b|", "max error"])

# %% [markdown]
# Every route reaches the same discretisation error (about `h^2`): the solvers differ in
# cost, not in the answer. On the small quick-mode grid every route takes a fraction of a
# second and a cheap one (Jacobi) can even come first; the gap opens as the grid refines. The
# residual histories show why multigrid wins: a constant factor per cycle, where
# Jacobi-preconditioned CG takes many small steps. A CG curve may rise before it falls: CG
# makes the error smaller in the energy norm at every step, not the residual `|r|` plotted
# here, so a first step that leaves `|r|` above `|b|` is no sign of trouble.

# %%
fig = Figure(figsize=(6, 4), dpi=90)
ax = fig.add_subplot()
for name, (_, s) in results.items():
    r = np.asarray(s.residuals) / s.bnorm
    # pipelined CG follows plain CG's curve: dashed, so the one under it shows
    ax.semilogy(np.arange(len(r)), r, marker=".", label=name,
                linestyle="--" if name.startswith("pipecg") else "-")
ax.set_xlabel("iteration (multigrid cycle, or Krylov step)")
ax.set_ylabel("|r| / |b|")
ax.set_title(f"Poisson {N}x{N}: residual per iteration, to rtol 1e-8")
ax.set_xscale("symlog", linthresh=10)
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
show(fig)

# %% [markdown]
# Why the gap opens: the same routes on grids a quarter and half as fine. The multigrid
# routes take about as many cycles on every grid (the factor per cycle does not depend on
# `h`), so their cost grows only with the number of unknowns; the iteration counts of
# Jacobi-CG (and Chebyshev-CG) grow each time `h` halves, towards twice as many (they go as
# `1/h`), on top of the four times as many unknowns.

# %%
grids = (N // 4, N // 2, N)
counts = []
for name, (_, s) in results.items():
    method, precond = name.split("+")
    coarser = [skiff.solve(poisson((n, n)), method=method, precond=precond, rtol=1e-8,
                           maxiter=20000).iterations for n in grids[:-1]]
    counts.append((name, *coarser, s.iterations))
table(counts, ["route", *(f"iterations, {n}x{n}" for n in grids)])

# %% [markdown]
# ## Against SciPy and pyamg
#
# The same matrix, assembled, given to SciPy's sparse direct solver and to pyamg's algebraic
# multigrid (Ruge-Stuben and smoothed aggregation), setup plus solve to 1e-8.

# %%
import pyamg
import scipy.sparse.linalg as spla

A, b = p.matrix(), p.rhs.ravel()
peers = {}
t0 = time.perf_counter()
x = spla.spsolve(A.tocsc(), b)
peers["scipy spsolve (SuperLU)"] = time.perf_counter() - t0
for name, build in (("pyamg Ruge-Stuben", pyamg.ruge_stuben_solver),
                    ("pyamg smoothed aggregation", pyamg.smoothed_aggregation_solver)):
    t0 = time.perf_counter()
    ml = build(A)
    ml.solve(b, tol=1e-8)
    peers[name] = time.perf_counter() - t0
best = min(t for t, _ in results.values())
table([(name, f"{t:.3f}", f"{t / best:.1f}x") for name, t in
       [*((k, v[0]) for k, v in results.items()), *peers.items()]],
      ["solver", "time (s)", "vs fastest skiff route"])

# %% [markdown]
# ## A jumping coefficient
#
# Now the conductivity jumps by a factor 1000 inside a square (a stiff inclusion in soft
# material). The solution bends sharply at the interface, and solvers that assume smooth
# coefficients slow down. `%%solve` describes the problem in the cell: the domain, the
# coefficient (an expression of `x` and `y`), the boundaries, the source and the solver.

# %%
%%solve --wait -o jump_job
domain: 64x64
coefficient: 1 + 999 * ((abs(x - 0.5) < 0.25) * (abs(y - 0.5) < 0.25))
boundaries: dirichlet
source: 1
solver: cg mg rtol=1e-8

# %%
jump_job.value

# %% [markdown]
# The geometric multigrid builds its coarse grids by averaging the face couplings, which keeps
# the jump; algebraic multigrid builds them from the matrix itself. As a preconditioner the
# multigrid cycle restricts by the transpose of its interpolation (piecewise constant on
# variable coefficients, so it does not smear across the interface) and smooths symmetrically:
# it is a symmetric positive definite operator, which plain CG and pipelined CG require. Both
# multigrids as CG preconditioners, against pyamg on the same matrix:

# %%
NJ = min(N, 512)                      # Jacobi-CG needs thousands of iterations here
k = np.ones((NJ, NJ))
k[NJ // 4: 3 * NJ // 4, NJ // 4: 3 * NJ // 4] = 1000.0
pj = diffusion((NJ, NJ), k, source=1.0)
jump = {}
for method, precond in (("cg", "mg"), ("cg", "amg"), ("mg", "none"), ("cg", "jacobi")):
    t0 = time.perf_counter()
    s = skiff.solve(pj, method=method, precond=precond, rtol=1e-8, maxiter=20000)
    jump[f"{method}+{precond}"] = (time.perf_counter() - t0, s)
Aj = pj.matrix()
t0 = time.perf_counter()
res = []
pyamg.smoothed_aggregation_solver(Aj).solve(pj.rhs.ravel(), tol=1e-8, accel="cg", residuals=res)
table([*((n, f"{t:.3f}", s.iterations) for n, (t, s) in jump.items()),
       ("pyamg SA + CG", f"{time.perf_counter() - t0:.3f}", len(res) - 1)],
      ["route", "setup + solve (s)", "iterations"])
jump["cg+mg"][1]

# %% [markdown]
# ## One setup, many right-hand sides: a body in the flow
#
# A flow solver solves a pressure equation every time step, on the same grid with the same
# obstacle. `Solver` builds the multigrid hierarchy once; each `solve(b)` reuses it. Cells
# inside the body (a signed distance below zero) drop out, with no flux through its wall.

# %%
n = 64 if QUICK else 256
xc = (np.arange(n) + 0.5) / n
X, Y = np.meshgrid(xc, xc, indexing="ij")
sdf = np.hypot(X - 0.35, Y - 0.5) - 0.15
body = grid_problem((n, n), sdf=sdf, source=0.0,
                    bc={"x-": ("dirichlet", 1.0), "x+": ("dirichlet", 0.0),
                        "y-": "neumann", "y+": "neumann"}, name="pressure around a disc")
solver = Solver(body, method="cg", precond="mg")
print(f"setup {solver.setup_time * 1e3:.1f} ms: {solver.describe()}")
rng = np.random.default_rng(0)
times = []
for step in range(5):
    rhs = body.rhs.reshape(n, n) + 0.1 * rng.standard_normal((n, n)) * (sdf >= 0)
    s = solver.solve(rhs, rtol=1e-8)
    times.append(s.time)
print("solve times (ms):", ", ".join(f"{t * 1e3:.1f}" for t in times))
s = solver.solve(rtol=1e-8)
s

# %% [markdown]
# The wall of the body is a no-flux wall by default (no penetration: what a pressure equation
# needs). A body can instead hold a value, a Dirichlet condition on its surface: a heated
# cylinder at temperature 1 in a box held at 0. With a signed distance the wall sits where the
# distance crosses zero between two cells, which keeps the error second order; only the
# diagonal of the wall cells changes, so the system stays symmetric and CG + MG still applies.

# %%
hot = grid_problem((n, n), sdf=sdf, source=0.0, bc="dirichlet", body_bc=("dirichlet", 1.0),
                   name="heated cylinder")
s_hot = skiff.solve(hot, method="cg", precond="mg", rtol=1e-8)
s_hot

# %% [markdown]
# The field can go to ParaView: `save()` writes legacy VTK structured points (or `.npz`).

# %%
path = s.save("pressure.vtk")
print(path, path.stat().st_size, "bytes")
path.unlink()

# %% [markdown]
# ## Wait for every job
#
# The jobs of this notebook ran in the background; this cell waits for them, so a batch run
# of the notebook ends when they do.

# %%
for j in (job, jump_job):
    j.wait(120)
    print(j.id, j.status, j.result["iterations"], "iterations,",
          f"|r|/|b| = {j.result['relative_residual']:.1e}")
