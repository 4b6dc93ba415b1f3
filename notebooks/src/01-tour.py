"""Source of notebooks/01-tour.ipynb (build with: python notebooks/build.py 01-tour)."""

# %% [markdown]
# # A five-minute tour of skiff
#
# skiff turns a notebook cell into a **job**: training a model, solving a PDE or reading a
# document runs in the background while the notebook stays free, and a live widget shows how
# it goes. The job keeps its whole state in a *run folder* on disk, so reloading the browser
# (or, for process jobs, restarting the kernel) does not lose it.
#
# This tour shows the three magics, `%solve`, `%train` and `%ocr`, once each, small enough to
# finish on a laptop CPU in a minute. Set `SKIFF_QUICK=1` in the environment to make every job
# even smaller (that is what the tests do).

# %%
import os

QUICK = os.environ.get("SKIFF_QUICK") == "1"
print("quick mode" if QUICK else "full mode")

# %% [markdown]
# ## Load the extension
#
# `%load_ext skiff` only registers the magics; nothing heavy (no GPU library, no MPI) is
# imported until a job needs it. In `make lab` the extension is already loaded for you, and
# loading it twice is harmless.

# %%
%load_ext skiff

# %% [markdown]
# ## Which devices are there?
#
# Every job takes `--device auto|cpu|cuda|cuda:N`. `auto` picks the first GPU and falls back
# to the CPU, so the same cell runs on a laptop and on a GPU server. `%devices` lists what
# this kernel can use, with the memory that is free right now.

# %%
%devices

# %% [markdown]
# ## A first job
#
# Before the real work, a tiny `demo` job shows what every job looks like: a status badge,
# a progress bar with its rate and the time left, a live chart of the metrics the job reports,
# the tail of its log, and a Cancel button. The cell returns at once; the job runs on a
# thread of this kernel while you keep working.

# %%
import skiff

demo = skiff.launch("demo", {"steps": 15 if QUICK else 60, "sleep": 0.05})
demo

# %% [markdown]
# The `Job` object is a handle: `job.wait()` blocks until it ends, `job.status` and
# `job.result` tell how it went, and `job.run_dir` is the folder that holds everything it
# wrote. Displaying the same job again shows the same live widget. The demo's result holds
# its steps, its ranks, and `allreduce`: its last step's value summed over the ranks (the
# check that ranks reach each other; on this one rank it is the step count).

# %%
demo.wait(60)
print(demo.status, demo.result)
print("run folder:", demo.run_dir)

# %% [markdown]
# ## Solve a PDE: `%solve`
#
# `%solve` sets up a problem on a grid and solves it with a Krylov method and a multigrid
# preconditioner. The chart follows the residual on a log scale, which is the number that
# tells whether a solver converges: a straight line down means a constant rate.

# %%
grid = "32x32" if QUICK else "128x128"
%solve poisson --grid $grid -o solve_job

# %% [markdown]
# ## Train a model: `%train`
#
# `%train MODEL` trains a built-in model on its own small data set (or your own model and
# data, given as notebook variables). The loss curve appears as the job reports it; with
# `--np 2` the same line runs data-parallel on two MPI ranks.

# %%
steps = 20 if QUICK else 200
%train mlp --steps $steps -o train_job

# %% [markdown]
# ## Read a document: `%ocr`
#
# `%ocr` finds the lines of text on an image, reads them, and draws what it found over the
# image. It takes files, folders and glob patterns, or, as here, a notebook variable holding
# an image. The page below is drawn on the spot with Pillow's own font, so the tour needs
# no download and no font installed.

# %%
import numpy as np
from PIL import Image, ImageDraw, ImageFont

lines = ["Open Monday to Friday from 9am to 6pm", "Results are stored in the run folder"]
font = ImageFont.load_default(size=28)
canvas = Image.new("RGB", (640, 40 + 50 * len(lines)), "white")
draw = ImageDraw.Draw(canvas)
for i, text in enumerate(lines):
    draw.text((24, 20 + 50 * i), text, font=font, fill="black")
page = np.asarray(canvas)  # an RGB array
%ocr page -o ocr_job

# %% [markdown]
# ## Every job, in one table
#
# `%jobs` lists the jobs found in the run folders, including those started before a kernel
# restart; `%jobs show ID` brings back the live widget of one of them. The last cell waits
# for all the jobs of this tour, so "run all" ends when they are done, and says in one line
# each what they found: `job.result` is the same summary the widgets show.

# %%
for job in (demo, solve_job, train_job, ocr_job):
    job.wait(600)
    print(f"{job.kind:<5} {job.status}")
print(f"solve: {solve_job.result['iterations']} iterations to |r|/|b| = "
      f"{solve_job.result['relative_residual']:.1e}")
history = train_job.result["history"]
print(f"train: loss {history[0]['loss']:.3f} at step 1, {history[-1]['loss']:.3f} at step "
      f"{history[-1]['step']}")
read = [line.text for line in ocr_job.value.results[0].lines]
print(f"ocr:   {sum(r == t for r, t in zip(read, lines))} of {len(lines)} lines read as "
      f"printed: {read}")
%jobs
