"""Fine-tune a shipped PP-OCR recognizer on a user's labelled crops, and export it to ONNX.

The sentence: **load** the base graph into skiff's autograd (:class:`OnnxModule`) -> **read**
the labels against its dictionary (growing it with ``add_chars``) -> **split** off a held-out
set -> **train** with CTC loss, AdamW and a warm-up/cosine schedule on batches that mix the
user's augmented crops with rendered general text -> **export** the trained weights into a
copy of the base graph -> **measure** the held-out accuracy before (base file) and after
(exported file), both through onnxruntime, the way ``%ocr --rec-model`` will run it.

Batch norm runs with its stored statistics (frozen), so small batches of one domain do not
drag them away from what the rest of the network expects.
"""

from __future__ import annotations

import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.ocr.models import MODEL_SETS
from skiff.kernels.ocr.synth import char_accuracy
from skiff.kernels.train.core.nn.functional import log_softmax
from skiff.kernels.train.core.nn.functional.ctc import ctc_loss
from skiff.kernels.train.core.optim import AdamW, WarmupCosine, clip_grad_norm_
from skiff.kernels.train.core.tensor import Tensor
from skiff.kernels.train.onnx import OnnxModule, export_onnx
from skiff.kernels.train.onnx.ops import linear

from .data import Augment, GeneralText, as_read, load_crop, make_batch
from .labels import (
    Dictionary,
    LabelRow,
    held_out_beside,
    held_out_in,
    label_files,
    lacking_note,
    read_label_files,
)
from .pull import PULLS, Pulled, pull_back, set_pull, snapshot

__all__ = ["FineTuneConfig", "FineTuneResult", "fine_tune", "base_model_path", "evaluate",
           "BASE_MODELS", "RecTrainer", "split_rows", "going_on", "freeze_before",
           "weight_order"]

BASE_MODELS = {"ch-v6": "ch", "ch": "ch", "ch-v4": "ch-v4", "ch-tiny": "ch-tiny"}


def base_model_path(name: str) -> Path:
    """A shipped recognizer by name (``ch-v6`` = ``ch``, ``ch-v4``, ``ch-tiny``), a model
    set registered by an earlier fine-tune (``--register NAME``), a ``.onnx`` path, or a
    folder holding a fine-tune's ``rec.onnx`` (its ``--out``, or its run folder): what a
    user fine-tunes again."""
    if name in BASE_MODELS:
        models = MODEL_SETS[BASE_MODELS[name]]
        models.check_installed()
        return models.path("rec")
    registered = _model_set(name)
    if registered is not None:
        return registered.path("rec")
    path = Path(name).expanduser()
    if path.suffix == ".onnx" and path.is_file():
        return path
    if path.is_dir():
        for each in (path / "rec.onnx", path / "model" / "rec.onnx"):
            if each.is_file():
                return each
        found = sorted(path.glob("*.onnx"))
        if len(found) == 1:
            return found[0]
        raise ValueError(f"--from {name!r}: a folder without rec.onnx (or with several "
                         ".onnx files): give the recognizer's .onnx file")
    from skiff.kernels.ocr.models import available_model_sets

    own = [s for s in available_model_sets() if s not in BASE_MODELS.values()]
    raise ValueError(f"--from {name!r}: not a shipped recognizer ({', '.join(BASE_MODELS)})"
                     + (f", a registered set ({', '.join(own)})" if own else "")
                     + ", an .onnx file or a folder holding rec.onnx")


def _model_set(name: str):
    """The model set ``name`` (shipped, or registered by a fine-tune in any session), or
    None."""
    from skiff.kernels.ocr.models import available_model_sets

    name = BASE_MODELS.get(name, name)
    return MODEL_SETS[name] if name in available_model_sets() else None


def _set_base(name: str) -> str:
    """The shipped set whose detector and direction model go with a fine-tune of ``name``:
    the set itself, the one a registered set was built on, else ``ch``."""
    found = _model_set(name)
    if found is None:
        return "ch"
    for shipped in dict.fromkeys(BASE_MODELS.values()):
        base = MODEL_SETS[shipped]
        if base.det == found.det and base.cls == found.cls:
            return shipped
    return "ch"


def _base_dictionary(name: str, module, classes: int) -> Dictionary:
    """The base recognizer's characters: its set's dictionary file where it has one (the
    tiny recognizer carries none in its metadata), else the model's ``character``."""
    found = _model_set(name)
    path = found.dict_path() if found is not None else None
    if path is not None:
        return Dictionary.from_text(path.read_text(encoding="utf-8"), classes)
    return Dictionary.from_model(module.proto, classes)


@dataclass
class FineTuneConfig:
    data: str                     # labels file, or a folder with one (a list, or "a,b":
    # several files read as one set, PaddleOCR's label_file_list)
    base: str = "ch-v6"           # shipped recognizer or .onnx path
    out: str = "rec-finetuned"    # folder for rec.onnx and rec_dict.txt
    val_data: str | None = None   # a held-out labels file (else split off val_fraction)
    epochs: int = 3
    steps: int | None = None      # overrides epochs
    batch_size: int = 16
    lr: float = 2e-4              # with freeze 0.5: no forgetting measured (docs/ocr.md)
    weight_decay: float = 1e-4
    mix: float = 0.25             # share of each batch that is rendered general text
    max_width: int = 320
    augment: bool = True
    add_chars: bool = False
    val_fraction: float = 0.1
    general_eval: int = 100       # rendered general lines to measure forgetting (0: skip)
    freeze: float = 0.5           # share of the weight tensors, from the input on, kept fixed
    bucket: int = 16              # batches of like width from pools of this many (1: random)
    name: str | None = None       # register the result as OCR model set NAME (--lang NAME)
    seed: int = 0
    checkpoint_every: int = 50    # steps between checkpoints (0: none; one is written on stop)
    checkpoint_dir: str | None = None  # where rec.ckpt is kept (default: out)
    resume: bool = False          # go on from rec.ckpt in checkpoint_dir when there is one
    eval_every: int = 100         # steps between held-out measures while training (0: none)
    eval_rows: int = 64           # held-out crops measured then (all of them before and after)
    upright: bool | None = None   # the crops come upright: the pipeline runs no direction
    # model before this recognizer (None: measured on the held-out crops, below)
    freeze_head: bool = False     # the classifier (the last MatMul + Add) kept fixed
    train_from: str | None = None  # a weight's name in the file: the weights the graph uses
    # before it stay fixed (in place of freeze); see freeze_before
    general_fonts: list | None = None  # font files the rendered general lines are drawn in
    # (default: the OCR test set's, synth.fonts()); keeps an evaluation set's faces out
    pull: float | None = None     # the share of the way from the base to the tuned weights
    # kept (WiSE-FT, pull.py): None: 1.0, or where the run forgets general text (more than
    # half a point) the best of PULLS on the held-out and general sets; 1.0: never pulled


@dataclass
class FineTuneResult:
    onnx: str
    dict: str
    base: str
    rows: int
    train_rows: int
    val_rows: int
    errors: list = field(default_factory=list)
    added_chars: list = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    train_seconds: float = 0.0    # the training loop alone: wall and CPU (all threads)
    train_cpu_seconds: float = 0.0
    final_loss: float | None = None
    val_before: float | None = None
    val_after: float | None = None
    general_before: float | None = None
    general_after: float | None = None
    model_set: str | None = None  # the name it was registered under, if any
    resumed_from: int | None = None  # the step a resumed run went on from (None: from 0)
    upright: bool = False         # the export says its crops come upright (skiff_upright)
    upright_measure: str = ""     # why: the held-out crops read with and without direction
    pull: float = 1.0             # the share of the way from the base kept (1.0: tuned)
    pull_measure: str = ""        # the readings of the shares tried, when any was

    def to_json(self) -> dict:
        return asdict(self)

    def __repr__(self) -> str:
        acc = ""
        if self.val_after is not None:
            acc = f", held-out {self.val_before:.3f} -> {self.val_after:.3f}"
        return (f"FineTuneResult({self.onnx!r}, {self.train_rows} crops, {self.steps} steps, "
                f"{self.seconds:.1f} s{acc})")

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


def _final_linear(module: OnnxModule):
    """(weight key, bias key, logits tensor name, feature tensor name) of the layer before
    the last Softmax: ``logits = feature @ weight + bias``."""
    producers = {outs[0]: (op, ins) for op, ins, outs, _ in module._nodes}

    def through(name):
        while name in producers and producers[name][0] == "Identity":
            name = producers[name][1][0]
        return name

    soft = [ins[0] for op, ins, outs, _ in module._nodes if op == "Softmax"
            and outs[0] == module.output_name]
    if not soft:
        raise ValueError("the recognizer does not end in Softmax; cannot find its logits")
    logits = soft[0]
    op, ins = producers[through(logits)]
    keys = {v: k for k, v in module.onnx_names.items()}
    if op == "Linear" and ins[1] in keys and ins[2] in keys:  # MatMul + Add, folded
        return keys[ins[1]], keys[ins[2]], logits, ins[0]
    if op == "Add":
        mm = [i for i in ins if through(i) in producers and producers[through(i)][0] == "MatMul"]
        bias = [i for i in ins if i in keys]
        if mm and bias:
            mins = producers[through(mm[0])][1]
            w = [i for i in mins if i in keys]
            if w and len(mins) == 2:
                return keys[w[0]], keys[bias[0]], logits, mins[0] if mins[1] == w[0] else None
    raise ValueError("the recognizer's last layer is not MatMul + Add; cannot grow its classes")


# the training state a stopped run leaves for --resume (in checkpoint_dir, else out)
CHECKPOINT = "rec.ckpt"


def going_on(cfg: FineTuneConfig, run_dir=None) -> str:
    """What goes on from a stopped fine-tune's checkpoint. A job (``run_dir``: its run
    folder, named by its ID): ``jobs resume ID``; where ``--out``/``--checkpoint-dir`` named
    the folder also the same command with ``--resume`` (a new job has a new run folder, so
    ``--resume`` finds the rec.ckpt only in a named one). Without a job: the same
    FineTuneConfig with ``resume=True``.

    >>> going_on(FineTuneConfig(data="l.txt", out="rec"), "runs/20261206-001500-train-ab12")
    'jobs resume 20261206-001500-train-ab12, or the same command with --resume and the same --out'
    """
    # `jobs resume` of a fine-tune names its --out folder as checkpoint_dir: still --out
    own_dir = cfg.checkpoint_dir and \
        Path(cfg.checkpoint_dir).expanduser().resolve() != Path(cfg.out).expanduser().resolve()
    flag = "--checkpoint-dir" if own_dir else "--out"
    if run_dir is None:
        return ("the same FineTuneConfig with resume=True (the same "
                + ("checkpoint_dir" if own_dir else "out") + ")")
    run_dir = Path(run_dir)
    job = f"jobs resume {run_dir.name}"
    folder = Path(cfg.checkpoint_dir or cfg.out).expanduser().resolve()
    if folder == run_dir.resolve() or run_dir.resolve() in folder.parents:
        return job  # the job's own folder: a new job (a new run folder) would not find it
    return f"{job}, or the same command with --resume and the same {flag}"
HEAD_CHUNK_BYTES = 16 << 20
# crops are measured as the OCR pipeline feeds them (rec_input: aspect kept up to 4096 px),
# not squeezed to the training batches' max_width
EVAL_MAX_WIDTH = 4096
# input columns per output frame of the PP-OCR recognizers (a 320-px batch gives 40 frames),
# and the widest a training batch grows to for a long label
FRAME_COLUMNS = 8
MAX_TRAIN_WIDTH = 1600


def ctc_frames(text: str) -> int:
    """The fewest frames CTC can align ``text`` with: one per character, and a blank
    between two equal neighbours.

    >>> ctc_frames("12.5"), ctc_frames("1001")
    (4, 5)
    """
    return len(text) + sum(a == b for a, b in zip(text, text[1:]))


def batch_width(texts: list[str], max_width: int) -> int:
    """The widest a training batch's crops may be: ``max_width`` (crops wider are squeezed),
    or more when a label needs more frames than that gives.

    CTC needs a frame for each character and one between two equal neighbours; a crop
    squeezed below that cannot be aligned with its label at all, and its loss is zero (a
    40-character receipt line at 320 px taught nothing). The batch then keeps half as many
    frames again as the longest label needs, up to :data:`MAX_TRAIN_WIDTH`.

    >>> batch_width(["12.5"], 320), batch_width(["x" * 50], 320)
    (320, 1208)
    """
    need = max(map(ctc_frames, texts), default=0)
    return int(min(MAX_TRAIN_WIDTH, max(max_width, FRAME_COLUMNS * math.ceil(1.5 * need + 2))))


def ctc_batch_loss(module: OnnxModule, x: np.ndarray, targets: list[list[int]],
                   head=None) -> Tensor:
    """Mean CTC loss of a recognizer on a batch ``x`` (N, 3, H, W) against ``targets``
    (class ids per sample), run as the trainer runs it.

    The trunk runs once up to the last layer's input; the last layer (N*T x classes: 38 MB
    a batch of 16 for PP-OCRv6's 18,710 classes), log-softmax and CTC then run on pieces of
    the batch of at most :data:`HEAD_CHUNK_BYTES` of logits each. The sum over the pieces is
    the same loss and gradient; the pieces stay below glibc's largest mmap threshold, so
    their memory is reused from step to step instead of being faulted in fresh each time
    (which cost more than the arithmetic). The graph's final softmax is not run."""
    wkey, bkey, logits_name, feat_name = head or _final_linear(module)
    lens = np.array([len(t) for t in targets])
    padded = np.zeros((len(targets), max(1, int(lens.max()))), np.int64)
    for i, t in enumerate(targets):
        padded[i, : len(t)] = t
    n = len(targets)
    if feat_name is None:
        parts = [(0, n, module(x, outputs=(logits_name,))[logits_name])]
    else:
        feat = module(x, outputs=(feat_name,))[feat_name]  # (N, T, K)
        w, b = getattr(module, wkey), getattr(module, bkey)
        per = max(1, HEAD_CHUNK_BYTES // (4 * int(np.prod(feat.shape[1:-1])) * w.shape[1]))
        parts = [(s, min(n, s + per), linear(feat[s: s + per], w, b))
                 for s in range(0, n, per)]
    total = None
    for s, e, logits in parts:
        lp = log_softmax(logits, axis=-1).transpose(1, 0, 2)  # (T, n, C)
        part = ctc_loss(lp, padded[s:e], np.full(e - s, lp.shape[0]), lens[s:e],
                        zero_infinity=True)
        part = part * ((e - s) / n) if e - s != n else part
        total = part if total is None else total + part
    return total


def grow_classes(module: OnnxModule, wkey: str, bkey: str, old: Dictionary, new_size: int,
                 seed: int = 0) -> None:
    """Give the classifier ``new_size`` classes: new columns before the space class."""
    from skiff.kernels.train.onnx.export import replace_output_classes

    w = getattr(module, wkey).numpy()
    b = getattr(module, bkey).numpy()
    extra = new_size - w.shape[1]
    if extra <= 0:
        return
    rng = np.random.default_rng(seed)
    cols = rng.normal(0.0, float(w.std()), (w.shape[0], extra)).astype(w.dtype)
    bias = np.full(extra, float(np.median(b)), b.dtype)
    cut = w.shape[1] - 1 if old.space else w.shape[1]
    w2 = np.concatenate([w[:, :cut], cols, w[:, cut:]], axis=1)
    b2 = np.concatenate([b[:cut], bias, b[cut:]])
    replace_output_classes(module, wkey, bkey, w2, b2)
    classes_follow(module, wkey, bkey)


def classes_follow(module: OnnxModule, wkey: str, bkey: str) -> int:
    """Make the graph's declared shapes of the classifier's output and of every tensor after
    it (the bias' Add, the Softmax, the graph's output) say the classifier's width; returns
    how many were changed.

    PP-OCRv6's and the tiny recognizer's files declare those shapes (``value_info``) with
    the base's class count. A classifier grown by ``--add-chars`` was exported with them
    unchanged (round 48): onnxruntime warned "Error merging shape info ... Falling back to
    lenient merge" three times on each load, and ``onnx.checker.check_model(full_check=True)``
    and ``onnx.shape_inference.infer_shapes(strict_mode=True)`` refused the file
    ("Inferred shape and existing shape differ in dimension 2: (6907) vs (6906)"). Called
    where the classifier grows and before each export (a model grown before round 48, fine-
    tuned again, keeps its stale shapes otherwise)."""
    graph = module.proto.graph
    classes = int(getattr(module, wkey).shape[-1])
    after = {module.onnx_names[wkey], module.onnx_names[bkey]}
    for node in graph.node:  # ONNX orders the nodes: a node comes after its inputs' makers
        if after.intersection(node.input):
            after.update(node.output)
    changed = 0
    for v in list(graph.value_info) + list(graph.output):
        dims = v.type.tensor_type.shape.dim
        if v.name in after and len(dims) and dims[-1].HasField("dim_value") \
                and dims[-1].dim_value != classes:
            dims[-1].dim_value = classes
            changed += 1
    return changed


def _decode(probs: np.ndarray, alphabet: list[str]) -> list[str]:
    from skiff.kernels.ocr.rec import ctc_decode

    return [t for t, _ in ctc_decode(probs, alphabet)]


def evaluate(onnx_path, crops: list[np.ndarray], texts: list[str], alphabet: list[str], *,
             max_width: int = 320, batch: int = 16, check=None) -> float:
    """Mean character accuracy of a recognizer file (onnxruntime) on crops; ``check`` (a
    job's stop: it raises) is called before each batch."""
    from skiff.kernels.ocr.engine import OnnxEngine

    if not crops:
        return float("nan")
    eng = OnnxEngine(onnx_path, "cpu")
    order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1] / crops[i].shape[0])
    scores = [0.0] * len(crops)
    for k in range(0, len(order), batch):
        if check is not None:
            check()
        idx = order[k: k + batch]
        probs = eng(make_batch([crops[i] for i in idx], max_width=max_width))
        for i, text in zip(idx, _decode(probs, alphabet)):
            scores[i] = char_accuracy(text, texts[i])
    return float(np.mean(scores))


def freeze_early(module: OnnxModule, fraction: float) -> int:
    """Keep the first ``fraction`` of the weight tensors (in the order the graph first uses
    them: the stem and early stages) fixed; returns how many were frozen. Backward then
    stops where the first trained weight is used."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"freeze must be in [0, 1), got {fraction}")
    keys, seen = module._key_of, []
    for _, ins, _, _ in module._nodes:
        for name in ins:
            k = keys.get(name)
            if k is not None and k not in seen and getattr(module, k).requires_grad:
                seen.append(k)
    n = int(round(fraction * len(seen)))
    for k in seen[:n]:
        getattr(module, k).requires_grad_(False)
    return n


def weight_order(module: OnnxModule) -> list[str]:
    """The module's weight keys (parameters and batch-norm statistics) in the order the
    graph first uses them."""
    keys, seen = module._key_of, {}
    for _, ins, _, _ in module._nodes:
        for name in ins:
            k = keys.get(name)
            if k is not None and k not in seen:
                seen[k] = None
    return list(seen)


def train_from_key(module: OnnxModule, name: str) -> str:
    """The weight key of ``name`` (a weight's tensor name in the ONNX file, as Netron shows
    it: ``linear_8.w_0``); a name that is no weight is refused naming the closest (and, for
    a tensor the graph computes, the first weight used after it)."""
    import difflib

    key = module._key_of.get(name)
    if key is not None:
        return key
    names = [module.onnx_names[k] for k in weight_order(module)]
    def first_after(i):
        after = {module._key_of.get(n) for _, ins, _, _ in module._nodes[i + 1:]
                 for n in ins} - {None}
        return next((module.onnx_names[k] for k in weight_order(module) if k in after), None)

    made = [i for i, (_, _, outs, _) in enumerate(module._nodes) if name in outs]
    if made:  # a computed tensor (h1 cut ch-v6 after the backbone's multiply.4 output)
        first = first_after(made[0])
        raise ValueError(f"train_from {name!r} is a tensor the graph computes, not a weight"
                         + (f": the first weight used after it is {first!r}" if first else ""))
    part = [(i, outs[0]) for i, (_, _, outs, _) in enumerate(module._nodes)
            if outs and f".{name}." in f".{outs[0]}."]
    if len(part) == 1:  # "multiply.4" for ch-v6's "p2o.pd_op.multiply.4.0"
        first = first_after(part[0][0])
        raise ValueError(f"train_from {name!r} is not a weight; the graph computes "
                         f"{part[0][1]!r}" + (f", and the first weight used after it is "
                                              f"{first!r}" if first else ""))
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.4)
    raise ValueError(f"train_from {name!r} is not a weight of the recognizer"
                     + (f"; the closest: {', '.join(map(repr, close))}" if close else "")
                     + f" ({len(names)} weights, first {names[0]!r}, last {names[-1]!r})")


def freeze_before(module: OnnxModule, name: str) -> int:
    """Keep fixed every weight the graph uses before the weight ``name`` (graph order, as
    :func:`freeze_early` counts by share); returns how many trained weights were frozen."""
    key = train_from_key(module, name)
    order = weight_order(module)
    n = 0
    for k in order[: order.index(key)]:
        p = getattr(module, k)
        if p.requires_grad:
            p.requires_grad_(False)
            n += 1
    return n


def epoch_batches(widths: list[float], size: int, pool: int, rng: random.Random) \
        -> list[list[int]]:
    """One epoch of batches of ``size`` crop indices, every crop once (the last batch topped
    up with crops drawn again), in random order; with ``pool`` > 1 each batch holds crops of
    like width: the shuffled crops are sorted by width in pools of ``pool`` batches and cut
    there. A batch is as wide as its widest crop, so random batches of crops 125-275 px wide
    compute on ~250 px each; like widths save that padding (a step's cost follows its
    width) and keep the randomness of which crops train together within a pool.

    >>> b = epoch_batches([100, 300, 110, 310, 105, 305], 3, 2, random.Random(0))
    >>> sorted(sorted(x) for x in b)
    [[0, 2, 4], [1, 3, 5]]
    """
    order = list(range(len(widths)))
    rng.shuffle(order)
    if len(order) % size:
        order += rng.sample(range(len(widths)), size - len(order) % size) \
            if len(widths) >= size else [rng.randrange(len(widths)) for _ in
                                          range(size - len(order) % size)]
    span = size * max(1, pool)
    batches = []
    for s in range(0, len(order), span):
        chunk = order[s: s + span]
        if pool > 1:
            chunk.sort(key=lambda i: widths[i])
        batches += [chunk[k: k + size] for k in range(0, len(chunk), size)]
    rng.shuffle(batches)
    return batches


class RecTrainer:
    """The training loop over one imported recognizer (see the module docstring)."""

    def __init__(self, module: OnnxModule, dictionary: Dictionary, cfg: FineTuneConfig,
                 reporter=None):
        self.module, self.dictionary, self.cfg = module, dictionary, cfg
        self.reporter = reporter or NullReporter()
        self.head = _final_linear(module)
        self.general = GeneralText(cfg.seed + 1, dictionary=dictionary,
                                   fonts=cfg.general_fonts)
        self.augment = Augment(cfg.seed + 2) if cfg.augment else None
        self.rng = random.Random(cfg.seed)
        # (metric, step, value) of the steps trained: kept in the checkpoint and said again
        # by a resumed run, whose job's chart began at the step it went on from (round 45)
        self.history: list[tuple[str, int, float]] = []

    def loss(self, crops: list[np.ndarray], texts: list[str]) -> Tensor:
        x = make_batch(crops, max_width=batch_width(texts, self.cfg.max_width))
        return ctc_batch_loss(self.module, x, [self.dictionary.encode(t) for t in texts],
                              self.head)

    def accuracy(self, crops: list[np.ndarray], texts: list[str], batch: int = 16) -> float:
        """Mean character accuracy of the model as it is now (skiff's graph, no gradient),
        on crops fed as the pipeline feeds them: the held-out measure shown while it
        trains (before and after, the files are measured through onnxruntime)."""
        from skiff.kernels.train.core.autograd import no_grad

        wkey, bkey, logits_name, feat_name = self.head
        order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1] / crops[i].shape[0])
        scores = [0.0] * len(crops)
        with no_grad():
            for k in range(0, len(order), batch):
                idx = order[k: k + batch]
                x = make_batch([crops[i] for i in idx], max_width=EVAL_MAX_WIDTH)
                if feat_name is None:
                    logits = self.module(x, outputs=(logits_name,))[logits_name]
                else:
                    feat = self.module(x, outputs=(feat_name,))[feat_name]
                    logits = linear(feat, getattr(self.module, wkey),
                                    getattr(self.module, bkey))
                z = logits.numpy().astype(np.float64)
                z = np.exp(z - z.max(-1, keepdims=True))
                probs = (z / z.sum(-1, keepdims=True)).astype(np.float32)
                for i, text in zip(idx, _decode(probs, self.dictionary.alphabet)):
                    scores[i] = char_accuracy(text, texts[i])
        return float(np.mean(scores)) if scores else float("nan")

    def train(self, crops: list[np.ndarray], texts: list[str], *,
              checkpoint: Path | None = None, resume: bool = False, held=None) \
            -> tuple[int, float | None]:
        """Train; with ``checkpoint`` the whole state (trained weights, AdamW's moments, the
        schedule, every random generator, the epoch's batches left) is written there every
        ``checkpoint_every`` steps and when the job is stopped, and with ``resume`` a run
        goes on from it: the same batches and draws as a run never stopped. ``held``
        (crops, texts): measured every ``eval_every`` steps (``val_char_acc``), so a user
        sees the model learn while it trains."""
        cfg = self.cfg
        own = max(1, int(round(cfg.batch_size * (1.0 - cfg.mix))))
        per_epoch = math.ceil(len(crops) / own)
        total = cfg.steps or per_epoch * cfg.epochs
        if cfg.train_from:
            freeze_before(self.module, cfg.train_from)
        elif cfg.freeze:
            freeze_early(self.module, cfg.freeze)
        if cfg.freeze_head:
            for k in self.head[:2]:
                getattr(self.module, k).requires_grad_(False)
        params = [p for p in self.module.parameters() if p.requires_grad]
        if not params:
            raise ValueError("no weight is left to train (train_from names the last weights "
                             "and freeze_head keeps the classifier): name an earlier weight")
        opt = AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        # Adam's first steps move every weight by about lr whatever its gradient: a warm-up
        # of a fifth of a short run keeps a pretrained model from being thrown off at once
        sched = WarmupCosine(opt, warmup_steps=min(total, max(2, min(50, total // 5))),
                             total_steps=total, min_lr_ratio=0.05)
        batches: list[list[int]] = []
        widths = [min(48.0 * c.shape[1] / max(c.shape[0], 1), cfg.max_width) for c in crops]
        last, start = None, 0
        if resume and checkpoint is not None and checkpoint.is_file():
            start, batches, last = self._restore(checkpoint, opt, sched, total, len(crops))
            self.resumed_from = start
            self.reporter.log(f"resumed from {checkpoint} at step {start} of {total}")
        elif resume:
            self.reporter.log(f"no checkpoint at {checkpoint}: training from the base model")
        done = start  # steps finished: a stop between steps (the job's stop) resumes exactly
        # the state before the step under way: a stop inside it (Ctrl-C in backward) is
        # saved as that step not begun, its batch and random draws kept for the resume
        before = None
        try:
            for step in range(start, total):
                self.reporter.check()
                before = ([list(b) for b in batches], self._state())
                if not batches:
                    batches = epoch_batches(widths, own, cfg.bucket, self.rng)
                idx = batches.pop()
                bc = [crops[i] for i in idx]
                bt = [texts[i] for i in idx]
                if self.augment is not None:
                    bc = [self.augment(c) for c in bc]
                # general lines no wider than the domain crops: the batch's width (and the
                # step's cost) is set by the user's data, and the lines are not squeezed
                wide = max(min(batch_width(bt, cfg.max_width),
                               48 * c.shape[1] / max(c.shape[0], 1)) for c in bc)
                for _ in range(cfg.batch_size - own):
                    c, t = self.general.sample(max_width=max(int(wide), 96))
                    bc.append(self.augment(c) if self.augment is not None else c)
                    bt.append(t)
                loss = self.loss(bc, bt)
                opt.zero_grad()
                loss.backward()
                clip_grad_norm_(params, 5.0)
                before = None  # the weights move now: a stop from here saves this step done
                opt.step()
                sched.step()
                done = step + 1
                last = float(loss.item())
                self.reporter.metric("loss", last, step=step + 1)
                self.history.append(("loss", step + 1, last))
                self.reporter.progress(step + 1, total, unit="step")
                if held and held[0] and cfg.eval_every and (step + 1) % cfg.eval_every == 0 \
                        and step + 1 < total:
                    acc = self.accuracy(*held)
                    self.reporter.metric("val_char_acc", acc, step=step + 1)
                    self.history.append(("val_char_acc", step + 1, acc))
                if checkpoint is not None and cfg.checkpoint_every and \
                        (step + 1) % cfg.checkpoint_every == 0 and step + 1 < total:
                    self._save(checkpoint, step + 1, total, opt, sched, batches, last,
                               len(crops))
            if checkpoint is not None and done > start:
                # the trained weights, kept until the model is exported and measured: a stop
                # in that minute (Ctrl-C at 100%) lost them, the checkpoint deleted (round 44)
                self._save(checkpoint, done, total, opt, sched, batches, last, len(crops))
        except BaseException:  # stopped (a job's stop, Ctrl-C, an error): keep what it learnt
            saved = False
            if checkpoint is not None and before is not None and done > start:
                # stopped inside step `done`: its batch and draws go back for the resume
                self._save(checkpoint, done, total, opt, sched, before[0], last,
                           len(crops), state=before[1])
                saved = True
            elif checkpoint is not None and start < done < total:
                self._save(checkpoint, done, total, opt, sched, batches, last, len(crops))
                saved = True
            if saved:  # said for a stop inside a step too (Ctrl-C in backward said nothing)
                how = going_on(cfg, getattr(self.reporter, "run_dir", None))
                self.reporter.log(f"stopped at step {done} of {total}: checkpoint {checkpoint} "
                                  f"({how}{',' if ', or ' in how else ''} goes on from it)")
            raise
        return total, last

    resumed_from: int | None = None

    def _state(self) -> dict:
        return {"rng": self.rng.getstate(), "general": self.general.rng.getstate(),
                "augment": self.augment.rng.bit_generator.state if self.augment else None}

    def _save(self, path: Path, step, total, opt, sched, batches, last, rows, *,
              state: dict | None = None) -> None:
        """The run's whole state at ``step`` written to ``path`` (atomically); ``state``:
        the random generators' (default: now)."""
        import pickle

        weights = {k: getattr(self.module, k).numpy().copy() for k, p in
                   self.module.named_parameters() if p.requires_grad}
        state = {"version": 1, "step": step, "total": total, "rows": rows,
                 "chars": self.dictionary.text(), "weights": weights,
                 "opt": opt.state_dict(), "sched": sched.state_dict(), "batches": batches,
                 "last": last, "history": [h for h in self.history if h[1] <= step],
                 **(state or self._state())}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(state, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)

    def _restore(self, path: Path, opt, sched, total: int, rows: int):
        import pickle

        try:
            with open(path, "rb") as fh:
                state = pickle.load(fh)
            if not isinstance(state, dict) or "weights" not in state:
                raise ValueError("not a fine-tune's checkpoint")
        except Exception as err:  # cut short (a full disk, a copy stopped), or another file
            raise ValueError(f"cannot resume from {path}: it cannot be read "
                             f"({type(err).__name__}: {str(err)[:80] or 'cut short'}); delete "
                             "it, or drop --resume, to start again") from None
        why = None
        if state.get("chars") != self.dictionary.text():
            why = _dictionary_change(str(state.get("chars") or ""), self.dictionary.text(),
                                     self.cfg.add_chars)
        elif state.get("rows") != rows or state.get("total") != total:
            why = (f"it trained {state.get('rows')} crops for {state.get('total')} steps, "
                   f"this run {rows} for {total}")
        if why:
            raise ValueError(f"cannot resume from {path}: {why}; give the same --data, "
                             "--from and steps, or drop --resume (or delete the checkpoint) "
                             "to start again")
        for k, w in state["weights"].items():
            getattr(self.module, k)._data[...] = w
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        self.rng.setstate(state["rng"])
        self.general.rng.setstate(state["general"])
        if self.augment is not None and state.get("augment") is not None:
            self.augment.rng.bit_generator.state = state["augment"]
        self.history = [tuple(h) for h in state.get("history") or ()]
        for name, step, value in self.history:  # the chart of the steps before the stop
            self.reporter.metric(name, value, step=step)
        return int(state["step"]), [list(b) for b in state["batches"]], state.get("last")


def _load(rows: list[LabelRow], where: str = "") -> tuple[list[np.ndarray], list[str],
                                                          list[str]]:
    """The crops and texts of ``rows``: a whole image, or the box a detection label gives
    cut from its page (a page is decoded once for its boxes); a broken image is one line
    and the rest go on."""
    from skiff.kernels.ocr.rec import crop_box

    crops, texts, errors = [], [], []
    pre = f"{where} " if where else ""  # the labels file, as read_labels names it (each
    # row's own where several files make one set)
    page, page_of = None, None
    for r in sorted(rows, key=lambda r: r.image) if any(r.box for r in rows) else rows:
        try:
            if r.box is None:  # a crop file; a column of text turned as crop_box turns it
                crop = as_read(load_crop(r.image), r.text)
            else:
                if page_of != r.image:
                    page, page_of = load_crop(r.image), r.image
                crop = crop_box(page, np.asarray(r.box, np.float32))
        except Exception as e:
            errors.append(f"{(r.file or where) + ' ' if pre else ''}line {r.line}: image "
                          f"{r.image!r} cannot be read: {e}")
            continue
        short = _too_narrow(crop, r.text)
        if short:
            errors.append(f"{(r.file or where) + ' ' if pre else ''}line {r.line}: {short} (image "
                          f"{r.image!r}); check the crop and its text")
            continue
        crops.append(crop)
        texts.append(r.text)
    return crops, texts, errors


PAGE_HEIGHT = 400  # px: a crop this tall and this wide, too narrow for its text, is a page


def _check_out(cfg: FineTuneConfig, reporter) -> None:
    """Said before the training, not after it: ``--out`` naming a file (the export failed
    at the end with FileExistsError, the whole run lost), a folder whose ``rec.onnx`` the
    run will replace, and a stopped run's checkpoint there that a run without ``resume``
    starts over from scratch and overwrites."""
    out = Path(cfg.out).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {cfg.out!r} is a file, not a folder: the model is written "
                         "as rec.onnx and rec_dict.txt into a folder; give a folder name")
    checkpoint = Path(cfg.checkpoint_dir or cfg.out).expanduser() / CHECKPOINT
    if checkpoint.is_file() and not cfg.resume:
        reporter.log(f"{checkpoint} is a stopped run's state: this run starts from the base "
                     "model and replaces it (--resume, or resume=True, goes on from it "
                     "instead)", level="warning")
    if (out / "rec.onnx").is_file():
        reporter.log(f"{out} already holds rec.onnx: it is replaced when this run ends (give "
                     "another --out to keep it)", level="warning")


def _few_rows(train: int, held: int) -> list[str]:
    """Warnings for a data set too small to learn from or to measure on."""
    notes = []
    if train < MIN_TRAIN_ROWS:
        notes.append(f"only {train} crops to train on: the model barely moves from so few "
                     f"(round 33: 2,000 receipt crops took 0.84 to 0.96); label or render "
                     f"a few hundred or more")
    if 0 < held < MIN_HELD_ROWS:
        notes.append(f"the accuracy before and after is measured on {held} crops: one "
                     f"crop is about {100 / held:.0f} points of it; keep {MIN_HELD_ROWS} or "
                     "more apart (--val FILE, --val-split)")
    return notes


MIN_TRAIN_ROWS = 100
MIN_HELD_ROWS = 20


def _too_narrow(crop: np.ndarray, text: str, height: int = 48) -> str | None:
    """Why ``crop`` cannot carry ``text`` (None when it can): read at ``height`` px its
    width gives one frame per :data:`FRAME_COLUMNS` columns, and CTC needs a frame for each
    character and one between two equal neighbours. Such a row is a crop and a label that
    do not belong together (or a crop cut short): learning from it is impossible."""
    h, w = crop.shape[:2]
    frames = int(height * w / max(h, 1) + 8) // FRAME_COLUMNS  # with the 8 grey columns
    need = ctc_frames(text)
    if frames < need and h >= PAGE_HEIGHT and w >= PAGE_HEIGHT:  # a page or a photo: "5
        # frames, the text needs 11" did not say what was wrong (round 34)
        return (f"the image is {w} x {h} px, a whole page or photo, not a crop of one line: "
                "a recognizer reads one line of text; cut the line out (or give a "
                "detection label file, PPOCRLabel's Label.txt, with the line's box)")
    most = MAX_TRAIN_WIDTH // FRAME_COLUMNS  # a batch widens no further: it is squeezed
    if need > most:  # ... and CTC's loss of it is zero: it taught nothing, without a word
        return (f"{len(text)} characters in one line: a training batch is at most "
                f"{MAX_TRAIN_WIDTH} px wide ({most} frames), the text needs {need}; cut "
                "the line into shorter crops")
    if frames >= need:
        return None
    return (f"{len(text)} characters on an image {w} x {h} px: at the recognizer's "
            f"{height}-px height it gives {frames} frames, the text needs {need}")


def _measures_file(checkpoint: Path) -> Path:
    return checkpoint.with_name(checkpoint.name + ".base.json")


def _measures_key(base, vcrops, vtexts, general) -> str:
    """What the base model's measures depend on: the base file, the held-out crops and
    texts, the general lines (a resume with another --val measures again)."""
    import hashlib

    h = hashlib.sha256(str(Path(base).resolve()).encode())
    h.update(str(os.path.getsize(base)).encode())
    for crops, texts in ((vcrops, vtexts), general or ([], [])):
        for c, t in zip(crops, texts):
            h.update(repr((c.shape, t)).encode())
            h.update(np.ascontiguousarray(c).tobytes())
    return h.hexdigest()


def _keep_base_measures(checkpoint: Path, base, vcrops, vtexts, general, val, gen) -> None:
    """The base model's held-out and general accuracy beside the checkpoint, so a resumed
    run does not measure them again (minutes on PP-OCRv6 at 300 crops on a loaded CPU)."""
    import json

    try:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        _measures_file(checkpoint).write_text(json.dumps(
            {"key": _measures_key(base, vcrops, vtexts, general), "val": val,
             "general": gen}))
    except OSError:  # a read-only folder: the resume measures again
        pass


def _base_measures(checkpoint: Path, base, vcrops, vtexts, general) -> dict | None:
    import json

    path = _measures_file(checkpoint)
    if not checkpoint.is_file() or not path.is_file():
        return None
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or \
            kept.get("key") != _measures_key(base, vcrops, vtexts, general):
        return None
    return kept


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.4f}"


def fine_tune(cfg: FineTuneConfig, reporter=None) -> FineTuneResult:
    """Run the whole sentence of the module docstring; see :class:`FineTuneConfig`."""
    reporter = reporter or NullReporter()
    t0 = time.perf_counter()
    if cfg.pull is not None and not 0.0 <= cfg.pull <= 1.0:  # said now, not after the run
        raise ValueError(f"pull {cfg.pull!r}: a share of the way from the base, 0 to 1")
    base = base_model_path(cfg.base)
    _check_out(cfg, reporter)
    module = OnnxModule.load(base)
    wkey = _final_linear(module)[0]
    classes = getattr(module, wkey).shape[1]
    if cfg.train_from:  # refused now, not after the base model is measured
        train_from_key(module, cfg.train_from)
    dictionary = _base_dictionary(cfg.base, module, classes)
    base_alphabet = dictionary.alphabet
    labels = read_label_files(cfg.data, dictionary, add_chars=cfg.add_chars)
    if labels.encoding != "utf-8":
        reporter.log(f"{labels.source} is not UTF-8: read as {labels.encoding}"
                     + (" (GBK)" if labels.encoding == "gb18030" else ""))
    errors = list(labels.errors)
    val_rows: list[LabelRow] = []
    if cfg.val_data:
        named = held_out_in(cfg.val_data)
        held = read_label_files(named, dictionary, add_chars=cfg.add_chars)
        if named != cfg.val_data:
            reporter.log(f"--val names a folder: its {Path(named).name} is the held-out set")
        errors += held.errors
        val_rows = held.rows
    lacking = lacking_note([labels] + ([held] if cfg.val_data else []))
    if lacking:  # said first: the rows' own errors follow it, one a row
        reporter.log(lacking, level="warning")
    for e in errors + labels.warnings + (held.warnings if cfg.val_data else []):
        reporter.log(e, level="warning")
    if not labels.rows:
        raise ValueError(f"no usable rows in {labels.source!r}" +
                         (f": {errors[0]}" + (f" (and {len(errors) - 1} more)"
                                              if len(errors) > 1 else "") if errors else ""))
    rows = list(labels.rows)
    if not cfg.val_data and len(rows) >= 10 and cfg.val_fraction > 0:
        val_rows, rows = split_rows(rows, cfg.val_fraction, cfg.seed)
        beside = held_out_beside(labels.source) if len(label_files(cfg.data)) == 1 else None
        if beside is not None:
            reporter.log(f"{beside.name} beside {Path(labels.source).name} is not read: the "
                         f"held-out set is {cfg.val_fraction:.0%} of {Path(labels.source).name}"
                         f"; give --val {beside} to hold it out instead", level="warning")
    if cfg.val_data:
        overlap = _shared_rows(labels.rows, val_rows)
        if overlap:
            reporter.log(f"{overlap} of the {len(val_rows)} held-out rows ({held.source}) are "
                         "training rows too (the same image and box): the held-out accuracy "
                         "reads high; give --val a file of other images", level="warning")
    reporter.log(f"{len(rows)} rows to train, {len(val_rows)} held out, {len(errors)} bad "
                 f"rows; loading the crops")
    crops, texts, bad = _load(rows, Path(labels.source).name)
    vcrops, vtexts, vbad = _load(val_rows, Path(held.source).name if cfg.val_data
                                 else Path(labels.source).name)
    for e in bad + vbad:
        reporter.log(e, level="warning")
    errors += bad + vbad
    if bad or vbad:  # the count above took these rows as good: "601 rows to train, 3 bad
        # rows" was followed by a fourth bad row, and the result said 600 and 4 (round 39)
        reporter.log(f"{len(crops)} crops to train, {len(vcrops)} held out, {len(errors)} "
                     "bad rows in all")
    for e in _few_rows(len(crops), len(vcrops)):
        reporter.log(e, level="warning")
    if dictionary.num_classes != classes:
        if cfg.freeze_head:
            raise ValueError(f"freeze_head keeps the classifier fixed, and the labels add "
                             f"{len(labels.added)} characters ({''.join(labels.added[:10])!r}) "
                             "whose classes it would never learn: drop freeze_head or "
                             "add_chars")
        grow_classes(module, wkey, _final_linear(module)[1],
                     _base_dictionary(cfg.base, module, classes), dictionary.num_classes,
                     cfg.seed)
        reporter.log(f"added {len(labels.added)} characters to the dictionary: "
                     f"{''.join(labels.added)!r}")
    general = _general_set(cfg.general_eval, cfg.seed + 7, dictionary, cfg.general_fonts)
    result = FineTuneResult(onnx="", dict="", base=str(base), rows=len(crops) + len(vcrops),
                            train_rows=len(crops), val_rows=len(vcrops), errors=errors,
                            added_chars=list(labels.added))
    checkpoint = Path(cfg.checkpoint_dir or cfg.out).expanduser() / CHECKPOINT
    kept = _base_measures(checkpoint, base, vcrops, vtexts, general) if cfg.resume else None
    if kept is not None:  # a resumed run: the base model was measured before the stop
        result.val_before, result.general_before = kept["val"], kept["general"]
        reporter.log("the base model's measures kept from before the stop: held-out "
                     f"{_fmt(result.val_before)}, general {_fmt(result.general_before)}")
    else:
        reporter.log(f"measuring the base model on {len(vcrops)} held-out crops"
                     + (f" and {len(general[0])} rendered general lines" if general else ""))
        if vcrops:
            # the base model cannot spell added characters: they count as misses, as they are
            result.val_before = evaluate(base, vcrops, vtexts, base_alphabet,
                                         max_width=EVAL_MAX_WIDTH)
        if general:
            result.general_before = evaluate(base, *general, base_alphabet,
                                             max_width=EVAL_MAX_WIDTH)
        _keep_base_measures(checkpoint, base, vcrops, vtexts, general,
                            result.val_before, result.general_before)
        if vcrops or general:  # said now: a user learns before the training whether the
            # base already reads their crops (its figures were in the result only, at the end)
            reporter.log("the base model reads " + ", ".join(
                f"{what} at {_fmt(value)}" for what, value in
                (("the held-out crops", result.val_before),
                 ("rendered general text", result.general_before)) if value is not None)
                + " (character accuracy)")
    if result.val_before is not None:
        reporter.metric("val_char_acc", result.val_before, step=0)
    start = snapshot(module)  # where the run begins: a forgetting run is pulled back to it
    module.train()
    trainer = RecTrainer(module, dictionary, cfg, reporter)
    t1, c1 = time.perf_counter(), time.process_time()
    pick = random.Random(cfg.seed + 3).sample(range(len(vcrops)), min(len(vcrops),
                                                                      cfg.eval_rows))
    result.steps, result.final_loss = trainer.train(
        crops, texts, checkpoint=checkpoint, resume=cfg.resume,
        held=([vcrops[i] for i in pick], [vtexts[i] for i in pick]))
    result.resumed_from = trainer.resumed_from
    result.train_seconds = round(time.perf_counter() - t1, 2)
    result.train_cpu_seconds = round(time.process_time() - c1, 2)
    # said before the export and the measures after it, which take minutes on PP-OCRv6 (the
    # held-out and general sets, then the held-out crops twice through the pipeline): the
    # job sat at 100% saying nothing, "no progress for 47 s", as if hung (round 39)
    ran = (f"steps {result.resumed_from + 1}-{result.steps}" if result.resumed_from
           else f"{result.steps} steps")
    plan = _after_plan(len(vcrops), len(general[0]) if general else 0,
                       cfg.upright is None and len(vcrops) >= 2
                       and MODEL_SETS[_set_base(cfg.base)].cls is not None)
    if result.resumed_from == result.steps:  # stopped after its last step, while finishing
        reporter.log(f"the {result.steps} steps were trained before the stop; {plan}")
    else:
        reporter.log(f"trained {ran} ({result.train_cpu_seconds:.0f} CPU s); {plan}")
    try:
        _finish(cfg, result, module, dictionary, start, vcrops, vtexts, general, checkpoint,
                reporter, learnt=export_marks(texts))
    except BaseException:  # a stop while exporting and measuring (a minute on PP-OCRv6, at
        # 100%): it was read between steps only, so the CLI gave up on the job after 15 s and
        # the thread died with its process, the checkpoint already deleted (round 44)
        if checkpoint.is_file():
            how = going_on(cfg, getattr(reporter, "run_dir", None))
            reporter.log(f"stopped after the last step ({result.steps}), while exporting and "
                         f"measuring: {checkpoint} keeps the trained weights ({how}"
                         f"{',' if ', or ' in how else ''} exports and measures them without "
                         "training again)")
        raise
    result.seconds = round(time.perf_counter() - t0, 2)
    kept = reporter.artifact("rec.onnx", result.onnx, kind="model")
    if cfg.name:
        from skiff.kernels.ocr.models import register_model_set

        # the exported dictionary goes with it: a set built on ch-tiny kept tiny's own file,
        # which lacks the characters a fine-tune added (they read as nothing)
        register_model_set(cfg.name, rec=kept, base=_set_base(cfg.base),
                           dict=reporter.artifact("rec_dict.txt", result.dict, kind="model"))
        result.model_set = cfg.name
        reporter.log(f"registered OCR model set {cfg.name!r}: %ocr ... --lang {cfg.name}")
    checkpoint.unlink(missing_ok=True)  # the run is done: its model exported and measured
    _measures_file(checkpoint).unlink(missing_ok=True)
    return result


def _finish(cfg: FineTuneConfig, result: FineTuneResult, module, dictionary, start, vcrops,
            vtexts, general, checkpoint: Path, reporter, learnt: dict | None = None) -> None:
    """After the last step: the export, its readings of the held-out and general sets, the
    pull back where it forgot, the upright measure; a job's stop is read between batches
    (``reporter.check``)."""
    check = reporter.check
    out = Path(cfg.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    meta = {"character": dictionary.text(), **(learnt or {})}
    classes_follow(module, *_final_linear(module)[:2])
    onnx_path = export_onnx(module, out / "rec.onnx", metadata=meta)
    dict_path = out / "rec_dict.txt"
    dict_path.write_text(dictionary.text() + "\n", encoding="utf-8")
    result.onnx, result.dict = str(onnx_path), str(dict_path)
    if vcrops:
        result.val_after = evaluate(onnx_path, vcrops, vtexts, dictionary.alphabet,
                                    max_width=EVAL_MAX_WIDTH, check=check)
    if general:
        result.general_after = evaluate(onnx_path, *general, dictionary.alphabet,
                                        max_width=EVAL_MAX_WIDTH, check=check)
    _pull(cfg, result, module, start, lambda: export_onnx(
        module, out / "rec.onnx", metadata=meta),
        lambda path: (evaluate(path, vcrops, vtexts, dictionary.alphabet,
                               max_width=EVAL_MAX_WIDTH, check=check) if vcrops else None,
                      evaluate(path, *general, dictionary.alphabet, max_width=EVAL_MAX_WIDTH,
                               check=check) if general else None), reporter)
    if vcrops:  # (the pulled weights' reading, where they were pulled)
        reporter.metric("val_char_acc", result.val_after, step=result.steps)
    check()
    result.upright, result.upright_measure = _upright(cfg, onnx_path, vcrops, vtexts, check)
    if result.upright_measure and not result.upright:
        reporter.log("the direction model stays before this recognizer ("
                     + result.upright_measure + ")")
    if result.upright:
        mark_upright(onnx_path, result.upright_measure)
        reporter.log("the crops come upright (" + result.upright_measure + "): the pipeline "
                     "reads with this recognizer without the direction model "
                     "(use_cls='always' runs it)")


def _pull(cfg: FineTuneConfig, result: FineTuneResult, module, start: dict, export, measure,
          reporter) -> None:
    """Where the run forgot general text (more than half a point under the base), or
    ``cfg.pull`` says a share: the weights pulled back towards ``start`` (pull.py), the file
    exported again with the chosen ones and ``result``'s after-measures theirs."""
    before, after = result.general_before, result.general_after
    forgot = before is not None and after is not None and after < before - 0.005
    if cfg.pull == 1.0 or (cfg.pull is None and not forgot):
        return
    first = Pulled(1.0, result.val_after, after)
    if cfg.pull is not None:  # a share asked for: kept whatever it reads
        set_pull(module, start, snapshot(module), cfg.pull)
        chosen = Pulled(cfg.pull, *measure(export()))
        tried = [first, chosen]
    else:
        reporter.log(f"the tuned model reads general text {100 * (before - after):.1f} points "
                     f"worse than its base ({before:.4f} -> {after:.4f}): reading it with its "
                     "weights pulled " + " and ".join(f"{s:g}" for s in PULLS) + " of the way "
                     "from the base to the tuned ones (WiSE-FT)")
        chosen, tried = pull_back(module, start, export, measure, first, before)
        if chosen.share != tried[-1].share:
            export()  # the file holds the chosen weights (the last export was the last tried)

    def said(p):
        return f"{p.share:g}: held-out {_fmt(p.val)}, general {_fmt(p.general)}"

    result.pull_measure = "; ".join(said(p) for p in tried)
    result.pull, result.val_after, result.general_after = chosen.share, chosen.val, \
        chosen.general
    reporter.log((f"kept the weights {chosen.share:g} of the way from the base to the tuned "
                  "ones" if chosen.share != 1.0 else "kept the tuned weights") +
                 f" ({result.pull_measure})")


def _after_plan(held: int, general: int, upright: bool) -> str:
    """What a run does after its last step, said before it does it."""
    reads = [f"{n} {what}" for n, what in ((held, "held-out crops"),
                                            (general, "rendered general lines")) if n]
    plan = "exporting rec.onnx" + (" and reading " + " and ".join(reads) + " with it"
                                   if reads else "")
    if upright:
        plan += ("; then the held-out crops through the pipeline with and without the "
                 "direction model (whether they come upright)")
    return plan


def upright_reading(onnx_path, base_set: str, crops: list[np.ndarray], texts: list[str],
                    use_cls) -> float:
    """Mean character accuracy of the pipeline reading ``crops`` whole (no detection, no
    words, every line kept) with the recognizer at ``onnx_path`` on ``base_set``'s
    direction model, ``use_cls`` as :class:`.OcrPipeline` takes it."""
    import warnings

    from skiff.kernels.ocr import OcrPipeline
    from skiff.kernels.ocr.pipeline import UnreadScriptWarning

    pipe = OcrPipeline(base_set, device="cpu", rec_model=str(onnx_path), use_det=False,
                       use_cls=use_cls, words=False, min_score=0.0)
    with warnings.catch_warnings():  # a measure, not a user's reading: "a script ... does
        # not read ... %train ocr-rec adds one" was said to the user of %train ocr-rec
        warnings.simplefilter("ignore", UnreadScriptWarning)
        read = [r.text for r in pipe.run(list(crops))]
    return float(np.mean([char_accuracy(a, b) for a, b in zip(read, texts, strict=True)]))


def _upright(cfg: FineTuneConfig, onnx_path, crops, texts, check=None) -> tuple[bool, str]:
    """Whether the export should say its crops come upright, and the measure why: the
    user's ``upright``, else whether the held-out crops read worse through the pipeline
    with the direction model than without it (it turned crops that read right as they
    stand: round 34's seven-segment set read 197 of 200 lines with it, 200 without). A
    domain the direction model reads right keeps it (a page turned over stays readable)."""
    if cfg.upright is not None:
        return bool(cfg.upright), "given (upright=" + str(bool(cfg.upright)) + ")"
    if len(crops) < 2:
        return False, ""
    base = _set_base(cfg.base)
    if MODEL_SETS[base].cls is None:
        return False, ""
    on = upright_reading(onnx_path, base, crops, texts, "always")
    if check is not None:
        check()
    off = upright_reading(onnx_path, base, crops, texts, False)
    return off > on, (f"{len(crops)} held-out crops read {on:.4f} with the direction "
                      f"model, {off:.4f} without")


# a recognizer's metadata: "1" when it was trained on crops whose labels write dashes, so
# its "-" and "–" are the user's own: the pipeline's en_dashes (a guess from the ink's
# width, right for the shipped models on printed text) is not to rewrite them
DASHES_KEY = "skiff_dashes"
_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2212"


def export_marks(texts) -> dict:
    """The metadata an export carries for what its training labels taught: ``skiff_dashes``
    where they write a dash. A handwritten serial's hyphen ("№ 5P-449" in Breip) spans more
    than an en dash's share of the digit height: the tuned model read "-" as labelled and
    the pipeline wrote "–", 22 of 100 held-out tags read wrong (round 45)."""
    return {DASHES_KEY: "1"} if any(c in t for t in texts for c in _DASHES) else {}


def mark_upright(onnx_path, why: str = "") -> None:
    """Write ``skiff_upright`` = "1" (and ``why`` as ``skiff_upright_measure``) into the
    recognizer file's metadata."""
    import onnx

    from skiff.kernels.ocr.pipeline import UPRIGHT_KEY

    model = onnx.load(str(onnx_path))
    props = {p.key: p for p in model.metadata_props}
    for key, value in ((UPRIGHT_KEY, "1"), (UPRIGHT_KEY + "_measure", why)):
        if key in props:
            props[key].value = value
        else:
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
    onnx.save(model, str(onnx_path))


def split_rows(rows: list[LabelRow], fraction: float, seed: int
               ) -> tuple[list[LabelRow], list[LabelRow]]:
    """``(held_out, train)``: about ``fraction`` of the rows held out, drawn by ``seed``. Rows
    naming the same image and box (a labels file with repeated lines, two lists joined) go
    to the same side: split row by row, a repeated crop landed on both and its held-out
    reading was of a crop it had trained on."""
    groups: dict[tuple, list[LabelRow]] = {}
    for r in rows:
        groups.setdefault((os.path.realpath(r.image), r.box), []).append(r)
    keys = list(groups)
    random.Random(seed).shuffle(keys)
    want = max(1, int(len(rows) * fraction))
    held: list[LabelRow] = []
    for key in keys:
        if len(held) >= want or len(held) + len(groups[key]) >= len(rows):
            break
        held += groups[key]
    kept = {id(r) for r in held}
    return held, [r for r in rows if id(r) not in kept]


def _shared_rows(train: list[LabelRow], held: list[LabelRow]) -> int:
    """How many held-out rows name an image (and box) that a training row names too."""
    seen = {(os.path.realpath(r.image), r.box) for r in train}
    return sum((os.path.realpath(r.image), r.box) in seen for r in held)


def _general_set(n: int, seed: int, dictionary: Dictionary, fonts=None):
    if n <= 0:
        return None
    gen = GeneralText(seed, dictionary=dictionary, fonts=fonts)
    samples = [gen.sample() for _ in range(n)]
    return [c for c, _ in samples], [t for _, t in samples]


def _dictionary_change(saved: str, now: str, add_chars: bool) -> str:
    """Why a checkpoint's dictionary (``saved``) is not this run's (``now``), naming the
    characters where one only adds to the other: a resume given without the ``--add-chars``
    of the stopped run (or with it where that run had none) was refused as "other labels,
    or another --from", which named neither the flag nor the characters (round 42)."""
    old, new = saved.split("\n"), now.split("\n")
    if len(new) > len(old) and new[:len(old)] == old:
        return (f"this run adds {''.join(new[len(old):])!r} to the dictionary "
                "(--add-chars) and the stopped run did not: drop --add-chars to go on")
    if len(old) > len(new) and old[:len(new)] == new and not add_chars:
        return (f"the stopped run added {''.join(old[len(new):])!r} to the dictionary "
                "(--add-chars): give --add-chars again to go on")
    return "its dictionary differs (other labels, or another --from)"
