"""Source of notebooks/03-distributed.ipynb (build with: python notebooks/build.py 03-distributed)."""

# %% [markdown]
# # Distributed training: plan it, run it on several ranks, survive a crash
#
# One device runs out of two things: memory (a 7-billion-parameter model with AdamW needs
# about 16 bytes per parameter before a single activation, 110 GB) and time. skiff spreads a
# training run over MPI ranks in four ways, which combine:
#
# * **data parallel** (dp): every rank holds the model and sees its share of the batch; the
#   gradients are averaged in buckets while backward is still running. **ZeRO-1/2** also
#   shard the optimizer state (and the gradients) over those ranks.
# * **tensor parallel** (tp): every layer is split across ranks (attention heads, MLP width,
#   vocabulary).
# * **pipeline parallel** (pp): consecutive layers live on different ranks; micro-batches flow
#   through them on a one-forward-one-backward schedule.
# * **expert parallel** (ep): the experts of a mixture-of-experts layer are spread out, and
#   tokens travel to their experts with all-to-all.
#
# Which mix is best depends on the model, the devices and the links between them, so
# `strategy="auto"` asks a planner. This notebook first asks it about clusters we do not
# have, then trains on two MPI ranks on this machine, kills one of them, and resumes.

# %%
import os
import signal
import tempfile
import time
from pathlib import Path

import numpy as np

import skiff

QUICK = os.environ.get("SKIFF_QUICK") == "1"
STEPS = 40 if QUICK else 400  # each run: enough for the model to write letters
print("quick mode" if QUICK else "full mode", f"- {STEPS} steps")
%load_ext skiff

# %% [markdown]
# ## Plans for clusters we do not have
#
# `%plan MODEL --devices N --device-memory 80GB` searches every layout dp x tp x pp (x ep for
# mixtures of experts), ZeRO stage, micro-batch size and recomputation, keeps those whose
# memory fits, and picks the fastest by an explicit cost model: memory for parameters,
# gradients, optimizer state and activations; time for compute at the device's throughput
# plus the traffic of each kind of parallelism over its link, less what hides behind
# backward. The table shows the best candidates; the reasons say why the first one won.
#
# A LLaMA-7B-shaped model on one node of 8 x 80 GB:

# %%
%plan 7b --devices 8 --device-memory 80GB --top 5

# %% [markdown]
# A 70B model needs 8 nodes; between nodes the links are slower (25 GB/s per device here,
# against 150 GB/s inside a node), so the planner keeps tensor parallelism inside a node:

# %%
%plan 70b --devices 64 --device-memory 80GB --nodes 8 --bandwidth 25GB --top 5

# %% [markdown]
# The `gpt-moe` preset is shaped like a "21B-A3B" mixture of experts: 22 billion parameters,
# of which 3 billion are active for each token (64 experts, 6 used per token). Memory is set
# by all 22 B, time by the 3 B:

# %%
moe_plan = skiff.plan("gpt-moe", devices=16, device_memory="80GB", nodes=2)
print(f"{moe_plan.model.n_params / 1e9:.1f} B parameters, "
      f"{moe_plan.model.active_params / 1e9:.1f} B active")
moe_plan

# %% [markdown]
# When nothing fits, the planner says so with the numbers rather than picking something that
# would crash an hour into the run:

# %%
try:
    skiff.plan("70b", devices=8, device_memory="40GB")
except ValueError as exc:
    print(exc)

# %% [markdown]
# ## Two ranks on this machine
#
# `%%train --np 2` runs the cell on two MPI ranks (`mpiexec`): each rank executes the same
# cell, so each builds the same seeded model and data set; rank 0 reports to the widget. Here
# `--strategy dp` asks for plain data parallelism (an explicit strategy is never overridden;
# `auto` would let the planner choose). Checkpoints are sharded: each rank writes its part,
# then rank 0 writes a manifest, the commit marker, and only then moves the `latest` pointer.
# The job's widget shows each rank's status and its last lines, and folds the checkpoint
# lines of its log into one.

# %%
ckpt = Path(tempfile.mkdtemp(prefix="skiff-dist-"))
CELL = """
from skiff.kernels.train.data import TextDataset
from skiff.kernels.train.models import GPT, GPTConfig

model = GPT(GPTConfig(block_size=32, n_layer=2, n_head=2, n_embd=32))
dataset = TextDataset("sonnets", block_size=32)
"""
get_ipython().run_cell_magic(
    "train", f"--np 2 --strategy dp --steps {STEPS} --batch-size 8 --lr 1e-2 "
    f"--checkpoint-dir {ckpt / 'a'} --checkpoint-every 20 -o job", CELL)

# %%
job.wait()
print(job.status, "-", job.result["steps"], "steps, final loss", round(job.result["final_loss"], 3))
print("plan:", job.result["strategy"]["label"], "-", job.result["strategy"]["reasons"][0])
print(sorted(p.name for p in (ckpt / "a").iterdir()))

# %% [markdown]
# ## Did the plan hold?
#
# The planner's table above is for GPUs and billions of parameters, where flops and bytes
# of weights are everything. This model is tiny: its weights, gradients and Adam moments fit
# in a megabyte, and a step is a few milliseconds of Python calling numpy. What the cost
# model prices is then dwarfed by what it leaves out on purpose: the process itself (Python,
# numpy, MPI, the kernels compiled on first use, ~190 MiB) and the framework's cost per step.
# So before training each rank runs a short calibration (a few steps of a copy of the model
# on one batch, and one timed all-reduce) and the check adds what it measured to the cost
# model (and keeps it in skiff's cache folder: a later job of the same model on this machine
# and number of ranks reads it instead, `SKIFF_RECALIBRATE=1` measures again). Memory should
# then agree within 10% and the step time within 20%; when it does not, the check says why
# (another program using the cores is the usual reason here).

# %%
check = job.result["plan_check"]
MiB = 2**20
print(f"cost model alone: {check['predicted_peak_bytes'] / MiB:.1f} MiB, "
      f"{check['predicted_step_s'] * 1e3:.2f} ms per step")
for part, value in check["memory_parts"].items():
    print(f"  {part:<58} {value / MiB:8.1f} MiB")
for part, value in check["step_parts"].items():
    print(f"  {part:<58} {value * 1e3:8.2f} ms")
print(f"expected {check['expected_peak_bytes'] / MiB:.0f} MiB and "
      f"{check['expected_step_s'] * 1e3:.1f} ms; measured "
      f"{check['measured_peak_bytes'] / MiB:.0f} MiB (x{check['memory_ratio']:.2f}) and "
      f"{check['measured_step_s'] * 1e3:.1f} ms (x{check['step_ratio']:.2f})")
print("the plan holds" if check["agrees"] else f"the plan is off: {check['why']}")

# %% [markdown]
# The trained model came back to the notebook: the job gathered the full weights from the
# ranks into its run folder, and `model` now holds them. After a few dozen steps on the
# sonnets it knows which bytes are common, not yet words: sampling (`temperature` 0.8, the
# 20 likeliest bytes) writes letters, spaces and line breaks; greedy decoding (`temperature`
# 0: always the likeliest byte) of so young a model repeats the same few bytes over and over.

# %%
print(type(model).__name__, f"{model.num_parameters():,} parameters")
for temperature in (0.8, 0.0):
    print(f"--- temperature {temperature}")
    print(model.generate_text("Shall I", 120, temperature=temperature, top_k=20, seed=0))

# %% [markdown]
# ## Kill a rank, then resume
#
# A rank that dies (out of memory, a node lost) must not leave the others waiting forever in
# a collective. The job runner notices the dead rank, stops the job and names the rank. The
# run resumes from the last committed checkpoint, on the same number of ranks or another one:
# data-parallel and ZeRO checkpoints reshard when the world size changes. The rank is killed
# as soon as the first checkpoint is committed; the resumed run says where it went on from.
# The checkpoint holds the data order and the optimizer state too, so the resumed run (the
# same model, data and steps as the first job) ends at the first job's loss, to the last
# digit: the kill cost the steps since the checkpoint, nothing else.

# %%
get_ipython().run_cell_magic(
    "train", f"--np 2 --strategy dp --steps {STEPS} --batch-size 8 --lr 1e-2 "
    f"--checkpoint-dir {ckpt / 'b'} --checkpoint-every 2 -o crashing", CELL)
latest = ckpt / "b" / "latest"
deadline = time.monotonic() + 120
while not latest.exists() and not crashing.done and time.monotonic() < deadline:
    time.sleep(0.01)
if not crashing.done:
    pid = int((crashing.run_dir / "ranks" / "1.pid").read_text())
    os.kill(pid, signal.SIGKILL)
crashing.wait(60)
print(crashing.status, "-", crashing.error.splitlines()[0])

# %%
print("committed checkpoints:", sorted(p.name for p in (ckpt / "b").glob("step-*")))
get_ipython().run_cell_magic(
    "train", f"--np 2 --strategy dp --steps {STEPS} --batch-size 8 --lr 1e-2 "
    f"--checkpoint-dir {ckpt / 'b'} --checkpoint-every 50 --resume -o resumed", CELL)
resumed.wait()
print(resumed.status, "- resumed run ended at step", resumed.result["steps"],
      f"(went on from the checkpoint of step {resumed.result['resumed']['from_step']}), "
      f"final loss {resumed.result['final_loss']:.4f}")
# the first job trained the same model on the same data, uninterrupted
print(f"the same run without the kill ended at loss {job.result['final_loss']:.4f}:",
      "the same" if resumed.result["final_loss"] == job.result["final_loss"] else "different")

# %% [markdown]
# ## What to read next
#
# * `docs/distributed.md` explains the communicator, the overlap of the gradient all-reduce
#   with backward, ZeRO, tensor/pipeline/expert parallelism, gradient compression and the
#   checkpoint protocol, and how to run on a Slurm cluster (`skiff.jobs.slurm`).
# * `benchmarks/bench_dist.py` measures data-parallel efficiency, overlap, the bytes each
#   gradient compression sends, and the planner's predictions against measurements.

# %%
for j in (job, crashing, resumed):
    j.wait()
print("all jobs finished:", [j.status for j in (job, crashing, resumed)])
