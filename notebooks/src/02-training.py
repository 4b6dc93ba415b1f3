"""Source of notebooks/02-training.ipynb (build with: python notebooks/build.py 02-training)."""

# %% [markdown]
# # Training a small GPT on Shakespeare, from a cell
#
# This notebook trains `gpt-mini`, a 0.9-million-parameter transformer, on the public-domain
# texts that ship inside skiff (a selection of Shakespeare's sonnets and some classic prose,
# about 50 KB), watches its loss fall while the notebook stays free, and then samples text
# from it. On a laptop CPU the full run takes a few minutes; `SKIFF_QUICK=1` (what the tests
# set) makes it a few seconds: enough to see every step work and the model learn the
# commonest letters, not enough for words.
#
# Why a byte-level model? It needs no tokenizer: every byte is a token, the vocabulary is 256,
# and any text file is a data set. It learns spelling before words, which makes its progress
# easy to read in the samples.

# %%
import os

import numpy as np

import skiff
from skiff.data import Subset, TextDataset
from skiff.models import GPT, GPTConfig

QUICK = os.environ.get("SKIFF_QUICK") == "1"
STEPS = 20 if QUICK else 300
BATCH = 4 if QUICK else 16  # sequences a step (quick: a quarter, the held-out loss about the same)
print("quick mode" if QUICK else "full mode", f"- {STEPS} steps")

# %% [markdown]
# ## The data
#
# `TextDataset` reads a file (or a shipped corpus by name) as bytes and cuts it into blocks of
# `block_size` tokens; the target of each token is the next one. Every tenth block is kept
# apart to measure how well the model does on text it never trained on. (Not the last tenth
# of the file: that is one poet's verse, and a loss measured on it would mix up "has the
# model learned English?" with "does it know Blake?".)

# %%
text = TextDataset("classics", block_size=128)
blocks = np.arange(len(text))
held_out = blocks[5::10]                                 # every tenth block, all through
train_data = Subset(text, np.setdiff1d(blocks, held_out))
val_data = Subset(text, held_out)
print(text, f"- {len(train_data)} blocks to train on, {len(val_data)} held out")
print(repr(text.text[5000:5200]))

# %% [markdown]
# ## The model, before training
#
# `skiff.models.get("gpt-mini")` builds the preset: 4 transformer blocks, 4 heads, width 128,
# a context of 128 bytes. Untrained, it samples bytes almost uniformly, so the text is noise.
#
# 0.9 million parameters against 47 KB of text is a model that can memorise its data: after
# enough passes it recites the training blocks and does worse on anything else. `dropout=0.1`
# (a tenth of the activations zeroed at random while training) makes memorising harder.

# %%
%load_ext skiff

skiff.seed(0)  # the same initial weights on every run
model = skiff.models.get("gpt-mini", dropout=0.1)
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
%train model train_data --steps $STEPS --batch-size $BATCH --lr 2e-3 -o job

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
# `top_k` keeps only the k most likely bytes at each step. After the full run (300 steps, a
# loss near 2.2 nats a byte) a sample has the shape of verse: line breaks, a capital at each
# line's start, commas, and the short common words ("the", "and", "When"); most longer words
# are still invented, and greedy decoding (temperature 0) falls into repeating its likeliest
# word. Real words take many more steps. After the quick run (20 steps, a loss near 3) the
# model knows little more than which bytes are common: greedy decoding repeats "the" and
# "t", and a sample is letters and spaces with only the odd short word ("the").

# %%
for temperature in (0.0, 0.8):
    print(f"--- temperature {temperature}")
    print(model.generate_text("Shall I compare thee", 100 if QUICK else 300,
                              temperature=temperature, top_k=20, seed=1))

# %% [markdown]
# ## Did it learn, or memorise?
#
# The loss on the held-out blocks says how well the model predicts text it never saw. A loss
# of ln(256) = 5.55 is guessing; every nat below that is knowledge. Next to it, the loss on
# as many training blocks, measured the same way (dropout off): when the two are close the
# model learned something that carries over; when the training loss goes on falling while
# the held-out loss stalls or rises, the curves have parted and it is memorising
# (overfitting). The cure is more data, more dropout, a smaller model, or stopping at the
# step where the held-out loss was lowest (the job's checkpoints keep those steps).

# %%
trainer = skiff.Trainer(model, batch_size=16)
seen = Subset(train_data, np.arange(0, len(train_data), 9)[:len(val_data)])
train_loss = trainer.evaluate(seen)["val_loss"]
held_loss = trainer.evaluate(val_data)["val_loss"]
print(f"loss on training blocks {train_loss:.3f}, on held-out blocks {held_loss:.3f}, "
      f"guessing {np.log(256):.3f}")
if held_loss - train_loss > 0.15:
    print(f"the curves have parted by {held_loss - train_loss:.2f}: the model is beginning "
          "to memorise its training text")
else:
    print(f"held-out within {max(held_loss - train_loss, 0):.2f} of training: what it learned "
          f"carries over to new text ({np.log(256) - held_loss:.2f} nats below guessing)")

# %% [markdown]
# ## The same in three lines, without a job
#
# The magic is a thin layer over the library. In a script, the Trainer is three lines;
# `strategy="auto"` resolves to the single device here and says why in
# `result.strategy["summary"]`.

# %%
skiff.seed(1)  # the same initial weights on every run
small = GPT(GPTConfig(block_size=64, n_layer=2, n_head=2, n_embd=64))
trainer = skiff.Trainer(small, strategy="auto", lr=3e-3, batch_size=16)
result2 = trainer.train(TextDataset("sonnets", block_size=64), steps=10 if QUICK else 200)
print(result2)
print(result2.strategy["summary"])  # what auto chose, and why

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
trainer = skiff.Trainer(net, lr=1e-2, batch_size=64)  # verbose=True: a log line per epoch
fit = trainer.train((X[:800], y[:800]), epochs=5 if QUICK else 30,
                    val_dataset=(X[800:], y[800:]))
print("held-out accuracy after each epoch:",
      " ".join(f"{v['val_accuracy']:.2f}" for v in fit.val_history), "(guessing: 0.5)")
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
same = all(np.array_equal(w, copy.state_dict()[k]) for k, w in net.state_dict().items())
# float32 outputs of two models agree to rounding, not always to the bit
print(net_job.status, same and np.allclose(skiff.Trainer(copy).predict(X), trainer.predict(X),
                                           rtol=1e-5, atol=1e-5))
os.remove("net.npz")

# %% [markdown]
# ## Stopping where the held-out loss was lowest
#
# A wide network on 200 rows first learns the rule, then memorises the rows: its held-out
# loss falls well below guessing (ln 2 = 0.693 for two classes), then climbs.
# `early_stopping=N` (`%train ... --early-stop N`) scores the validation set at each epoch's
# end and stops once N validations in a row brought nothing better; the model ends with the
# weights of the best one (`result.best_step`), not with the last step's.

# %%
skiff.seed(2)
wide = nn.Sequential(nn.Linear(8, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                     nn.Linear(256, 2))
stopper = skiff.Trainer(wide, lr=1e-2, batch_size=16, early_stopping=3)
held = (X[800:], y[800:])
early = stopper.train((X[:200], y[:200]), epochs=200, val_dataset=held)
print("held-out loss at each epoch's end:",
      " ".join(f"{v['val_loss']:.3f}" for v in early.val_history), f"(guessing {np.log(2):.3f})")
print(early.stopped, f"at step {early.steps}; the weights of step {early.best_step} kept")
print(f"held-out loss {stopper.evaluate(held)['val_loss']:.3f} (the best seen: "
      f"{early.best_val_loss:.3f}; the last validation's: {early.val_history[-1]['val_loss']:.3f})")

# the same curve drawn: where it turned, and the validation whose weights were kept
from IPython import display as ipd
from skiff.kernels.backend.figures import new_figure, render_png  # thread-safe with jobs

fig = new_figure(figsize=(5.5, 3.0), dpi=90)
ax = fig.add_subplot()
ax.plot([v["epoch"] for v in early.val_history], [v["val_loss"] for v in early.val_history],
        "o-", ms=3, label="held-out loss")
kept = next(v for v in early.val_history if v["step"] == early.best_step)
ax.plot(kept["epoch"], kept["val_loss"], "o", ms=9, mfc="none", color="C3",
        label=f"kept: step {early.best_step}")
ax.axhline(np.log(2), color="0.5", ls="--", lw=0.8, label="guessing (ln 2)")
ax.set(xlabel="epoch", ylabel="loss")
ax.legend(fontsize=8)
fig.tight_layout()
ipd.display(ipd.Image(data=render_png(fig)))

# %% [markdown]
# ## A folder of images
#
# `%train cnn FOLDER` trains the built-in CNN on a folder of class folders
# (`photos/cat/*.jpg`, `photos/dog/*.png`, ...): each image cut to a centred square and
# resized (`--image-size`), a tenth held out for the accuracy, a file that is no image left
# out and said. Here a folder of drawn shapes stands in for photos. New images are read the
# way the training set was with `skiff.data.ImageFolder(folder, like=job.run_dir)` (its
# size, colours, scaling and class numbers); in a terminal `python -m skiff predict JOB
# folder` lists each image's class.

# %%
import tempfile
from PIL import Image, ImageDraw


def draw_shapes(root, per_class, seed):
    rng = np.random.default_rng(seed)
    for shape in ("circle", "square", "triangle"):
        os.makedirs(os.path.join(root, shape), exist_ok=True)
        for i in range(per_class):
            w, h = (int(v) for v in rng.integers(40, 100, 2))
            im = Image.new("RGB", (w, h), tuple(int(v) for v in rng.integers(0, 60, 3)))
            s, (cx, cy) = min(w, h) * rng.uniform(0.5, 0.8), (w / 2, h / 2)
            box = [cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2]
            ink = tuple(int(v) for v in rng.integers(160, 256, 3))
            draw = ImageDraw.Draw(im)
            if shape == "circle":
                draw.ellipse(box, fill=ink)
            elif shape == "square":
                draw.rectangle(box, fill=ink)
            else:
                draw.polygon([(cx, box[1]), (box[0], box[3]), (box[2], box[3])], fill=ink)
            im.save(os.path.join(root, shape, f"{i}.png"))


photos = tempfile.mkdtemp(prefix="shapes-")
draw_shapes(photos, 40, seed=0)

# %%
%train cnn {photos} --epochs 15 --lr 3e-3 --image-size 16 --wait -o shapes_job
new_photos = tempfile.mkdtemp(prefix="new-shapes-")
draw_shapes(new_photos, 10, seed=7)  # shapes it never saw
unseen = skiff.data.ImageFolder(new_photos, like=shapes_job.run_dir)
scores = skiff.Trainer(shapes_job.value.model).evaluate(unseen)
print(f"{shapes_job.status}: held-out accuracy "
      f"{shapes_job.value.val_history[-1]['val_accuracy']:.2f}, on new images "
      f"{scores['val_accuracy']:.2f}")
shapes_job  # the job's view: its loss and held-out accuracy, epoch by epoch

# %% [markdown]
# ## A rare class: its scores, and `--class-weight`
#
# A table where one claim in ten is fraud: a model that always answers "ok" is 90% accurate
# and useless. After a classifier's job, `job.value.class_metrics` holds the held-out
# precision, recall and F1 of each class and the confusion matrix (also in the run folder's
# `metrics.json`, the job view's table, and the summary's "held-out by class" line).
# `--class-weight balanced` (scikit-learn's `class_weight`) makes each class weigh
# `rows / (classes * its rows)` in the loss, so the rare class counts as much as the common
# one; `--class-weight fraud=5,ok=1` names the weights instead.

# %%
claims = os.path.join(tempfile.mkdtemp(prefix="claims-"), "claims.csv")
rng = np.random.default_rng(5)
fraud = rng.random(600) < 0.1
amount, hour = rng.normal(size=600) + 1.2 * fraud, rng.normal(size=600) + 0.8 * fraud
with open(claims, "w") as fh:
    fh.write("amount,hour,label\n")
    fh.writelines(f"{a:.3f},{h:.3f},{'fraud' if f else 'ok'}\n"
                  for a, h, f in zip(amount, hour, fraud))

# %%
%train mlp {claims} --epochs 10 --val-split 0.3 --wait -o plain_job
%train mlp {claims} --epochs 10 --val-split 0.3 --class-weight balanced --wait -o weighed_job
for name, run in (("plain", plain_job), ("balanced", weighed_job)):  # (`job` is the first one)
    per = run.value.class_metrics["per_class"]
    recall = dict(zip(per["class"], per["recall"]))
    print(f"{name}: accuracy {run.value.class_metrics['val_accuracy']:.3f}, fraud found "
          f"{recall['fraud']:.3f}, ok kept {recall['ok']:.3f}")

# %% [markdown]
# The plain model learned the useless answer: its accuracy is about the share of ok claims,
# and it finds few frauds or none. The balanced one finds most of them, at the price of some
# ok claims flagged, so its accuracy is lower: for a rare class, read that class's recall (and
# F1), not the accuracy.

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
%%train --steps $STEPS --batch-size $BATCH --lr 2e-3 -o packed_job
from skiff.data import TextDataset
from skiff.models import GPT, GPTConfig

model = GPT(GPTConfig(block_size=128, n_layer=2, n_head=4, n_embd=64))
dataset = TextDataset("sonnets", block_size=128, packed=True)

# %% [markdown]
# ## Wait for every job
#
# So that "run all" ends only when the jobs have finished.

# %%
for name, j in (("gpt-mini on the classics", job), ("the packed cell", packed_job)):
    j.wait(900)
    print(f"{name} ({j.id}): {j.status},",
          f"final loss {j.result['final_loss']:.3f}" if j.result else j.error)
print("the packed cell's model, from 'When I':")
print(model.generate_text("When I", 80, temperature=0.8, top_k=20, seed=2))
