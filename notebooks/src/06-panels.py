"""Source of notebooks/06-panels.ipynb (build with: python notebooks/build.py 06-panels)."""

# %% [markdown]
# # Panels: every job from a form
#
# The magics are quick once you know their options; a form is quicker while you don't. The
# skiff panel has one tab per kind of job (Train, Solve, OCR, Chat) and a Jobs tab that lists
# everything that ran. Each form is made from the same grammar as the magic and the
# command line, so it offers exactly the options `%solve` has, checks them as you type, and
# shows the magic line and the terminal command that do the same thing: copy one into a
# cell or a batch script once you are happy with the settings.
#
# This notebook walks through the panel. Where a person would type into a field or click a
# button, the cells below do the same from code (`form.set(...)`, `form.launch()`), so the
# notebook also runs unattended. Set `SKIFF_QUICK=1` for the small sizes the tests use.

# %%
import os

QUICK = os.environ.get("SKIFF_QUICK") == "1"
grid = "32x32" if QUICK else "256x256"
%load_ext skiff

# %% [markdown]
# ## Open the panel
#
# `%skiff` shows the panel (`skiff.panel()` does the same from Python). `%skiff solve`
# opens it on the Solve tab. Keep the returned object to drive it from code. Each section
# below also shows the form it is about on its own (the same live widget as the panel's
# tab), so the saved notebook shows every form where the text describes it.

# %%
panel = %skiff solve
panel

# %% [markdown]
# ## The Solve form
#
# The first fields are the ones most solves change: the problem, the grid, the jump in the
# coefficient (for the `jump` problem), the Krylov method, the preconditioner, the tolerance
# and the device. Everything else `%solve` accepts is under *more options*.
#
# Type a grid the solver cannot use, and the form says why, next to the field, and disables
# Launch. Here is the same on a second, separate form so that the panel above stays valid:

# %%
from skiff.widgets.panels import solve_form

broken = solve_form()
broken.set(grid="32x")
print("errors:", broken.errors)
print("launch disabled:", broken.launch_button.disabled)
broken

# %% [markdown]
# Back in the panel, a good set of values gives the equivalent magic line and command; both
# are shown under the form, ready to copy. They name what differs from the defaults: a
# tolerance of 1e-8 (the default) would not appear, 1e-10 does.

# %%
solve = panel.forms["solve"]
solve.set(problem="jump", grid=grid, contrast="100", rtol="1e-10")
print(solve.magic)
print(solve.cli)

# %% [markdown]
# **Launch** starts the job and shows its live widget under the form: the residual falls on
# a log scale while the solver works. When it is done, the field appears, with a one-line
# summary (iterations, final residual, time). Here is the Solve form after its launch:

# %%
solve_job = solve.launch()
solve_job.wait(300)
print(solve_job.status, "in", solve_job.result["iterations"], "iterations")
solve

# %% [markdown]
# ## The OCR form
#
# The OCR tab takes a path, a folder or a glob pattern, or files uploaded with the
# **Upload** button (they are saved next to the run folders, and their paths fill the
# field). Here we draw a page, save it, and point the form at it.

# %%
from PIL import Image, ImageDraw, ImageFont

from skiff.jobs import runs_root

runs_root().mkdir(parents=True, exist_ok=True)
page_path = runs_root() / "panel-page.png"
lines = ["Invoice 2041: total 1,284.50 EUR", "Due within 30 days"]
canvas = Image.new("RGB", (620, 40 + 50 * len(lines)), "white")
for i, text in enumerate(lines):  # Pillow's own font: no font to install
    ImageDraw.Draw(canvas).text((24, 20 + 50 * i), text, font=ImageFont.load_default(size=28),
                                fill="black")
canvas.save(page_path)

ocr = panel.forms["ocr"]
ocr.set(inputs=str(page_path))
print(ocr.magic)
ocr_job = ocr.launch()

# %% [markdown]
# When the job ends the tab shows the table of lines it read, and the job's widget shows the
# page with the boxes it found. The OCR form:

# %%
ocr_job.wait(300)
print(ocr_job.status, "- read:", ocr_job.value.results[0].text)
ocr

# %% [markdown]
# ## The Train form
#
# The model and data pickers list the built-in models and data sets, and also the notebook
# variables that hold a model or a data set, so a model you built in a cell is one click
# away. **Plan** asks the planner how a model would be laid out over the ranks you chose
# (data, tensor and pipeline parallel degrees, memory per device) before you launch. The
# table it puts in the form, above its fields, is the one `%plan` prints for the same model
# and number of devices; here it is under the cell too:

# %%
train = panel.forms["train"]
train.set(model="gpt-mini", np=2)
train.plan()  # what the Plan button does: the table appears in the form
%plan gpt-mini --devices 2

# %% [markdown]
# Then a small model on a built-in data set, launched from the same form. A plan is the one
# of the model and ranks it was asked for: after changing them, press Plan again (here
# `train.plan()`), or the table above the fields still lays out gpt-mini on 2 ranks. The
# Train form, with the plan of its own model above its fields and the job's widget under
# them:

# %%
train.set(model="mlp", data="blobs", steps=20 if QUICK else 300, np=1)
train.plan()
print(train.magic)
train_job = train.launch()
train

# %% [markdown]
# ## The Jobs tab
#
# The Jobs tab is a live table of every job in the run folders, the ones from this panel
# and those from magics, other notebooks or a terminal. Each row can cancel its job, show
# its live widget, open its run folder, and, for training, resume from the last checkpoint.
# Because the table is read from the run folders, it is the same after a browser reload.
# `panel.select("jobs")` turns the panel to it; here is the table itself:

# %%
import re

panel.monitor.refresh()
print(re.sub(r"<[^>]+>", "", panel.monitor.heading.value))  # the heading's text, without its HTML
panel.monitor

# %% [markdown]
# ## Wait for everything
#
# The last cell waits for the jobs this notebook started, so "run all" ends when they do.

# %%
for job in (solve_job, ocr_job, train_job):
    job.wait(600)
    print(f"{job.kind:<5} {job.status}")
panel.monitor.refresh(resend=True)  # the whole table again, for the saved notebook
