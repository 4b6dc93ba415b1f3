"""Source of notebooks/02-training.ipynb (build with: python notebooks/build.py 02-training)."""

# %% [markdown]
# # Training a small GPT on Shakespeare, from a cell
#
# This notebook trains `gpt-mini`, a 0.9-million-parameter transformer, on the public-domain
# texts that ship inside skiff (a selection of Shakespeare's sonnets and some classic prose,
# about 50 KB), watches its loss fall while the notebook stays free, and then samples text
# from it. On a laptop CPU the full run takes a few minutes; `SKIFF_QUICK=1` (what the tests
# set) makes it a few seconds, which is enough to see every step work but not to learn much.
#
# Why a byte-level model? It needs no tokenizer: every byte is a token, the vocabulary is 256,
# and any text file is a data set. It learns spelling before words, which makes its progress
# easy to read in the samples.

# %%
import os

import numpy as np

import skiff
from skiff.data import TextDataset
from skiff.models import GPT, GPTConfig

QUICK = os.environ.get("SKIFF_QUICK") == "1"
STEPS = 20 if QUICK else 500
print("quick mode" if QUICK else "full mode", f"- {STEPS} steps")

# %% [markdown]
# ## The data
#
# `TextDataset` reads a file (or a shipped corpus by name) as bytes and cuts it into blocks of
# `block_size` tokens; the target of each token is the next one. Ten percent is kept apart to
# measure how well the model does on text it never trained on.

# %%
text = TextDataset("classics", block_size=128)
train_data, val_data = text.split(0.9)
print(text)
print(repr(text.text[5000:5200]))

# %% [markdown]
# ## The model, before training
#
# `skiff.models.get("gpt-mini")` builds the preset: 4 transformer blocks, 4 heads, width 128,
# a context of 128 bytes. Untrained, it samples bytes almost uniformly, so the text is noise.

# %%
%load_ext skiff

skiff.seed(0)  # the same initial weights on every run
model = skiff.models.get("gpt-mini")
print(f"{model.num_parameters():,} parameters")
print(model.generate_text("Shall I compare thee", 60, temperature=1.0, seed=0))

# %% [markdown]
# ## Train it as a job: `%train`
#
# `%train MODEL DATA` starts the training in the background and returns at once with a live
# widget: progress, and the loss as the job reports it. Here MODEL and DATA are the notebook
# variables above, so the job runs on a thread of this kernel and trains `model` in place.
# (With a built-in name instead, `%train gpt-mini`, the model trains on the shipped corpus by
# itself; `--np 2` would run it on two MPI ranks.) The job checkpoints into its run folder, so
# an interrupted run can continue with `--resume`.

# %%
%train model train_data --steps $STEPS --batch-size 16 --lr 2e-3 -o job

# %% [markdown]
# While it runs the notebook is free: cells below can run, and `job.state.metrics` holds the
# numbers the widget draws. Let us wait for it here and look at the result: the `TrainResult`
# shows the loss curve, the throughput, and where the checkpoint went.

# %%
job.wait()
result = job.value
print(job.status, f"- {result.tokens_per_s:,.0f} tokens/s, final loss {result.final_loss:.3f}")
result

# %% [markdown]
# ## Sample from it
#
# `generate` continues a prompt one byte at a time, keeping each layer's keys and values in a
# cache so a new byte costs one position's work. `temperature` trades safety for variety and
# `top_k` keeps only the k most likely bytes at each step. After the full run the samples have
# English words, line breaks and sonnet-like rhythm; after the quick run they are still rough.

# %%
for temperature in (0.0, 0.8):
    print(f"--- temperature {temperature}")
    print(model.generate_text("Shall I compare thee", 200, temperature=temperature,
                              top_k=20, seed=1))

# %% [markdown]
# How well does it do on the held-out tenth? A loss of ln(256) = 5.55 is guessing; every
# nat below that is knowledge.

# %%
trainer = skiff.Trainer(model, batch_size=16)
print(trainer.evaluate(val_data), "vs. guessing:", round(float(np.log(256)), 3))

# %% [markdown]
# ## The same in three lines, without a job
#
# The magic is a thin layer over the library. In a script, the Trainer is three lines;
# `strategy="auto"` resolves to the single device here and says why in `result.strategy`.

# %%
skiff.seed(1)  # the same initial weights on every run
small = GPT(GPTConfig(block_size=64, n_layer=2, n_head=2, n_embd=64))
trainer = skiff.Trainer(small, strategy="auto", lr=3e-3, batch_size=16)
result2 = trainer.train(TextDataset("sonnets", block_size=64), steps=10 if QUICK else 200)
print(result2, result2.strategy["reasons"])

# %% [markdown]
# ## Your own arrays
#
# The Trainer takes numpy arrays as they are: a tuple `(X, y)` (or a list of `(x, y)`
# samples, a dict of arrays, a dataset). Integer targets mean classification (cross-entropy,
# and validation reports accuracy); float targets mean regression (MSE; `y` of shape `(N,)`
# or `(N, 1)` both fit a model with one output). `loss="bce"` is binary cross-entropy on one
# score, and `loss=` also takes a callable such as `nn.CrossEntropyLoss()`.
# `trainer.predict(X)` gives the outputs as a numpy array, in eval mode (BatchNorm uses its
# running statistics, Dropout is off).

# %%
from skiff import nn

rng = np.random.default_rng(0)
X = rng.standard_normal((1000, 8)).astype(np.float32)
y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)  # a label no straight line separates

net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
trainer = skiff.Trainer(net, lr=1e-2, batch_size=64, verbose=True)  # a line per epoch
fit = trainer.train((X[:800], y[:800]), epochs=5 if QUICK else 30,
                    val_dataset=(X[800:], y[800:]))
print(fit.val_history[-1])
print("predicted classes:", trainer.predict(X[800:810]).argmax(axis=1), "true:", y[800:810])

# %% [markdown]
# The same with the magic: a DATA of `(X, y)` is evaluated in the notebook; the model is
# trained in place on a thread. Weights save with `np.savez(path, **net.state_dict())` and
# load with `net.load_state_dict(path)` (also straight from a checkpoint file).

# %%
%train net (X, y) --epochs 2 --lr 1e-2 --wait -o net_job
np.savez("net.npz", **net.state_dict())
copy = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
copy.load_state_dict("net.npz")
print(net_job.status, np.allclose(skiff.Trainer(copy).predict(X), trainer.predict(X)))
os.remove("net.npz")

# %% [markdown]
# ## A whole cell as the job: `%%train`, with packed batches
#
# `%%train` runs a cell that defines `model` and `dataset` (optionally `val_dataset`,
# `optimizer`, `loss`) as the job; the cell sees the notebook's variables, and what it defines
# stays in the job, except that when it ends `model` in the notebook is the trained model.
# The same cell can run on N MPI ranks with `--np N`: its source travels to every rank (there
# it starts from a fresh namespace, so it must build its own data) and the trained model comes
# back from the final weights.
#
# This cell cuts the sonnets at their paragraph breaks instead of into fixed blocks, and packs
# the pieces of different lengths into one token stream per batch (`packed=True`). Attention
# stays inside each piece and no compute goes to padding.

# %%
%%train --steps $STEPS --batch-size 16 --lr 2e-3 -o packed_job
from skiff.data import TextDataset
from skiff.models import GPT, GPTConfig

model = GPT(GPTConfig(block_size=128, n_layer=2, n_head=4, n_embd=64))
dataset = TextDataset("sonnets", block_size=128, packed=True)

# %% [markdown]
# ## Wait for every job
#
# So that "run all" ends only when the jobs have finished.

# %%
for j in (job, packed_job):
    j.wait(900)
    print(j.id, j.status, j.result["final_loss"] if j.result else j.error)
print(model.generate_text("When I", 80, temperature=0.8, top_k=20, seed=2))
