"""Source of notebooks/07-high-speed-train.ipynb (build with: python notebooks/build.py 07)."""

# %% [markdown]
# # A high-speed train's nose: from a validated solver to a design loop in seconds
#
# The pressure a train's nose meets, the air it pushes under its floor and the drag it pays
# are set by its shape. Answering "which nose?" the classical way means one CFD run per
# candidate: a mesh by hand, a solve, a check that the mesh was fine enough, and days for a
# family of shapes. This notebook walks the loop skiff offers instead, every stage timed on
# this machine:
#
# 1. **a validated solver**: Taylor-Hood P2/P1 finite elements against the DFG "flow around a
#    cylinder" benchmark bands;
# 2. **one nose**: a parametric 2D longitudinal section (nose length, bluntness, ground
#    clearance) near a moving ground, in the train's frame;
# 3. **grids that know where to refine**: a small network, trained with skiff's Trainer on
#    the grids an a-posteriori estimator produced for *other* shapes, sizes the mesh from the
#    geometry alone, against uniform refinement and the estimator's solve-estimate-refine loop;
# 4. **a sweep** over the three shape parameters as parallel processes;
# 5. **a surrogate** with a bound calibrated on held-out solves, refusing queries outside
#    what was sampled;
# 6. **a design loop** on the surrogate (least drag at a fixed nose area), checked by one
#    real solve.
#
# **Honest scope.** A real train runs at Reynolds numbers near 10^7, in turbulent 3D flow.
# This is a laminar 2D proxy (Re in the hundreds to a few thousand): it keeps the geometry's
# effects (stagnation at the tip, acceleration over the roof, the gap flow under the floor,
# separation behind a blunt face), not the turbulent numbers. `SKIFF_QUICK=1` (what the tests
# set) uses coarse meshes, low Reynolds numbers and the stored full-size sweep.

# %%
import os
import time
from pathlib import Path

import numpy as np
from IPython.display import HTML, display

import skiff.aero
from skiff.kernels.backend.figures import new_figure, render_png

QUICK = os.environ.get("SKIFF_QUICK") == "1"
STORED = Path("../benchmarks/results/aero-sweep.json")
print("quick mode" if QUICK else "full mode")
TIMES = {}


class stage:
    """Time a stage of the loop: ``with stage("name"): ...`` prints and keeps its seconds."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        TIMES[self.name] = time.perf_counter() - self.t0
        print(f"[{self.name}: {TIMES[self.name]:.2f} s]")


def show(fig):
    from IPython.display import Image

    display(Image(data=render_png(fig)))


def table(rows, header):
    cells = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    display(HTML(f"<table><tr>{cells}</tr>{body}</table>"))


# %% [markdown]
# ## 1. The solver against the DFG benchmark
#
# Schäfer and Turek's 2D-1 case (Re 20) has published bands for drag, lift and the pressure
# difference across the cylinder. The same P2/P1 discretisation, Newton solver and force
# evaluation (the momentum residual on the body's rows) serve the nose below.

# %%
from skiff.kernels.solve.flow import run_case

with stage("DFG 2D-1"):
    # 64: the coarsest mesh inside every band (32 leaves cd and la just outside)
    dfg = run_case("2d-1", resolution=64 if QUICK else 128, keep_fields=False)
ok = dfg.in_bands()
table([(k, f"{dfg.values[k]:.5g}", f"{lo:g} – {hi:g}", "in" if ok[k] else "out")
       for k, (lo, hi) in dfg.bands.items()], ["quantity", "skiff", "DFG band", ""])
print(dfg)

# %% [markdown]
# ## 2. One nose, with its grid
#
# `%solve train-nose` is a job like every other solve (a run folder, progress, the plots as
# artifacts, `python -m skiff solve train-nose ... --json` in a terminal). The value is a
# `NoseFlow`: `cd`, `cl` (per unit span, referred to the train's height), the surface
# pressure coefficient `cp(s)` from the tip, and the time averages when the flow is unsteady.

# %%
%load_ext skiff

# %%
if QUICK:
    %solve train-nose --length 3 --bluntness 0.4 --clearance 0.3 --re 100 --adapt graded --resolution 14 --wait -o nose_job
else:
    %solve train-nose --length 3 --bluntness 0.4 --clearance 0.15 --re 1000 --adapt learned --wait -o nose_job
nose = nose_job.value
TIMES["one nose (job)"] = nose.seconds
nose

# %% [markdown]
# The flow as files: `nose.save("nose.vtu")` writes the mesh with the velocity, speed,
# pressure and cp at its vertices for ParaView (`.vtk` for the legacy format, `.npz` for
# numpy, `.csv` for the surface's cp); `%solve train-nose ... --save nose.vtu` does it from
# the job. `nose.newton` is Newton's record, stage by stage of the continuation in Re (the
# job's `convergence` plot).

# %%
from skiff.jobs import runs_root

saved = nose.save(runs_root() / "nose.vtu")
print(f"wrote {saved.name} ({saved.stat().st_size // 1024} kB) and "
      f"{nose.save(runs_root() / 'nose-cp.csv').name}")
for rec in nose.newton:
    print(f"  Re {rec['re']:7.4g}: {len(rec['updates'])} Newton steps, last update "
          f"{rec['updates'][-1]:.1e}{'' if rec['converged'] else ' (failed: retried)'}")

# %% [markdown]
# ### A nose of your own
#
# A CAD export is a list of the outline's points, in its own unit and often in no order.
# `skiff.aero.NoseProfile.from_csv(path, clearance=...)` reads it (lengths divided by the
# profile's height), puts points in no order along the outline (with a warning saying so), and
# `.plot()` draws the outline it read over the file's points: the check to make before
# `%solve train-nose --profile nose.csv --clearance 0.15` solves it. Here a 3.8 m high, 11.4 m
# long elliptic nose written in millimetres, its rows shuffled:

# %%
import warnings

t = np.linspace(-np.pi / 2, np.pi / 2, 61)
mm = np.column_stack([11400 * (1 - np.cos(t)), 1900 * (1 + np.sin(t))])
mm = mm[np.random.default_rng(7).permutation(len(mm))]
cad = runs_root() / "nose-cad.csv"                     # beside the run folders
cad.parent.mkdir(parents=True, exist_ok=True)
cad.write_text("x [mm],y [mm]\n" + "".join(f"{a:.1f},{b:.1f}\n" for a, b in mm))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    own = skiff.aero.NoseProfile.from_csv(cad, clearance=0.15)
print("warning:", caught[0].message if caught else "none")
print(f"read: length {own.length:.3f} H (11400 / 3800 = 3), points put in order: {own.reordered}")
fig = new_figure(figsize=(8, 3), dpi=90)
show(own.plot(ax=fig.add_subplot()))

# %% [markdown]
# ## 3. Where does the flow need cells? Uniform, estimator, learned
#
# Three ways to size the mesh of a shape the network never saw:
#
# * **uniform**: one size everywhere, refined until drag settles;
# * **estimator**: solve on a coarse mesh, estimate the error of each element (gradient
#   recovery), re-mesh to spread it evenly, repeat: three solves before the last;
# * **learned**: the network predicts the estimator's answer from the geometry (distances to
#   the body and the ground, position against the tip and the shoulder, the shape's
#   parameters). One evaluation, one mesh, one solve.
#
# The full comparison at equal drag accuracy (0.5% of a grid-converged value) is in
# `benchmarks/results/aero.md`; here the grids side by side (quick mode: meshes only).

# %%
from skiff.kernels.solve.flow.adapt import graded_size, learned_size, uniform_size
from skiff.kernels.solve.flow.nose import nose_mesh

held_out = skiff.aero.HELD_OUT_SHAPES[0]
with stage("learned size field + mesh"):
    learned_mesh = nose_mesh(held_out, learned_size(held_out))
with stage("graded (hand-made) mesh"):
    graded_mesh = nose_mesh(held_out, graded_size(held_out))
meshes = {"graded by hand": graded_mesh, "learned": learned_mesh}
if not QUICK:
    with stage("uniform mesh"):
        meshes["uniform"] = nose_mesh(held_out, uniform_size(held_out))
fig = new_figure(figsize=(4.2 * len(meshes), 3.2), dpi=90)
for k, (name, m) in enumerate(meshes.items()):
    ax = fig.add_subplot(1, len(meshes), k + 1)
    ax.triplot(m.p[0], m.p[1], m.t.T, lw=0.2, color="k")
    ax.set_xlim(-1, held_out.length + 2.5)
    ax.set_ylim(0, held_out.clearance + 1.8)
    ax.set_aspect("equal")
    ax.set_title(f"{name}: {m.t.shape[1]} cells", fontsize=9)
    ax.set_xlabel("x / H (from the tip)", fontsize=8)
    if k == 0:
        ax.set_ylabel("y / H (above the ground)", fontsize=8)
show(fig)

# %%
if not QUICK:
    flows = {}
    for adapt in ("uniform", "estimator", "learned"):
        with stage(f"solve with {adapt} grid"):
            flows[adapt] = skiff.aero.solve_nose(**held_out.to_dict(), re=1000, adapt=adapt)
    table([(a, f.cells, f"{f.cd:.5f}", f"{f.seconds:.1f}") for a, f in flows.items()],
          ["grid", "cells", "cd", "seconds"])

# %% [markdown]
# ## 4. A sweep over the shape parameters, as parallel processes
#
# `skiff.aero.sweep` draws shapes by Latin hypercube sampling of the box and solves them in a
# pool of worker processes (never more than the cores). Quick mode runs two small solves, one
# on each of two processes, to show the mechanism, then loads the stored 64-shape sweep
# measured by the benchmark.

# %%
def report(done, total, row):
    shape = ", ".join(f"{v:.3g}" for v in row["params"])
    cd = "failed" if row["cd"] is None else f"cd {row['cd']:.4f}"
    print(f"  {done}/{total} ({shape}) -> {cd} ({row['seconds']:.1f} s)")


with stage("sweep (this run)"):
    live = skiff.aero.sweep(
        2 if QUICK else 64, length=(2.0, 5.0), bluntness=(0.0, 1.0),
        clearance=(0.2, 0.3) if QUICK else (0.15, 0.3), re=100.0 if QUICK else 200.0,
        adapt="graded", resolution=15 if QUICK else 21, np=2,
        progress=report)
print(live)
samples = skiff.aero.Samples.load(STORED) if QUICK else live
held = skiff.aero.Samples.load(STORED.with_name("aero-heldout.json"))
print(f"fit on {samples}; held-out check on {held}")

# %% [markdown]
# ## 5. A surrogate with a verified bound
#
# A quadratic fit of `log cd` plus an ensemble of small MLPs (skiff's Trainer) on what it
# leaves; the bound comes from split conformal prediction on solves kept out of the fit, and
# is checked here on solves the surrogate never saw.

# %%
with stage("surrogate fit"):
    surrogate = skiff.aero.Surrogate.fit(samples, members=3 if QUICK else 5,
                                         steps=150 if QUICK else 600)
print(surrogate)
preds = surrogate.predict([dict(zip(skiff.aero.PARAMS, r)) for r in held.params])
cd = np.array([p.cd for p in preds])
err = np.abs(cd - held.cd) / held.cd
cover = np.mean([t in p for t, p in zip(held.cd, preds)])
print(f"held-out: max error {100 * err.max():.2f}%, mean {100 * err.mean():.2f}%, "
      f"{100 * cover:.0f}% of truths inside the {100 * surrogate.share:g}% bound")
inside, n_held = int(round(cover * len(held.cd))), len(held.cd)
if inside < n_held:  # few check shapes: how often a bound that holds does no better
    from scipy.stats import binom

    chance = binom.cdf(inside, n_held, surrogate.share)
    print(f"  {inside} of {n_held}: a bound that holds {100 * surrogate.share:g}% of the time "
          f"leaves {inside} or fewer of {n_held} inside in {100 * chance:.0f}% of such checks")
q = dict(zip(skiff.aero.PARAMS, held.params[0]))
t0 = time.perf_counter()
for _ in range(100):
    surrogate.predict(q)
TIMES["surrogate query"] = (time.perf_counter() - t0) / 100
print(f"one query: {1e3 * TIMES['surrogate query']:.2f} ms")
fig = new_figure(figsize=(5.0, 4.2), dpi=90)
ax = fig.add_subplot(1, 1, 1)
ax.errorbar(held.cd, cd, yerr=[cd - [p.lo for p in preds], [p.hi for p in preds] - cd],
            fmt="o", ms=3, lw=0.8)
lims = [min(held.cd.min(), cd.min()), max(held.cd.max(), cd.max())]
ax.plot(lims, lims, color="0.5", lw=0.8)
ax.set_xlabel("cd, solved")
ax.set_ylabel("cd, surrogate (with its bound)")
ax.set_title("held-out shapes", fontsize=9)
show(fig)

# %%
try:
    surrogate.predict({"length": 8.0, "bluntness": 0.5, "clearance": 0.2})
except ValueError as exc:
    print("refused:", exc)

# %% [markdown]
# ## 6. A design loop on the surrogate, checked by one real solve
#
# The least drag at a fixed nose area (the section's "volume"): for every bluntness and
# clearance, the length that keeps the area, all of them on the surrogate at once.

# %%
with stage("design loop (surrogate)"):
    best = skiff.aero.design(surrogate, volume=2.5)
print(f"{best['candidates']} candidates; best {best['params']} -> cd {best['cd']:.4f} "
      f"in [{best['lo']:.4f}, {best['hi']:.4f}]")
# an optimum on the sampled box's edge may be an artifact of where the sweep stopped
for name, why in best["at_edge"].items():
    print(f"  on the edge: {name} ({why})")
with stage("verifying solve"):
    check = skiff.aero.solve_nose(**best["params"], re=samples.re, adapt=samples.adapt,
                                  resolution=samples.resolution, keep=False)
inside = best["lo"] <= check.cd <= best["hi"]
print(f"solved cd {check.cd:.4f}: {'inside' if inside else 'OUTSIDE'} the bound")

# %% [markdown]
# ## The time of each stage, on this machine
#
# The "days to seconds" in numbers: a sweep's solves, one by one, against what the surrogate
# answers in; the design loop evaluates thousands of candidates in the time of one query
# round-trip to a solver.

# %%
serial = float(np.sum(samples.seconds))
rows = [(k, f"{v:.3f} s" if v >= 0.01 else f"{1e3 * v:.2f} ms") for k, v in TIMES.items()]
sweep = f"{len(samples.seconds)}-shape sweep" + (" (the stored one, a busy machine)" if QUICK else "")
rows.append((f"{sweep}, solves one after another", f"{serial:.0f} s"))
rows.append((f"{sweep}, wall time", f"{samples.wall_seconds:.0f} s on {samples.workers} "
                                    f"process{'es' if samples.workers != 1 else ''}"))
table(rows, ["stage", "time"])
