"""Kind ``train``: ``%train`` / ``%%train`` / ``python -m skiff train`` / the Train form.

``%train MODEL [DATA] [--epochs N | --steps N] [--lr X] [--batch-size B] [--device DEV]
[--strategy S] [--recompute] [--checkpoint-dir DIR] [--resume] [--eval FILE [--eval-every N]]
[--np N] [--wait] [-o NAME]``.
MODEL is a built-in model name (or, in a notebook, a variable holding a model); DATA is a
built-in data set, a text file, or (in a notebook) a variable or a tuple expression like
``(X, y)``; left out, a built-in model trains on its own data. ``%%train [options]`` runs the
cell, which defines ``model`` and ``dataset`` (optionally ``val_dataset``, ``optimizer``,
``loss``), as the job: on a thread it sees the notebook's variables; on ``--np N`` ranks its
source runs on every rank. When the job ends the trained model is in the notebook:
``job.value.model``, and for ``%%train`` also the variable ``model``. ``--eval FILE``
(a checkpoint's model) evaluates held-out rows during training and reports ``eval_loss``,
``eval_perplexity``, ``eval_exact_match``, ``eval_choice_accuracy`` as metrics.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import os
import shlex
import threading

from skiff.grammar.common import (
    cluster_options,
    command,
    device_option,
    did_you_mean,
    fraction,
    launch_options,
    missing_file,
    nonneg_float,
    nonneg_int,
    output_folder,
    positive_float,
    positive_int,
    unknown_name,
    was_given,
)
from skiff.kernels.backend.devices import DEFAULT_DEVICE
from skiff.kernels.train.models.registry import (
    BUILTIN_DATA,
    BUILTIN_MODELS,
    DEFAULT_DATA,
    FROM_CHECKPOINT,
)
from skiff.kernels.train.precision import PRECISIONS, check_precision
from skiff.kernels.train.table_frame import frame_table_file, is_frame
from skiff.kernels.train.trainer_torch_habits import loader_order

from .base import JobRequest, Kind, figure

__all__ = ["COMMAND", "KIND", "STRATEGIES", "to_config", "is_model", "is_dataset",
           "cell_namespace", "run"]

# strategy names known here; the distributed planner accepts more ("dp=2,tp=2,pp=1", ...)
STRATEGIES = ("auto", "single", "dp", "zero1", "zero2", "tp", "pp", "ep")
# a sane bound for --steps and --epochs (a billion optimizer steps is years of training)
MAX_STEPS = 10 ** 9
# what a %%train cell starts with when it runs as processes (user code, like a fresh cell)
CELL_PRELUDE = "import numpy as np\nimport skiff\n"


@command("train", help="Train a model on a data set: a built-in, a text file, or notebook "
                       "variables; %%train runs a cell that defines model and dataset.")
@launch_options
@cluster_options
@device_option
def COMMAND(p):
    p.add_argument("model", nargs="?", default=None, metavar="MODEL",
                   help=f"built-in model ({', '.join(BUILTIN_MODELS)}) or a notebook variable")
    p.add_argument("data", nargs="?", default=None, metavar="DATA",
                   help=f"built-in data ({', '.join(BUILTIN_DATA)}), a text file, a table "
                        "for mlp (.csv, .tsv, .jsonl, .npz), a folder of class folders of "
                        "images for cnn, or a notebook variable; default: the model's own data")
    p.add_argument("--epochs", type=_epochs_arg, default=None, metavar="N",
                   help="passes over the data; a fraction too, e.g. 0.5 or 2.5 "
                        "(transformers' num_train_epochs; ocr-rec: whole passes)")
    p.add_argument("--steps", type=positive_int, default=None, metavar="N",
                   help="optimizer steps (default: 1 epoch when neither is given)")
    p.add_argument("--lr", type=positive_float, default=None, metavar="X",
                   help="peak learning rate (default: the model's own, else 1e-3)")
    p.add_argument("--batch-size", type=positive_int, default=None, metavar="B",
                   help="examples per optimizer step (default: 16 text blocks for a text "
                        "dataset such as gpt-*'s, 16 crops for ocr-rec, else 32 rows or "
                        "images)")
    p.add_argument("--grad-accum", type=positive_int, default=1, metavar="K",
                   help="micro-batches per optimizer step")
    p.add_argument("--weight-decay", type=nonneg_float, default=None, metavar="X",
                   help="AdamW's decoupled weight decay (default 0.01; ocr-rec: 1e-4), on "
                        "every parameter as torch's AdamW (biases and norms too; see "
                        "--no-bias-norm-decay)")
    p.add_argument("--no-bias-norm-decay", action="store_true",
                   help="no weight decay on biases and norm scales (parameters of one axis), "
                        "as transformers' Trainer and nanoGPT leave them out")
    p.add_argument("--clip", type=nonneg_float, default=None, metavar="X",
                   help="clip the gradients' global norm to X (default 1.0; 0: no clipping)")
    p.add_argument("--clip-by", choices=("norm", "value"), default=None,
                   help="--clip bounds the gradients' global norm (default) or each "
                        "gradient element (torch's clip_grad_value_)")
    p.add_argument("--schedule", choices=("cosine", "linear", "constant"), default=None,
                   help="learning rate after the warm-up: cosine down to a tenth of the "
                        "peak (default), a straight line down (transformers' default) or "
                        "constant")
    p.add_argument("--schedule-interval", choices=("step", "epoch"), default=None,
                   help="when a %%%%train cell's own scheduler (schedule = lambda opt: "
                        "skiff.optim.lr_scheduler.StepLR(opt, 30)) steps: after every "
                        "optimizer step (default) or at each epoch's end, as a torch loop's "
                        "scheduler.step() after its epoch (Lightning's interval)")
    p.add_argument("--warmup", type=nonneg_int, default=None, metavar="N",
                   help="linear warm-up steps (default: the trainer's, a share of the run)")
    p.add_argument("--strategy", default="auto", metavar="S",
                   help="auto (the planner decides), single, dp, zero1, zero2, tp, pp, ep, "
                        "or a layout like dp=2,tp=1,pp=1")
    p.add_argument("--device-memory", default=None, metavar="SIZE",
                   help="memory a device may use, e.g. 40GB or 16GiB (as %%plan "
                        "--device-memory): --strategy auto plans as for devices of that size "
                        "(ZeRO when Adam's state does not fit); --dry-run shows the plan")
    p.add_argument("--checkpoint-dir", default=None, metavar="DIR",
                   help="where checkpoints go (default: the job's run folder)")
    p.add_argument("--checkpoint-every", type=steps_or_epoch, default=None, metavar="N",
                   help="write a checkpoint every N steps, or 'epoch': at each epoch's end "
                        "(and always at the end)")
    p.add_argument("--keep-checkpoints", type=positive_int, default=None, metavar="N",
                   help="how many of the newest checkpoints stay in the folder (default 3; "
                        "transformers' save_total_limit)")
    p.add_argument("--keep-best", nargs="?", const=1, default=None, type=positive_int,
                   metavar="K",
                   help="also keep the checkpoint of the best validation (--monitor's "
                        "metric, val_loss by default) beside the newest --keep-checkpoints, "
                        "or the K best (Lightning's save_top_k); the best is named in the "
                        "summary and the folder's best.json (needs a validation set)")
    p.add_argument("--resume", action="store_true",
                   help="continue from the newest checkpoint in --checkpoint-dir")
    p.add_argument("--precision", choices=PRECISIONS, default="32",
                   help="32 (float32), bf16-mixed or fp16-mixed: 16-bit weights, activations "
                        "and gradients with float32 master weights (fp16: loss scaling)")
    p.add_argument("--recompute", action="store_true",
                   help="activation checkpointing: each block (GPT, ERNIE-4.5) keeps only its "
                        "input and is recomputed in backward, far less memory for ~1/3 more "
                        "compute (default: when the plan chooses it)")
    p.add_argument("--stop-on-divergence", action="store_true",
                   help="stop when the loss runs away (it is always watched, and a warning "
                        "logged)")
    p.add_argument("--val-split", type=fraction, default=None, metavar="F",
                   help="hold out this fraction of the data for a validation loss at each "
                        "epoch's end, or every --eval-every N steps (text and image folders: "
                        "0.1 unless given; tables and arrays: none); ocr-rec: the share of "
                        "--data's crops held out (0.1)")
    p.add_argument("--early-stop", type=positive_int, default=None, metavar="N",
                   help="stop after N validations without a better val_loss (or --monitor's "
                        "metric) and keep the best validation's weights (needs a validation "
                        "set)")
    p.add_argument("--monitor", default=None, metavar="NAME",
                   help="what --early-stop (and --keep-best) watches: val_loss (default), "
                        "val_accuracy, val_f1 (macro), val_balanced_accuracy, or another "
                        "validation metric")
    p.add_argument("--mode", choices=("auto", "min", "max"), default=None,
                   help="whether --monitor's metric is better smaller or larger (auto: larger "
                        "for accuracies, F1 and scores)")
    p.add_argument("--image-size", type=positive_int, default=None, metavar="N",
                   help="cnn on a folder of class folders of images: the side images are "
                        "cut and resized to (a multiple of 4; default 32)")
    p.add_argument("--augment", action="store_true",
                   help="cnn on a folder of images: mirror and shift the training images at "
                        "random (not for pictures whose left and right differ in meaning, "
                        "such as text or digits)")
    p.add_argument("--seed", type=nonneg_int, default=0, metavar="N",
                   help="seed of the job's random numbers (an integer >= 0)")
    p.add_argument("--block-size", type=positive_int, default=None, metavar="T",
                   help="context length for text data (default: the model's)")
    p.add_argument("--from", dest="from_dir", default=None, metavar="DIR",
                   help="checkpoint folder (Hugging Face layout) of a model loaded from one: "
                        f"{', '.join(FROM_CHECKPOINT)}; ocr-rec: the recognizer to start from "
                        "(default ch-v6; ch-v4, ch-tiny, an .onnx file, a set an earlier "
                        "fine-tune made with --register, or a fine-tune's folder)")
    p.add_argument("--data", dest="data_opt", default=None, metavar="DATA",
                   help="the same as DATA")
    p.add_argument("--lora-r", type=positive_int, default=None, metavar="R",
                   help="fine-tune LoRA adapters of rank R (the base frozen) instead of all "
                        "weights")
    p.add_argument("--lora-alpha", type=positive_float, default=None, metavar="A",
                   help="LoRA scale numerator (default 2 R)")
    p.add_argument("--lora-targets", default="q_proj,v_proj", metavar="NAMES",
                   help="comma-separated linear layers to adapt, or all-linear (default "
                        "q_proj,v_proj: a checkpoint's; the gpt-* built-ins' are c_attn, "
                        "c_proj, c_fc; on an MoE ERNIE-4.5, gate_proj,up_proj,down_proj "
                        "are the routed experts, gate+up at rank 2R, gate the router, and "
                        "all-linear the attention, experts and router, as peft reads them)")
    p.add_argument("--lora-dora", action="store_true",
                   help="LoRA as DoRA (peft's use_dora: a trained magnitude per output row)")
    p.add_argument("--lora-rslora", action="store_true",
                   help="rank-stabilised LoRA scaling alpha / sqrt(R) (peft's use_rslora)")
    p.add_argument("--lora-modules-to-save", default=None, metavar="NAMES",
                   help="comma-separated modules trained whole and saved with the adapter "
                        "(peft's modules_to_save, e.g. lm_head)")
    p.add_argument("--target", default=None, metavar="COLUMN",
                   help="a table file's column to predict, by name or number (default: one "
                        "named label, target, y or class, else a lone column of words, else "
                        "the last)")
    p.add_argument("--drop", default=None, metavar="COLUMNS",
                   help="a table file's columns to leave out, by name or number, comma-"
                        "separated (a passenger's name, a ticket number, an identifier)")
    p.add_argument("--text", default=None, metavar="COLUMNS",
                   help="a table file's columns of sentences, comma-separated, each read as a "
                        "bag of words (one feature per word, its count), e.g. a review to "
                        "classify")
    p.add_argument("--ngrams", type=int, default=None, metavar="N",
                   help="with --text: runs of up to N words are features too (2: words and "
                        "word pairs, as scikit-learn's ngram_range=(1, 2))")
    p.add_argument("--tfidf", action="store_true",
                   help="with --text: each count times the word's inverse document "
                        "frequency, each row scaled to length 1 (scikit-learn's "
                        "TfidfVectorizer)")
    p.add_argument("--class-weight", type=_class_weight_arg, default=None,
                   metavar="balanced|CLASS=W,...",
                   help="a classifier's loss counts rare classes more, as scikit-learn's "
                        "class_weight: balanced (n_rows / (n_classes * a class's rows)) or "
                        "weights by class name, e.g. cat=3,dog=1 (a class left out: 1)")
    p.add_argument("--eval", dest="eval", default=None, metavar="FILE",
                   help="held-out JSONL ({\"messages\": [...]} or {\"text\": ...} rows; an "
                        "\"answer\" adds exact match, \"choices\" multiple choice) evaluated "
                        "during training: eval_loss (eval_nll for an MoE with the router's "
                        "balancing loss), eval_perplexity, ... as metrics")
    p.add_argument("--eval-every", type=positive_int, default=None, metavar="N",
                   help="evaluate --eval, and validate --val-split's share, every N steps "
                        "(default: --eval before and after training, the share at each "
                        "epoch's end)")
    _ocr_rec_arguments(p)


OCR_REC = "ocr-rec"  # %train ocr-rec: fine-tune a shipped OCR recognizer (kernels/ocr_train)


def _epochs_arg(text: str):
    """``--epochs``: a positive number of passes, a fraction too (transformers'
    ``num_train_epochs=0.5``; the Trainer trains ``ceil(epochs x steps an epoch)`` steps, as
    transformers does); an int when whole. It took whole numbers only: ``--epochs 0.5``
    exited 2."""
    value = positive_float(text)
    return int(value) if float(value).is_integer() else value


def _class_weight_arg(text: str):
    """``--class-weight``'s value, checked as the grammar reads it (a usage error)."""
    import argparse

    from .class_weight import class_weight_text

    try:
        return class_weight_text(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ocr_rec_arguments(p):
    g = p.add_argument_group("ocr-rec (fine-tune an OCR recognizer on labelled crops)")
    g.add_argument("--add-chars", action="store_true",
                   help="ocr-rec: add label characters missing from the dictionary")
    g.add_argument("--mix", type=float, default=None, metavar="X",
                   help="ocr-rec: share of each batch that is rendered general text (0.25)")
    g.add_argument("--freeze", type=float, default=None, metavar="F",
                   help="ocr-rec: share of the weights, from the input on, kept fixed (0.5, "
                        "with --lr 2e-4: keeps what the model knew; 0 adapts further and "
                        "forgets more)")
    g.add_argument("--val", default=None, metavar="LABELS",
                   help="ocr-rec: held-out label file (default: --val-split of --data, "
                        "10%%)")
    g.add_argument("--out", default=None, metavar="DIR",
                   help="ocr-rec: folder for rec.onnx and rec_dict.txt (default: run folder)")
    g.add_argument("--register", default=None, metavar="SET",
                   help="ocr-rec: register the result as OCR model set SET (%%ocr --lang SET)")
    g.add_argument("--upright", choices=("auto", "yes", "no"), default=None,
                   help="ocr-rec: whether the exported recognizer says its crops come "
                        "upright, so %%ocr skips the direction model for it (auto, the "
                        "default: when its held-out crops read better without that model)")
    g.add_argument("--freeze-head", action="store_true", default=None,
                   help="ocr-rec: keep the classifier (the last layer) fixed")
    g.add_argument("--train-from", default=None, metavar="WEIGHT",
                   help="ocr-rec: train from this weight on (its name in the .onnx file, "
                        "e.g. conv2d_117.w_0); the weights before it stay fixed (in place "
                        "of --freeze)")
    g.add_argument("--general-fonts", default=None, metavar="F1,F2",
                   help="ocr-rec: font files the rendered general lines are drawn in "
                        "(default: the OCR test set's; keeps an evaluation set's faces out)")
    g.add_argument("--general-eval", type=int, default=None, metavar="N",
                   help="ocr-rec: rendered general lines read before and after, to measure "
                        "what the model forgets (100; 0: not measured, the faster run)")
    g.add_argument("--pull", type=float, default=None, metavar="SHARE",
                   help="ocr-rec: keep the weights SHARE of the way from the base to the "
                        "tuned ones (WiSE-FT; default: 1, or where the run forgets general "
                        "text by more than half a point the best of 0.7 and 0.5; 1: never)")


_OCR_REC_ONLY = ("add_chars", "mix", "freeze", "val", "out", "register", "upright",
                 "freeze_head", "train_from", "general_fonts", "general_eval", "pull")


def _refuse_ocr_rec_options(values: dict, model) -> None:
    """The ocr-rec options given to another model: refused (they were dropped without a
    word, `train mlp --register set` registered nothing), even typed at their default."""
    for name in _OCR_REC_ONLY:
        if was_given(values, name):
            what = repr(model) if model is not None else "a %%train cell"
            raise ValueError(f"--{name.replace('_', '-')} is for train ocr-rec (fine-tuning "
                             f"an OCR recognizer), not {what}: drop it")


# the training options ocr-rec does not read (it has its own loop), with their defaults:
# given, they were dropped without a word (`ocr-rec --lora-r 4 --precision bf16-mixed`)
_OCR_REC_UNREAD = {"grad_accum": 1, "strategy": "auto", "precision": "32",
                   "recompute": False, "stop_on_divergence": False,
                   "early_stop": None, "image_size": None, "augment": False,
                   "block_size": None, "lora_r": None, "lora_alpha": None,
                   "lora_targets": "q_proj,v_proj", "lora_dora": False,
                   "lora_rslora": False, "lora_modules_to_save": None, "target": None, "drop": None,
                   "text": None, "ngrams": None, "tfidf": False, "eval": None,
                   "class_weight": None,
                   "clip": None, "schedule": None, "warmup": None, "keep_checkpoints": None,
                   "clip_by": None, "monitor": None, "mode": None, "keep_best": None,
                   "no_bias_norm_decay": False, "schedule_interval": None}


def ocr_rec_config(values: dict) -> dict:
    """The config of ``%train ocr-rec --data LABELS [--from MODEL] ...``."""
    for name, default in _OCR_REC_UNREAD.items():
        if was_given(values, name, default):
            raise ValueError(f"--{name.replace('_', '-')} is not an option of train ocr-rec "
                             "(it fine-tunes an OCR recognizer with its own loop: --epochs, "
                             "--steps, --lr, --batch-size, --weight-decay, --mix, "
                             "--freeze, --freeze-head, --train-from, --general-fonts, "
                             "--general-eval, --pull, --val, "
                             "--val-split, --eval-every, --checkpoint-every, "
                             "--checkpoint-dir, --resume); "
                             "drop it")
    epochs = values.get("epochs")
    if epochs is not None and not float(epochs).is_integer():
        raise ValueError(f"train ocr-rec trains whole passes: --epochs {epochs} is not a "
                         f"whole number (--epochs {max(1, round(epochs))}, or --steps N)")
    labels = values["labels"] = (values.get("data_opt") or values.get("labels")
                                 or values.get("data"))
    if not labels:
        raise ValueError("train ocr-rec needs --data LABELS (a PaddleOCR label file: "
                         "'image<TAB>text' or PPOCRLabel's boxes, or a folder with one)")
    from skiff.kernels.ocr_train.labels import label_files

    files = label_files(os.path.expanduser(labels))   # 'a.txt,b.txt': label_file_list
    for f in files:
        if not os.path.exists(f):
            raise ValueError(f"--data {f!r}: no such file or folder")
    val = values.get("val")
    if val and not os.path.exists(os.path.expanduser(val)):
        raise ValueError(f"--val {val!r}: no such file or folder")
    if val and values.get("val_split") is not None:   # the file is the held-out set
        raise ValueError(f"--val {val} is the held-out set, and --val-split holds out a share "
                         "of --data instead: give one of them")
    mix = values.get("mix")
    if mix is not None and not 0.0 <= mix < 1.0:
        raise ValueError(f"--mix must be in [0, 1), got {mix!r}")
    freeze = values.get("freeze")
    if freeze is not None and not 0.0 <= freeze < 1.0:
        raise ValueError(f"--freeze must be in [0, 1), got {freeze!r}")
    pull = values.get("pull")
    if pull is not None and not 0.0 <= pull <= 1.0:
        raise ValueError(f"--pull must be in [0, 1] (a share of the way from the base to "
                         f"the tuned weights), got {pull!r}")
    if values.get("train_from") and freeze is not None:
        raise ValueError("--train-from names where training starts and --freeze a share of "
                         "the weights: give one of them")
    fonts = [os.path.abspath(os.path.expanduser(f.strip()))
             for f in (values.get("general_fonts") or "").split(",") if f.strip()]
    for f in fonts:
        if not os.path.isfile(f):
            raise ValueError(f"--general-fonts: {f!r}: no such file")
    device = values.get("device", DEFAULT_DEVICE)
    if str(device).startswith("cuda"):
        raise ValueError(f"train ocr-rec runs on the CPU for now; got --device {device!r}")
    output_folder(values.get("out"), "--out")
    output_folder(values.get("checkpoint_dir"), "--checkpoint-dir")
    paths = {k: os.path.abspath(os.path.expanduser(values[k])) if values.get(k) else None
             for k in ("labels", "val", "out", "checkpoint_dir")}
    paths["labels"] = ",".join(os.path.abspath(f) for f in files)
    if values.get("resume") and not (paths["out"] or paths["checkpoint_dir"]):
        # a new job has a new run folder: the stopped run's rec.ckpt is where its model went
        raise ValueError("train ocr-rec --resume needs --out DIR (the stopped fine-tune's "
                         "model folder, where it kept rec.ckpt) or --checkpoint-dir DIR; "
                         "or resume the stopped job itself: jobs resume ID")
    if values.get("checkpoint_every") == "epoch":
        raise ValueError("train ocr-rec takes --checkpoint-every N (steps; 0: never), not "
                         "'epoch'")
    for name in ("checkpoint_every", "eval_every", "general_eval"):
        every = values.get(name)
        if every is not None and int(every) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 0 (0: never), got {every}")
    return {"model": OCR_REC, "data": paths["labels"], **paths,
            "resume": bool(values.get("resume")),
            "checkpoint_every": values.get("checkpoint_every"),
            "eval_every": values.get("eval_every"),
            "base": _base(values.get("from_dir") or values.get("base") or "ch-v6"),
            "add_chars": bool(values.get("add_chars")),
            # --upright yes|no: said, not measured (in the config only when given)
            **({"upright": values["upright"] == "yes"}
               if values.get("upright") in ("yes", "no") else {}),
            **({"freeze_head": True} if values.get("freeze_head") else {}),
            **({"train_from": values["train_from"]} if values.get("train_from") else {}),
            **({"general_fonts": fonts} if fonts else {}),
            # --general-eval N: the forgetting measure's lines (100); in the config when given
            **({"general_eval": int(values["general_eval"])}
               if values.get("general_eval") is not None else {}),
            # --pull SHARE: WiSE-FT's share kept (default: chosen where the run forgets)
            **({"pull": float(pull)} if pull is not None else {}),
            "mix": mix, "freeze": freeze, "val_split": values.get("val_split"),
            "epochs": values.get("epochs"),
            "steps": values.get("steps"),
            "lr": values.get("lr"), "batch_size": values.get("batch_size"),
            # --weight-decay: AdamW's (the fine-tune's default 1e-4); in the config when given
            **({"weight_decay": float(values["weight_decay"])}
               if values.get("weight_decay") is not None else {}),
            "seed": int(values.get("seed", 0)), "device": device, "name": _set_name(values)}


def _base(name: str) -> str:
    """``--from``: a shipped recognizer's name, a set registered by an earlier fine-tune
    (kept by name), an ``.onnx`` file or a fine-tune's folder (made absolute); checked here,
    before a job and its run folder exist."""
    from skiff.kernels.ocr_train.finetune import BASE_MODELS, base_model_path

    if name in BASE_MODELS:
        return name
    path = os.path.abspath(os.path.expanduser(name))
    if name.endswith(".onnx") and not os.path.isfile(path):
        raise ValueError(f"--from {name!r}: no such file")
    if not os.path.exists(path):
        from skiff.kernels.ocr.models import available_model_sets

        if name in available_model_sets():  # registered by an earlier fine-tune
            base_model_path(name)
            return name
        raise unknown_name("recognizer", name, [*BASE_MODELS, *(
            s for s in available_model_sets() if s not in BASE_MODELS.values())],
            " or an .onnx file or a fine-tune's folder (--from)")
    base_model_path(path)  # a folder without one rec.onnx says so here
    return path


def _set_name(values: dict):
    name = values.get("register")
    if name is None:
        return None
    from skiff.kernels.ocr.models import BUILTIN_SETS

    if name in BUILTIN_SETS or not name.replace("-", "").replace("_", "").replace(".", "") \
            .isalnum():
        raise ValueError(f"--register {name!r}: a new model set name (letters, digits, '-', '_', "
                         f"'.'; not {', '.join(BUILTIN_SETS)})")
    return name


# how each built-in model's own layers split over ranks besides dp/ZeRO (checked at launch,
# before the ranks start: the planner inside them would refuse 'tp' on mlp as "tp=2 does not
# divide the 1 attention heads")
SPLIT_DIMS = {"mlp": (), "cnn": (), "gpt-mini": ("tp", "pp"), "gpt-small": ("tp", "pp"),
              "gpt-moe": ("ep",)}


# validation -----------------------------------------------------------------------------------
def _check_strategy(spec: str) -> str:
    from skiff.kernels.train.plan.planner import strategy_name

    spec = strategy_name(str(spec).strip())  # ddp -> dp; fsdp: what comes closest
    if spec in STRATEGIES:
        return spec
    if "=" in spec:  # a layout like dp=2,tp=2,pp=1: the planner validates it
        parts = [x.partition("=") for x in spec.split(",")]
        if all(k.strip() and v.strip() for k, _, v in parts):
            return spec
    raise unknown_name("strategy", spec, STRATEGIES, " or a layout like dp=2,tp=1,pp=1")


def check_model_name(name: str) -> str:
    if name not in BUILTIN_MODELS:
        raise unknown_name("model", name, BUILTIN_MODELS,
                           " (or, in a notebook, a variable holding a model)")
    return name


def check_data_name(name: str) -> str:
    if name in BUILTIN_DATA:
        return name
    path = os.path.expanduser(name)
    if os.path.isfile(path):
        return os.path.abspath(path)
    if os.path.isdir(path):
        from skiff.kernels.train.image_folder import is_image_folder

        images = (f"; a folder of class folders of images trains cnn: train cnn {name}"
                  if is_image_folder(path) else "")
        raise ValueError(f"data {name!r} is a folder: give a text file, a table (.csv, .tsv, "
                         f".npz) or one of {', '.join(BUILTIN_DATA)}{images}")
    if os.sep in name or os.path.splitext(name)[1]:  # meant as a file: say it is not there
        raise missing_file(name, "folder" if name.endswith(os.sep) else "data file")
    raise unknown_name("data", name, BUILTIN_DATA, " (or a text file)")


def _reads_text(model) -> bool:
    """Whether built-in ``model`` trains on text (a GPT preset or a checkpoint's model);
    True for anything else (a notebook's model: its own business)."""
    return (model not in BUILTIN_MODELS or model in FROM_CHECKPOINT
            or DEFAULT_DATA.get(model) in TEXT_DATA)


def _check_text_length(model: str, data: str, block_size) -> None:
    """A text file shorter than one training sequence of a GPT preset is said at launch (the
    job failed at once: "text of 8 bytes is shorter than block_size + 1")."""
    from skiff.kernels.train.models.gpt import PRESETS

    if model not in PRESETS or not os.path.isfile(data) or data.lower().endswith(
            (".csv", ".tsv", ".npz")):
        return
    block = int(block_size or PRESETS[model].block_size)
    size = os.path.getsize(data)
    if size < block + 1:
        fit = f" or --block-size {size - 1} at most" if size > 2 else ""
        raise ValueError(f"{os.path.basename(data)} holds {size} bytes; one training sequence "
                         f"of {model} takes {block + 1} (--block-size {block} + 1): give "
                         f"more text{fit}")


# byte-level text: what the GPT models train on (a text file too); mlp and cnn take only theirs
TEXT_DATA = ("classics", "sonnets", "prose")


def check_pair(model: str, data: str) -> None:
    """A built-in model with data it can train on (checked here, before any run folder)."""
    default = DEFAULT_DATA[model]
    if default in TEXT_DATA:
        if data in BUILTIN_DATA and data not in TEXT_DATA:
            raise ValueError(f"model {model!r} trains on text ({', '.join(TEXT_DATA)} or a text "
                             f"file), got data {data!r}")
    elif data != default and not (model == "mlp" and _is_table(data)) and not (
            model == "cnn" and os.path.isdir(str(data))):
        more = {"mlp": " or a table file (.csv, .tsv, .jsonl, .npz)",
                "cnn": " or a folder of class folders of images"}.get(model, "")
        # a JSON-lines, Parquet or Excel table: how to train on it (round 45 h11)
        from skiff.kernels.train.tables import other_table_hint

        hint = other_table_hint(data) if model == "mlp" else ""
        raise ValueError(f"model {model!r} trains on {default!r}{more} (or, in a notebook, "
                         f"arrays of your own), got data {data!r}{hint}")


def _check_image_folder(data: str) -> str:
    """A folder for ``cnn``: it must hold class folders of images (said before any job)."""
    from skiff.kernels.train.image_folder import is_image_folder

    path = os.path.abspath(os.path.expanduser(data))
    if not is_image_folder(path):
        raise ValueError(f"data {data!r} is a folder without class folders of images: cnn "
                         f"trains on a folder like photos/cat/1.jpg, photos/dog/2.png (one "
                         f"subfolder per class)")
    return path


def _is_table(data: str, model: str = "mlp") -> bool:
    """A table file for ``model``: a JSON-lines file is ``mlp``'s table (round 47 h9), and
    a text model's rows (prompts and completions) for the others."""
    from skiff.kernels.train.tables import is_table

    return is_table(data) and (model == "mlp" or not _json_lines(data))


def _json_lines(data) -> bool:
    return str(data).lower().endswith((".jsonl", ".ndjson"))


def _fits(model: str, data: str) -> bool:
    try:
        check_pair(model, data)
    except ValueError:
        return False
    return True


def check_from(model, path) -> str | None:
    """``--from DIR``: a checkpoint folder, needed by (and only by) the FROM_CHECKPOINT models."""
    if path is None:
        if model in FROM_CHECKPOINT:
            raise ValueError(f"model {model!r} is loaded from a checkpoint: give --from DIR "
                             "(a folder with config.json and *.safetensors)")
        return None
    if model not in FROM_CHECKPOINT:
        raise ValueError(f"--from DIR is for models loaded from a checkpoint "
                         f"({', '.join(FROM_CHECKPOINT)}), not {model!r}")
    folder = os.path.abspath(os.path.expanduser(path))
    from skiff.kernels.train.models.hf_checkpoint import adapter_base, read_config

    if not os.path.isfile(os.path.join(folder, "config.json")):
        if os.path.isfile(os.path.join(folder, "adapter_config.json")):
            # a peft adapter folder: its base (base_model_name_or_path) with the adapter on
            # it, as chat/generate load one; the base must be a checkpoint folder here
            adapter_base(folder)
            return folder
        raise ValueError(f"--from {path!r} is not a checkpoint folder (no config.json there, "
                         "nor the adapter_config.json of a LoRA adapter)")
    read_config(folder)  # another architecture: said here, before a run folder exists
    return folder


def _check_moe_pp(from_dir, strategy, ranks) -> None:
    """``--strategy pp`` (or a layout with pp > 1) on an ERNIE-4.5 MoE checkpoint whose
    config.json trains the load-balancing loss: refused before a run folder and the ranks
    (round 44 h18: each rank refused it saying the model was neither a GPT nor an ERNIE-4.5
    model). The planner refuses a live model the same way."""
    from skiff.kernels.train.plan.planner import moe_pp_refusal, parse_strategy

    path = os.path.join(os.path.expanduser(str(from_dir)), "config.json")
    try:
        choice = parse_strategy(str(strategy), int(ranks))
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, ValueError, TypeError):  # a bad strategy or folder: said where it was
        return
    why = choice is not None and isinstance(cfg, dict) and moe_pp_refusal(cfg, choice.pp,
                                                                         strategy)
    if why:
        raise ValueError(why)


def to_config(values: dict) -> dict:
    """Validate parsed values and return the ``train`` kernel config.

    ``values["source"]`` (a ``%%train`` cell) replaces MODEL and DATA; otherwise MODEL must
    be a built-in name here (notebook objects go through :meth:`TrainKind.prepare`).
    """
    source = values.get("source")
    model = values.get("model")
    data = values.get("data")
    if model == OCR_REC and source is None:
        return ocr_rec_config(values)
    _refuse_ocr_rec_options(values, model)
    if values.get("data_opt") is not None:
        if data is not None:
            raise ValueError(f"DATA given twice: {data!r} and --data {values['data_opt']!r}")
        data = values["data_opt"]
    if source is None:
        if model is None:
            raise ValueError(f"train needs a MODEL: one of {', '.join(BUILTIN_MODELS)}")
        check_model_name(model)
        if model == "cnn" and data is not None and os.path.isdir(os.path.expanduser(data)):
            data = _check_image_folder(data)
        else:
            data = check_data_name(data) if data is not None else DEFAULT_DATA[model]
        check_pair(model, data)
    elif model is not None or data is not None:
        words = " ".join(str(w) for w in (model, data) if w is not None)
        line = f"%train {model or 'MODEL'} {data if data is not None else 'DATA'}"
        raise ValueError(f"%%train takes its model and data from the cell, not the line (got "
                         f"{words!r}): use {line} (one line, no cell), or a %%train cell "
                         f"that sets model = ... and dataset = ...")
    size = values.get("image_size")
    folder = model == "cnn" and data is not None and os.path.isdir(str(data))
    if size is not None and not folder:
        raise ValueError("--image-size is for cnn on a folder of class folders of images")
    if values.get("augment") and not folder:
        raise ValueError("--augment is for cnn on a folder of class folders of images")
    if size is not None and not (8 <= size <= 512 and size % 4 == 0):
        raise ValueError(f"--image-size must be a multiple of 4 from 8 to 512, got {size}")
    epochs, steps = values.get("epochs"), values.get("steps")
    for name, value in (("steps", steps), ("epochs", epochs)):
        if value is not None and not (0 < value <= MAX_STEPS and (name == "epochs"
                                                                 or value >= 1)):
            raise ValueError(f"--{name} must be from 1 to {MAX_STEPS:,}, got {value!r}")
    if epochs is not None and steps is not None:  # the job failed on it after reading its data
        raise ValueError(f"give --epochs or --steps, not both (got --epochs {epochs} "
                         f"--steps {steps})")
    lr = values.get("lr")
    if lr is not None and not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"--lr must be a positive finite number, got {lr!r}")
    seed = values.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {seed!r}")
    if source is not None:
        _compile_cell(source)
    _check_schedule_interval(values.get("schedule_interval"), source)
    if source is None and model in FROM_CHECKPOINT and data is not None:
        _check_training_rows(data, values.get("val_split"),
                             values.get("from_dir", values.get("from")))
    from_dir = values.get("from_dir", values.get("from"))
    if source is None and from_dir is not None and values.get("lora_r") is not None and \
            os.path.isfile(os.path.join(os.path.expanduser(str(from_dir)),
                                        "adapter_config.json")) and \
            not os.path.isfile(os.path.join(os.path.expanduser(str(from_dir)), "config.json")):
        raise ValueError(f"--from {from_dir!r} is a LoRA adapter: training goes on with its "
                         "own adapters (their rank and layers); leave --lora-r out, or give "
                         "--from the base checkpoint folder for new adapters")
    if values.get("resume") and not values.get("checkpoint_dir"):
        raise ValueError("--resume needs --checkpoint-dir DIR (where the checkpoints are)")
    output_folder(values.get("checkpoint_dir"), "--checkpoint-dir")
    if values.get("resume") and steps is not None:
        _check_steps_left(str(values["checkpoint_dir"]), steps)
    if source is None and data is not None:
        _check_text_length(model, data, values.get("block_size"))
    if source is None and values.get("block_size") is not None and not _reads_text(model):
        raise ValueError(f"--block-size is the context length of a text model (gpt-*, "
                         f"{', '.join(FROM_CHECKPOINT)}); {model!r} reads no text: drop it")
    target = _check_target(values.get("target"), data if source is None else None)
    drop = _check_drop(values.get("drop"), data if source is None else None, target)
    text = _check_text(values.get("text"), data if source is None else None, target)
    text_as = _check_text_as(values.get("ngrams"), values.get("tfidf"), text)
    class_weight = _check_class_weight(values.get("class_weight"), model, source,
                                       bool(values.get("_objects")))
    if class_weight is not None and source is None:  # a table's regression: said now
        from .class_weight_table import refuse_on_regression

        refuse_on_regression(data, target, drop)
    return {
        "class_weight": class_weight,
        "target": target,
        "drop": drop,
        **({"text": text} if text else {}),
        **text_as,
        "model": model,
        "data": data,
        "source": source,
        "epochs": epochs,
        "steps": steps,
        "lr": values.get("lr"),
        "batch_size": values.get("batch_size"),
        "grad_accum": values.get("grad_accum", 1),
        # the optimizer's and schedule's settings: in the config only when given (the
        # trainer's defaults otherwise; configs of jobs before round 34 read the same)
        **{key: values[name] for name, key in (("weight_decay", "weight_decay"),
                                               ("clip", "clip"), ("schedule", "schedule"),
                                               ("warmup", "warmup_steps"),
                                               ("keep_checkpoints", "keep_checkpoints"),
                                               ("clip_by", "clip_by"), ("monitor", "monitor"),
                                               ("mode", "mode"),
                                               ("schedule_interval", "schedule_interval"))
           if values.get(name) is not None},
        "device": values.get("device", DEFAULT_DEVICE),
        "strategy": _check_strategy(values.get("strategy", "auto")),
        # absolute: `jobs resume` runs from another folder (the job itself from its run folder)
        "checkpoint_dir": (os.path.abspath(os.path.expanduser(str(values["checkpoint_dir"])))
                           if values.get("checkpoint_dir") else None),
        "checkpoint_every": values.get("checkpoint_every"),
        # --no-bias-norm-decay: in the config only when given (round 44 h5)
        **({"decay_bias_norm": False} if values.get("no_bias_norm_decay") else {}),
        # --keep-best: in the config only when given (round 41)
        # --keep-best K: the K best (round 41 h9; the flag alone: 1)
        **({"keep_best": int(values["keep_best"])} if values.get("keep_best") else {}),
        "resume": bool(values.get("resume", False)),
        "seed": int(values.get("seed", 0)),
        "stop_on_divergence": bool(values.get("stop_on_divergence", False)),
        **_validation(values, model, data, source),
        "recompute": bool(values.get("recompute", False)),
        "precision": check_precision(values.get("precision", "32")),
        "block_size": values.get("block_size"),
        "image_size": values.get("image_size"),
        "augment": bool(values.get("augment", False)),
        "from": check_from(model, values.get("from_dir", values.get("from")))
        if source is None else None,
        "lora": _lora(values),
        **_eval(values, model if source is None else None),
        **_device_memory(values.get("device_memory")),
    }


def _device_memory(text) -> dict:
    """``--device-memory SIZE`` as bytes in the config (nothing when not given)."""
    if text is None:
        return {}
    from skiff.kernels.train.resolve import memory_limit

    try:
        return {"device_memory": memory_limit(text)}
    except ValueError:
        raise ValueError(f"--device-memory {text!r} is no memory size: give e.g. 40GB, "
                         "16GiB or a number of bytes") from None


@functools.lru_cache(maxsize=32)  # a kind's option probes prepare it once per option
def _check_lora_targets(model: str, lora_json: str) -> None:
    """``--lora-r`` on a built-in model: its adapters put on a throwaway model of the same
    layers (mlp, cnn: a millisecond; gpt-small: 0.3 s), as the job will. The default
    targets (q_proj,v_proj: a checkpoint's names) are in no built-in model: every
    ``train gpt-mini --lora-r 4`` started, failed after launch ("name no linear layer of
    this model", exit 1) and named no layer to give instead; now a usage error naming them."""
    from skiff.kernels.train import models
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.models.lora import apply_job_lora

    lora = json.loads(lora_json)
    with train_random.using(train_random.new_generator(0)):  # the session's draws untouched
        built = models.get(model)
    try:
        apply_job_lora(built, lora)
    except ValueError as exc:
        typed = ",".join(lora["targets"]) if isinstance(lora["targets"], list) \
            else str(lora["targets"])
        names = _adaptable_layers(built, lora)
        why = "" if "name no linear layer" in str(exc) else f" ({exc})"
        raise ValueError(f"--lora-targets {typed} names no linear layer of {model}{why}: its "
                         f"linear layers are {', '.join(names) or 'none'}; give --lora-targets "
                         f"{names[0] if names else 'NAMES'} (or all-linear: each of them)"
                         ) from None


def _adaptable_layers(model, lora: dict) -> list[str]:
    """The layer names ``--lora-targets`` takes for ``model`` (each Linear LoRA adapts under
    all-linear: a name, or its dotted path where the name is a number)."""
    from skiff.kernels.train.models.lora import apply_job_lora, lora_modules

    try:
        apply_job_lora(model, {**lora, "targets": "all-linear"})
    except ValueError:
        return []
    names: list[str] = []
    for full, _ in lora_modules(model):
        last = full.rsplit(".", 1)[-1]
        shown = last if last.isidentifier() else full
        if shown not in names:
            names.append(shown)
    return names


def steps_or_epoch(text: str):
    """``--checkpoint-every``: a positive number of steps, or ``epoch`` (each epoch's end)."""
    if str(text).strip().lower() == "epoch":
        return "epoch"
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError as exc:
        if "too large" in str(exc):
            raise
        raise argparse.ArgumentTypeError(f"expected a positive integer (steps) or 'epoch', "
                                         f"got {text!r}") from None


def _validation(values: dict, model, data, source) -> dict:
    """``--val-split`` and ``--early-stop``: early stopping needs a validation set, which text
    and image folders have by default, and the built-in arrays (blobs, shapes), a table or an
    array file only with ``--val-split``."""
    split, patience = values.get("val_split"), values.get("early_stop")
    if patience is None and not values.get("keep_best") and (
            values.get("monitor") is not None or values.get("mode") is not None):
        raise ValueError("--monitor and --mode say what --early-stop (or --keep-best) watches: "
                         "add --early-stop N (the validations to wait for a better one)")
    if values.get("keep_best") and split is None and data is not None and source is None \
            and (values.get("_objects") or data in ARRAY_DATA or _is_table(str(data), model)):
        raise ValueError(f"--keep-best keeps the best validation's checkpoint, and DATA "
                         f"{values.get('_notebook_data') or data!r} holds none out: add "
                         "--val-split 0.1 (a tenth held out)")
    if source is not None or data is None:
        return {"val_split": split, "early_stopping": patience}
    if values.get("_objects"):  # a notebook model or data: nothing held out but a split
        if patience is not None and split is None:
            name = values.get("_notebook_data") or data
            raise ValueError(f"--early-stop watches a validation loss, and DATA {name!r} "
                             f"holds none out: add --val-split 0.1 (a tenth held out)")
        return {"val_split": split, "early_stopping": patience}
    if data in ARRAY_DATA and patience is not None and split is None:
        raise ValueError(f"--early-stop watches a validation loss, and the built-in data "
                         f"{data!r} holds none out: add --val-split 0.1 (a tenth held out)")
    if patience is not None and split is None and _is_table(str(data), model):
        raise ValueError(f"--early-stop watches a validation loss, and DATA {data!r} holds "
                         f"none out: add --val-split 0.1 (a tenth held out)")
    return {"val_split": split, "early_stopping": patience}


# built-in data sets of arrays: no validation set unless --val-split holds one out
ARRAY_DATA = ("blobs", "shapes")


def _check_schedule_interval(interval, source) -> None:
    """``--schedule-interval epoch`` (round 46 h7) steps a scheduler of the ``%%train``
    cell's own once an epoch; --schedule's named schedules are planned in optimizer steps
    (the Trainer refuses them so): said before any run folder, as the grammar's other
    checks."""
    if interval in (None, "step"):
        return
    if interval != "epoch":
        raise ValueError(f"--schedule-interval is step or epoch, got {interval!r}")
    import ast

    binds = False
    if source is not None:
        try:
            tree = ast.parse(source, "<%%train cell>")
            binds = "schedule" in _bound_names(tree) or _binds_unseen(tree)
        except SyntaxError:
            binds = True  # said by _compile_cell
    if not binds:
        raise ValueError("--schedule-interval epoch steps a %%train cell's own scheduler at "
                         "each epoch's end (schedule = lambda opt: "
                         "skiff.optim.lr_scheduler.StepLR(opt, 30) in the cell); --schedule "
                         "cosine, linear and constant are planned in optimizer steps: leave "
                         "--schedule-interval step")


def _compile_cell(source: str) -> None:
    """A ``%%train`` cell that is not Python is said now, naming its line, before any run
    folder (the job used to start and fail); so is one that never binds ``model`` or
    ``dataset`` (round 39: the job started, failed at once and left its folder)."""
    import ast

    try:
        tree = ast.parse(source, "<%%train cell>")
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "the cell"
        text = (exc.text or "").strip()
        raise ValueError(f"%%train cell, {where}: {exc.msg}" + (f": {text}" if text else "")
                         ) from None
    missing = [n for n in ("model", "dataset") if n not in _bound_names(tree)]
    if missing and not _binds_unseen(tree):
        raise ValueError(f"the %%train cell must define model and dataset; missing: "
                         f"{', '.join(missing)} (e.g. model = skiff.nn.Linear(4, 1); "
                         f"dataset = (X, y))")


def _bound_names(tree) -> set:
    """Names a cell binds anywhere at its top level or in its blocks: assignments (tuples,
    walrus, augmented), for/with targets, imports, defs and classes."""
    import ast

    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _binds_unseen(tree) -> bool:
    """Whether a cell may bind names no parse can see (``from m import *``, ``exec``,
    ``globals()``): the job's own check then decides."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("exec", "globals", "vars", "locals"):
            return True
    return False


def _check_training_rows(data: str, val_split=None, from_dir=None) -> None:
    """A checkpoint model's training file read and checked now (its format, its rows, a
    --val-split its conversations cannot hold out, a row the --from checkpoint's chat
    template cannot render), so that a file skiff does not read is a mistake before any run
    folder, not a failed job."""
    from skiff.kernels.train.models.hf_checkpoint import check_val_split, read_training_rows

    check_val_split(*read_training_rows(data, template_from=from_dir), val_split)


def _newest_step(where: str) -> int | None:
    """The step of the newest checkpoint in ``where``: a one-file ``step-N.npz`` or the
    ``step-N/`` folder (with its manifest) of a job on several ranks (None: none there).
    The folders were not looked at: a cancelled ``--np 2`` job's summary said "nothing
    left to go on from, its checkpoints ... are gone" beside its step-00000167/."""
    from skiff.kernels.train.checkpoint import list_checkpoints
    from skiff.kernels.train.parallel.checkpoint import list_sharded

    folder = os.path.expanduser(str(where))
    found = [int(p.name.split("-")[1].split(".")[0])
             for p in (list_checkpoints(folder) + list_sharded(folder))]
    return max(found) if found else None


def _check_steps_left(where: str, steps: int) -> None:
    """``--resume --steps N`` whose newest checkpoint is at step N or past it: nothing to
    train, said now (the job read its data and checkpoint, trained nothing, wrote the same
    checkpoint, loss plot and result again; a 200,000-step one took 24 s)."""
    at = _newest_step(where)
    if at is None:
        return  # none yet: it starts from step 0, as its summary says
    if at >= steps:
        raise ValueError(f"--resume: the newest checkpoint in {where} is at step {at:,}, which "
                         f"already reaches --steps {steps:,}: nothing to train; --steps counts "
                         f"from step 0: give --steps {min(at + steps, MAX_STEPS):,} for "
                         f"{min(steps, MAX_STEPS - at):,} more")


def _check_class_weight(spec, model, source, objects: bool):
    """``--class-weight``: for a classifier (mlp on a table or arrays, cnn on images, a
    ``%%train`` cell), not a text model; a table's classes and the names are checked in the
    job, where its rows are read (skiff.kinds.class_weight)."""
    if spec is None:
        return None
    from .class_weight import class_weight_text

    spec = class_weight_text(spec)  # a panel's or a resumed job's value: checked again
    if source is None and not objects and model in BUILTIN_MODELS and _reads_text(model):
        raise ValueError(f"--class-weight weighs the classes of a classifier (mlp on a table "
                         f"or (X, y), cnn on a folder of images); {model!r} predicts text: "
                         "drop it")
    return spec


def _check_target(target, data) -> str | None:
    """``--target COLUMN``: only for a .csv/.tsv table, and a column it has (said now, before
    any run folder, with the columns it does have)."""
    if target is None:
        return None
    from skiff.kernels.train.tables import TableError, pick_target, table_columns

    if data is None or not _is_table(str(data)) or str(data).lower().endswith(".npz"):
        raise ValueError(f"--target picks the column to predict of a .csv or .tsv table file; "
                         f"DATA is {data!r}")
    try:
        path = os.path.expanduser(str(data))
        pick_target(path, table_columns(path), target)
    except TableError as exc:
        raise ValueError(f"--target: {exc}") from None
    return str(target)


def _table_columns_named(option, value, data, target, *, refused, target_said):
    """The columns ``--text`` / ``--drop`` name: each a column of the .csv/.tsv(/.jsonl)
    table DATA, not the target (said now, before any run folder, as the table reader will
    say it). Returns the table's columns, the names as given and the columns they pick."""
    from skiff.kernels.train.tables import TableError, pick_target, table_columns

    if data is None or not _is_table(str(data)) or str(data).lower().endswith(".npz"):
        raise ValueError(f"{refused}; DATA is {data!r}")
    path = os.path.expanduser(str(data))
    columns = table_columns(path)
    names = [d.strip() for d in str(value).split(",") if d.strip()]
    try:
        picked = {pick_target(path, columns, name) for name in names}
        if target is not None and pick_target(path, columns, target) in picked:
            raise ValueError(target_said.format(target=repr(target)))
    except TableError as exc:
        raise ValueError(f"{option}: {exc}") from None
    return columns, names, picked


def _check_text(text, data, target) -> str | None:
    """``--text COLUMNS``: only for a .csv/.tsv/.jsonl table, each a column it has, not the
    target."""
    if not text:
        return None
    _columns, names, _read = _table_columns_named(
        "--text", text, data, target,
        refused="--text reads columns of a .csv, .tsv or .jsonl table file as words",
        target_said="--text reads the --target column {target} as words")
    return ",".join(names)


def _check_text_as(ngrams, tfidf, text) -> dict:
    """``--ngrams N`` / ``--tfidf``: how ``--text`` columns become features (round 48 h3)."""
    if ngrams is None and not tfidf:
        return {}
    if not text:
        raise ValueError("--ngrams and --tfidf shape the features of --text columns: name "
                         "them with --text COLUMNS")
    from skiff.kernels.train.tables import TableError, check_text_options

    try:
        check_text_options(1 if ngrams is None else ngrams, bool(tfidf))
    except TableError as exc:
        raise ValueError(f"--ngrams: {exc}") from None
    return {**({"ngrams": ngrams} if ngrams is not None else {}),
            **({"tfidf": True} if tfidf else {})}


def _check_drop(drop, data, target) -> str | None:
    """``--drop COLUMNS``: only for a .csv/.tsv table, each a column it has, not the target."""
    if not drop:
        return None
    columns, names, dropped = _table_columns_named(
        "--drop", drop, data, target,
        refused="--drop leaves columns of a .csv or .tsv table file out",
        target_said="--drop leaves out the --target column {target}")
    if len(dropped) >= len(columns) - 1:
        raise ValueError(f"--drop {drop!r} leaves no feature column of {columns}")
    return ",".join(names)


def _eval(values: dict, model) -> dict:
    """``--eval FILE [--eval-every N]``: the held-out file read and checked now, before any
    run folder (a bad row is one clear error); ``model`` None: a cell's or a notebook's.
    ``--val-split F --eval-every N`` validates the held-out share every N steps (round 38)."""
    path, every = values.get("eval"), values.get("eval_every")
    if path is None:
        if every is not None and values.get("val_split") is not None:
            # the held-out share is validated every N steps (the Trainer's eval_every)
            return {"eval": None, "eval_every": every}
        if every is not None:
            raise ValueError("--eval-every needs --eval FILE (the held-out rows) or "
                             "--val-split F (a share of the data held out)")
        return {"eval": None, "eval_every": None}
    if model is not None and model not in FROM_CHECKPOINT:
        raise ValueError(f"--eval FILE is for models loaded from a checkpoint "
                         f"({', '.join(FROM_CHECKPOINT)}), not {model!r}")
    from skiff.kernels.train.models.evaluate import read_heldout

    try:
        read_heldout(path)
    except ValueError as exc:  # named as the option, so that a form shows it by its field
        msg = str(exc)
        raise ValueError(msg if msg.startswith("--eval") else f"--eval {msg}") from None
    return {"eval": os.path.abspath(os.path.expanduser(str(path))), "eval_every": every}


def _lora(values: dict) -> dict | None:
    """``--lora-r R [--lora-alpha A] [--lora-targets a,b]`` as the config's ``lora`` entry."""
    r = values.get("lora_r")
    if r is None:
        if values.get("lora_alpha") is not None:
            raise ValueError("--lora-alpha needs --lora-r R")
        if was_given(values, "lora_targets", "q_proj,v_proj"):  # dropped without a word
            raise ValueError("--lora-targets needs --lora-r R (the adapters' rank)")
        for name in ("lora_dora", "lora_rslora", "lora_modules_to_save"):
            if was_given(values, name, None if name.endswith("save") else False):
                raise ValueError(f"--{name.replace('_', '-')} needs --lora-r R "
                                 "(the adapters' rank)")
        return None
    targets = [t.strip() for t in str(values.get("lora_targets") or "").split(",") if t.strip()]
    if not targets:
        raise ValueError("--lora-targets needs at least one layer name, e.g. q_proj,v_proj")
    alpha = values.get("lora_alpha")
    lora = {"r": int(r), "alpha": float(alpha if alpha is not None else 2 * r),
            "targets": targets}
    if values.get("lora_dora"):
        lora["dora"] = True
    if values.get("lora_rslora"):
        lora["rslora"] = True
    save = [t.strip() for t in str(values.get("lora_modules_to_save") or "").split(",")
            if t.strip()]
    if save:
        lora["modules_to_save"] = save
    return lora


# notebook objects -----------------------------------------------------------------------------
def is_model(obj) -> bool:
    """A model instance a notebook can train (anything with ``parameters()``, not a class)."""
    return not isinstance(obj, type) and callable(getattr(obj, "parameters", None))


def is_dataset(obj) -> bool:
    """A data set a notebook can train on: it has ``len()`` and items (arrays, tuples of
    arrays, skiff data sets); text, dicts and classes are not."""
    if isinstance(obj, (str, bytes, dict, type)):
        return False
    return hasattr(obj, "__len__") and hasattr(obj, "__getitem__")


def cell_namespace(user_ns: dict | None = None) -> dict:
    """What a ``%%train`` cell starts with: ``skiff`` and ``np`` (as a fresh cell that
    imported them), over the notebook's variables when it runs on a thread."""
    ns: dict = {}
    exec(compile(CELL_PRELUDE, "<%%train prelude>", "exec"), ns)  # noqa: S102
    return {**(user_ns or {}), "skiff": ns["skiff"], "np": ns["np"]}


def run(config: dict, reporter):
    """The runner entry of kind ``train`` (every rank of a process job runs it)."""
    if config.get("model") == OCR_REC:
        from skiff.kernels.ocr_train import entry as ocr_rec

        return ocr_rec.run(config, reporter)
    from skiff.kernels.train import entry

    from .class_weight import weigh_classes

    # SIGTERM and a gone launcher are a cancel for every kind: jobs/worker.py's _Stops
    namespace = cell_namespace() if config.get("source") else None
    parts = entry.build_from_config(config, namespace, reporter)  # entry.run's two steps
    return entry.train_parts(weigh_classes(parts, config, reporter), config, reporter)


class _Loaded:
    """``job.value`` of a process job once done: the trained model and the JSON result."""

    def __init__(self, model, result: dict | None):
        self.model = model
        self.result = result or {}

    def to_json(self):
        return self.result

    def __getattr__(self, name):
        """The result's fields as a thread job's TrainResult has them (``class_metrics``,
        ``final_loss``, ``history``, ...): ``job.value.class_metrics`` reads the same
        whichever runner trained (it was an AttributeError for a process job)."""
        if name.startswith("__"):
            raise AttributeError(name)
        result = self.__dict__.get("result") or {}
        if name in result:
            return result[name]
        if name in _RESULT_FIELDS:  # a field the job did not write (no validation, ...)
            return None
        raise AttributeError(f"the trained job's value has no {name!r}: it has model, "
                             f"result and {', '.join(sorted(result)) or 'nothing else'}")

    def __repr__(self):
        return f"<trained {type(self.model).__name__}: {self.result.get('steps')} steps, " \
               f"final loss {self.result.get('final_loss')}>"


# a TrainResult's fields (skiff.kernels.train.result): None on a process job's value when
# its result.json lacks them, as on a thread job's TrainResult
_RESULT_FIELDS = ("class_metrics", "best_step", "best_val_loss", "stopped", "checkpoint",
                  "best_checkpoint",
                  "notes", "evaluation", "val_history", "history", "weights", "resumed")


def _auto_plan(config: dict, ranks: int) -> str | None:
    """``--strategy auto``: the plan the job's Trainer will make, as its one-line summary,
    for a built-in model (built at its size, a second at most: gpt-small 0.3 s); None for a
    notebook's or a cell's model, a checkpoint's (ERNIE: too big to build twice) or an OCR
    recognizer. ``--device-memory``: the job is pinned to the planned layout, so it runs
    what was shown; a limit no layout fits raises here, before a run folder exists."""
    limit = config.get("device_memory")
    try:
        plan = _job_plan(config, ranks, "auto")
    except ValueError as exc:
        if limit is None:
            return None  # the Trainer says it with the job's own data
        raise ValueError(f"--device-memory: {exc}") from None
    if plan is None:
        return None
    if limit is not None:  # the job runs this layout, whatever its device reports
        c = plan.choice
        config["strategy"] = "single" if plan.strategy == "single" else (
            f"dp={c.dp},tp={c.tp},pp={c.pp},ep={c.ep},zero={c.zero},micro={c.micro_batch}"
            f",recompute={int(c.recompute)}")
        if c.recompute:
            config["recompute"] = True
    return plan.summary


def _job_plan(config: dict, ranks: int, spec: str):
    """The plan of ``spec`` for the job's built-in model (None for any other model; with
    ``--device-memory`` that is an error naming what to do instead)."""
    model, limit = config.get("model"), config.get("device_memory")
    if config.get("source") or model not in BUILTIN_MODELS or model in FROM_CHECKPOINT:
        if limit is not None:
            raise ValueError("--device-memory plans the job of a built-in model; for a "
                             "notebook's, a cell's or a checkpoint's model give it to the "
                             "trainer: skiff.Trainer(model, device_memory=...)")
        return None
    return _plan_for(model, int(ranks), config.get("batch_size"), config.get("block_size"),
                     str(config.get("precision") or "32"),
                     json.dumps(config.get("mlp") or {}, sort_keys=True), limit, spec)


@functools.lru_cache(maxsize=16)
def _plan_for(model: str, ranks: int, batch, block, precision: str, mlp_json: str, limit,
              spec: str = "auto"):
    """The planner's :class:`Plan` for a built-in model as the job's Trainer asks for it
    (the same batch rounding, sequence length, weight and gradient bytes)."""
    from skiff.kernels.train import models
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.plan.planner import resolve
    from skiff.kernels.train.precision import weight_bytes

    with train_random.using(train_random.new_generator(0)):  # the session's draws untouched
        built = models.get(model, **json.loads(mlp_json))
    seq = block or getattr(getattr(built, "config", None), "block_size", None)
    batch = batch or (16 if model.startswith("gpt") else 32)  # entry.train_parts' defaults
    return resolve(spec, built, world_size=ranks, global_batch=-(-batch // ranks) * ranks,
                   seq_len=seq, weight_bytes=weight_bytes(precision), grad_bytes=4,
                   device_memory=limit)


class TrainKind(Kind):
    name = "train"
    command = COMMAND
    entry = "skiff.kinds.train:run"
    kernel_logs_plan = True  # the trainer logs "plan: <summary>" and its reasons

    def to_config(self, values: dict) -> dict:
        return to_config(values)

    def check_launch(self, config: dict, *, ranks: int) -> str | None:
        """An explicit ``--strategy`` must fit the ranks the job gets; ``auto`` on a
        built-in model: the planner's choice, as a line (a dry run's ``plan``)."""
        spec = str(config.get("strategy") or "auto")
        if spec == "auto":
            return _auto_plan(config, ranks)
        from skiff.kernels.train.plan.planner import parse_strategy

        choice = parse_strategy(spec, ranks)   # 'single' on 2 ranks raises here
        if choice is not None and choice.world != ranks:
            raise ValueError(f"--strategy {spec!r} needs dp x tp x pp = {choice.world} ranks "
                             f"and the job has {ranks}: give --np {choice.world}")
        if config.get("from") and not config.get("source"):
            _check_moe_pp(config["from"], spec, ranks)
        if choice is None:
            return None
        if choice.zero and choice.dp == 1:
            raise ValueError(f"--strategy {spec!r} shards the optimizer over data-parallel "
                             f"ranks and the job has {ranks}: give --np 2 or more, or drop "
                             "--strategy (one rank trains on one device)")
        model = config.get("model")
        dims = SPLIT_DIMS.get(model) if not config.get("source") else None
        for dim, size, what in (("tp", choice.tp, "tensor parallel (tp)"),
                                ("pp", choice.pp, "pipeline parallel (pp)"),
                                ("ep", choice.ep, "expert parallel (ep)")):
            if dims is not None and size > 1 and dim not in dims:  # None: in the ranks
                can = ", ".join(["dp", "zero1", "zero2", *dims])
                raise ValueError(f"--strategy {spec!r}: {what} does not apply to {model} "
                                 f"(it splits by {can}): use one of those, or auto")
        if config.get("device_memory") is None:
            return None
        try:  # an explicit layout kept as given, checked against the limit
            return _job_plan(config, ranks, spec).summary
        except ValueError as exc:
            raise ValueError(f"--device-memory: {exc}") from None

    def summary(self, result: dict) -> list[str]:
        if result.get("onnx"):  # ocr-rec: a recognizer exported, and what it reads now
            return _ocr_rec_summary(result)
        line = f"{figure(result.get('steps', 0))} steps"
        if result.get("final_loss") is not None:
            line += f", final loss {figure(result['final_loss'])}"
        val = (result.get("val_history") or [{}])[-1]
        if isinstance(val, dict) and isinstance(val.get("val_loss"), (int, float)):
            line += f", held-out loss {figure(val['val_loss'])}"
            if isinstance(val.get("val_nll"), (int, float)):  # an MoE's loss without the term
                line += f" (nll {figure(val['val_nll'])})"
            if isinstance(val.get("val_r2"), (int, float)):
                line += f", R^2 {val['val_r2']:.3f}"
            elif isinstance(val.get("val_accuracy"), (int, float)):
                line += f", accuracy {100 * val['val_accuracy']:.1f}%"
        lines = [line]
        by_class = class_report_line(result.get("class_metrics"))
        if by_class:  # accuracy alone hid a rare class never found (9% of rows: 92% accurate)
            lines.append(by_class)
        ranks = _ranks_line(result.get("strategy"))
        if ranks:  # several ranks: how the job was split (one rank: nothing to say)
            lines.append(ranks)
        resumed = result.get("resumed")
        trained_nothing = False
        if isinstance(resumed, dict):  # --resume: from where, or why not (a typo in the dir)
            at, total = resumed.get("from_step"), resumed.get("total")
            trained_nothing = isinstance(total, int) and isinstance(at, int) and at >= total
            if at is None:
                lines.append(f"resume: no checkpoint in {resumed.get('dir')}, so it started "
                             "from step 0")
            elif isinstance(total, int) and at >= total:
                lines.append(f"resume: the checkpoint at step {at} already reaches the "
                             f"{total} steps asked: nothing trained (steps count from 0: ask "
                             f"for more than {at})")
            elif at == result.get("steps") and \
                    str(result.get("stopped") or "").startswith("early stopping"):
                trained_nothing = True   # the run it resumed had stopped early there
                lines.append(f"resumed from step {at}: nothing trained, the run had stopped "
                             f"early there ({result['stopped']}; a larger --early-stop trains "
                             "on)")
            else:
                lines.append(f"resumed from step {at}")
        notes = [str(n) for n in result.get("notes") or []]
        warned = ("early_stopping=", "keep_best ", "hf-adapter: ")
        # past the first 6, the notes a user acts on still show (a table of 6 columns' notes
        # hid its class imbalance and the class weights used), and the rest are counted
        kept_on = ("hf-adapter: ", "classes imbalanced", "classes weighed", *warned)
        shown = [*notes[:6], *(n for n in notes[6:] if n.startswith(kept_on))]
        for note in shown:
            # what reading the data decided (and the Trainer's / the saved adapter's warnings)
            lines.append(f"warning: {note}" if note.startswith(warned)
                         else f"data: {note}")
        if len(shown) < len(notes):
            hidden = len(notes) - len(shown)
            lines.append(f"data: {hidden} more note{'s' if hidden > 1 else ''} in the run "
                         "folder's result.json (\"notes\")")
        if any(n.startswith("classes imbalanced") for n in notes) and \
                not any("(--class-weight)" in n for n in notes):
            lines.append("data: to make the rare classes count as much in the loss: the same "
                         "command with --class-weight balanced")
        evals = result.get("evaluation") or []
        if evals and isinstance(evals[-1], dict):  # --eval: the last held-out evaluation
            last = evals[-1]
            lines.append(f"held-out at step {last.get('step')}: " + ", ".join(
                f"{k.removeprefix('eval_')} {figure(v)}" for k, v in last.items()
                if k != "step" and isinstance(v, (int, float))))
        speed = f"{figure(result.get('time_s', 0.0))} s"
        first = result.get("first_step_s")
        # a first step that took most of the run (numba's kernels loaded in a fresh
        # process, 1-2 s; ranks load them before the clock): said, with the speed after it,
        # else one process looked many times slower than two on the same run
        slow_first = isinstance(first, (int, float)) and first > 0.25 and \
            first > 0.3 * (result.get("time_s") or 0.0)
        if slow_first:
            speed += f" (the first step {figure(first)} s: kernels loaded once)"
        for key, unit in (("tokens_per_s", "tokens/s"), ("samples_per_s", "samples/s")):
            if result.get(key):
                speed += f", {figure(result[key])} {unit}"
                after = result.get(f"{key}_after_first")
                if slow_first and after:
                    speed += f" ({figure(after)} after the first step)"
                break
        if result.get("peak_memory_bytes"):
            speed += f", peak memory {result['peak_memory_bytes'] / 2**20:,.1f} MiB"
        if not trained_nothing:   # a resume that trained nothing read "1e-04 s" here
            lines.append(speed)
        stopped = result.get("stopped")
        early = isinstance(stopped, str) and stopped.startswith("early stopping")
        if early:
            lines.append(f"stopped early: {stopped.removeprefix('early stopping: ')}")
        elif stopped:
            lines.append(f"stopped early: {stopped}")
        if result.get("best_step") not in (None, result.get("steps")):  # early stopping
            # the model holds these weights: their score, not the last validation's
            best = next((v for v in result.get("val_history") or [] if isinstance(v, dict)
                         and v.get("step") == result["best_step"]), {})
            score = ""
            if isinstance(best.get("val_r2"), (int, float)):
                score = f", R^2 {best['val_r2']:.3f}"
            elif isinstance(best.get("val_accuracy"), (int, float)):
                score = f", accuracy {100 * best['val_accuracy']:.1f}%"
            lines.append(f"weights of step {result['best_step']} kept (best held-out loss "
                         f"{figure(result['best_val_loss'])}{score})")
        if result.get("hf_model"):  # a checkpoint's model fine-tuned: where it was saved
            lines.append(f"saved (Hugging Face layout): {result['hf_model']}")
        if result.get("hf_adapter"):
            lines.append(f"adapter (peft layout): {result['hf_adapter']}")
        if result.get("checkpoint"):
            lines.append(f"checkpoint: {result['checkpoint']}")
            if stopped and not early:  # how to go on from it (a new job has its own folder)
                lines.append(_continue_line(str(result["checkpoint"])))
        if result.get("best_checkpoint"):  # --keep-best (round 41)
            lines.append(f"best checkpoint: {result['best_checkpoint']}")
        return lines

    def summary_of(self, job, result: dict) -> list[str]:
        """:meth:`summary`, where a stopped training's checkpoints are outside its run folder
        (``--checkpoint-dir``): the line to go on names this job (it said "jobs resume ID with
        this job's id"), or says its checkpoints are gone."""
        lines = self.summary(result)
        config = getattr(job, "config", None)
        if isinstance(config, dict) and isinstance(result, dict) and lines and \
                not result.get("onnx") and config.get("epochs") is None and \
                config.get("steps") is None and not config.get("resume") and \
                not isinstance(result.get("resumed"), dict):
            # the kernel's default is one pass: `train mlp data.csv` gave R^2 -0.01 on a
            # linear table (--epochs 100: 2.3e-04 loss) and said nothing about it
            lines.insert(1, "one pass over the data (neither --epochs nor --steps given): "
                            "--epochs N trains longer")
        checkpoint = (result or {}).get("checkpoint") if isinstance(result, dict) else None
        job_id = getattr(job, "id", None)
        if not checkpoint or not isinstance(job_id, str) or not job_id:
            return lines
        generic = _continue_line(str(checkpoint))
        if generic not in lines or "with this job's id" not in generic:
            return lines
        lines[lines.index(generic)] = _continue_line(str(checkpoint), job_id=job_id,
                                                      config=getattr(job, "config", None))
        return lines

    def result_html(self, job) -> str | None:
        """A classifier's held-out scores by class (scikit-learn's classification_report);
        ``--eval``: the held-out evaluations, one column per step."""
        result = job.result or {}
        out = [class_report_html(result.get("class_metrics"))]
        evals = result.get("evaluation")
        if evals:
            from skiff.kernels.train.models.evaluate import EvalTable

            out.append("<div><b>held-out evaluation</b></div>"
                       + EvalTable.from_history(evals)._repr_html_())
        return "".join(o for o in out if o) or None

    def preparse(self, line: str, user_ns: dict) -> tuple[str, dict]:
        """``%train model (X, y) --epochs 3``: a DATA written as a Python tuple or list
        expression is evaluated in the notebook and stands in as a variable."""
        head, sep, rest = line.strip().partition(" ")
        rest = rest.lstrip()
        if not sep or not head or head.startswith("-") or rest[:1] not in ("(", "["):
            return line, user_ns
        cuts = [i for i in range(len(rest)) if rest.startswith(" -", i)] + [len(rest)]
        for cut in cuts:
            expr = rest[:cut].strip()
            try:
                code = compile(expr, "<%train DATA>", "eval")
            except SyntaxError:
                continue
            try:
                value = eval(code, user_ns)  # noqa: S307  (the user's own expression)
            except NameError as exc:
                raise ValueError(f"DATA {expr!r}: {exc}") from None
            if isinstance(value, list) and value and all(hasattr(v, "shape") for v in value):
                value = tuple(value)  # [X, y] written on the line means the arrays X and y
            return f"{head} {shlex.quote(expr)} {rest[cut:]}", {**user_ns, expr: value}
        return line, user_ns

    def prepare(self, values: dict, *, cell: str | None = None, user_ns: dict | None = None,
                where: str = "thread") -> JobRequest:
        user_ns = {} if user_ns is None else user_ns
        if cell is not None:
            if not cell.strip():
                raise ValueError("%%train needs a cell that defines model and dataset")
            config = to_config({**values, "source": cell})
            return JobRequest("train", config, fn=_cell_job(user_ns), label="%%train",
                              on_done=_deliver(user_ns, config, set_model=True))
        model_obj, data_obj = _lookup(values, user_ns)
        if model_obj is None and data_obj is None:
            config = to_config(values)
            lora, model = config.get("lora"), config.get("model")
            if lora and model in BUILTIN_MODELS and model not in FROM_CHECKPOINT:
                _check_lora_targets(model, json.dumps(lora, sort_keys=True))
            return JobRequest("train", config, label=f"%train {config['model']}",
                              on_done=_deliver(user_ns, config, set_model=False))
        objects = f"{values['model']}" + (f", {values['data']}" if data_obj is not None
                                          else "")
        local = (f"notebook objects ({objects}) cannot travel to other processes: train them "
                 "in this kernel (--np 1, no --runner process), use built-in names, or "
                 "%%train --np N with a cell that builds them")
        if where != "thread":
            raise ValueError(local)
        return _objects_request(values, model_obj, data_obj, local)

    def resume_config(self, job) -> dict:
        """Continue a finished train job from its newest checkpoint (its ``checkpoint_dir``,
        else the ``checkpoints`` folder of its run folder)."""
        config = dict(job.config)
        if str(config.get("model", "")).startswith("<notebook"):
            raise ValueError(f"job {job.id} trained a notebook object; resume it from the "
                             "notebook with %train ... --resume --checkpoint-dir DIR")
        if config.get("model") == OCR_REC:
            # a fine-tune keeps rec.ckpt beside its model (--out, else its run folder's model/)
            config["checkpoint_dir"] = (config.get("checkpoint_dir") or config.get("out")
                                        or str(job.run_dir / "model"))
            from skiff.kernels.ocr_train.finetune import CHECKPOINT

            if not os.path.isfile(os.path.join(config["checkpoint_dir"], CHECKPOINT)):
                model = config.get("out") or str(job.run_dir / "model")
                raise ValueError(f"job {job.id} left no {CHECKPOINT} in "
                                 f"{config['checkpoint_dir']} (a finished fine-tune removes it "
                                 f"once its model is exported): nothing to resume; to tune "
                                 f"its model further: train ocr-rec --data LABELS --from "
                                 f"{model}")
            config["resume"] = True
            # to_config reads a command line's values: --register, --upright and
            # --general-fonts are stored as name, a bool and a list (round 44: dropped, dropped,
            # AttributeError)
            if config.get("name"):
                config["register"] = config.pop("name")
            if isinstance(config.get("upright"), bool):
                config["upright"] = "yes" if config["upright"] else "no"
            if isinstance(config.get("general_fonts"), list):
                config["general_fonts"] = ",".join(config["general_fonts"])
            return to_config(config)
        where = config.get("checkpoint_dir") or str(job.run_dir / "checkpoints")
        result = job.result or {}
        done = result.get("steps")
        at = _newest_step(where) if job.status != "done" and config.get("steps") else None
        reached = at is not None and at >= int(config["steps"])
        if reached:
            # its last step's checkpoint written, then it failed or was cancelled (writing
            # its result, a full disk): nothing left of the steps asked, as a finished job
            done = at
        if (reached or job.status == "done" and not result.get("stopped")) and \
                isinstance(done, int) and done > 0:
            # it trained all it was asked: resuming to the same end trained nothing (and said
            # so only in its summary). A user who resumes a finished training wants more of
            # it: as many steps again (or epochs), from its last checkpoint (docs/trainer.md)
            if config.get("steps"):
                config["steps"] = done + int(config["steps"])
            else:
                epochs = 2 * (config.get("epochs") or 1)  # 2.5 epochs again: 5 in all
                config["epochs"] = int(epochs) if float(epochs).is_integer() else epochs
            if (config.get("steps") or 0) > MAX_STEPS:
                raise ValueError(f"job {job.id} finished at step {done:,}: as many steps again "
                                 f"pass {MAX_STEPS:,}; train more with "
                                 f"{_more_steps_command(config, done, where)}")
        config["resume"] = True
        config["checkpoint_dir"] = where
        return to_config(as_options(config))


def as_options(config: dict) -> dict:
    """A stored train config as the options :func:`to_config` reads: the entries it stores
    under other names (``early_stopping``: ``--early-stop``; ``lora``: ``--lora-r`` and the
    rest) named back. ``jobs resume`` of a run with ``--early-stop 100`` went on without
    early stopping (its best weights never put back: the final checkpoint held the last
    step's), and one of a LoRA fine-tune without its adapters."""
    values = dict(config)
    if "early_stopping" in values and values.get("early_stop") is None:
        values["early_stop"] = values.pop("early_stopping")
    lora = values.pop("lora", None)
    if isinstance(lora, dict) and values.get("lora_r") is None:
        values["lora_r"] = lora.get("r")
        values["lora_alpha"] = lora.get("alpha")
        values["lora_targets"] = ",".join(lora.get("targets") or ())
        values["lora_dora"] = bool(lora.get("dora"))
        values["lora_rslora"] = bool(lora.get("rslora"))
        if lora.get("modules_to_save"):
            values["lora_modules_to_save"] = ",".join(lora["modules_to_save"])
    return values


MAX_CLASSES_SHOWN = 8


def _per_class(report) -> list[tuple] | None:
    per = report.get("per_class") if isinstance(report, dict) else None
    if not isinstance(per, dict):
        return None
    try:
        return list(zip(per["class"], per["precision"], per["recall"], per["f1"],
                        per["support"]))
    except (KeyError, TypeError):
        return None


def class_report_line(report) -> str | None:
    """The summary's line of a classifier's held-out scores: macro F1 and each class's
    recall (the lowest ones first past :data:`MAX_CLASSES_SHOWN` classes)."""
    rows = _per_class(report)
    if not rows or not isinstance(report.get("f1"), (int, float)):
        return None
    # a class with no held-out row has no recall (scikit-learn: "ill-defined"): said so,
    # not "0.000 of 0", and never among the lowest
    absent = [r for r in rows if not r[4]]
    rows = [r for r in rows if r[4]]
    shown = rows if len(rows) <= MAX_CLASSES_SHOWN else sorted(
        rows, key=lambda r: r[2])[:MAX_CLASSES_SHOWN]
    more = "" if len(rows) <= MAX_CLASSES_SHOWN else \
        f" (the {MAX_CLASSES_SHOWN} lowest of {len(rows)} classes)"
    line = (f"held-out by class: macro F1 {report['f1']:.3f}; recall{more} "
            + ", ".join(f"{c}: {r:.3f} of {s}" for c, _p, r, _f, s in shown))
    if absent:
        names = ", ".join(str(r[0]) for r in absent[:MAX_CLASSES_SHOWN])
        line += (f"; no held-out rows of {names}"
                 + (f" and {len(absent) - MAX_CLASSES_SHOWN} more" if len(absent) >
                    MAX_CLASSES_SHOWN else "")
                 + " (a larger --val-split, or more rows of them)")
    return line


def class_report_html(report) -> str | None:
    """A classifier's held-out scores as scikit-learn's classification_report lays them
    out: a row per class (precision, recall, F1, support), accuracy and the macro average."""
    import html

    rows = _per_class(report)
    if not rows:
        return None
    cells = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(c))}</th>"
        + "".join(f"<td>{v:.3f}</td>" for v in (p, r, f)) + f"<td>{s}</td></tr>"
        for c, p, r, f, s in rows)
    total = sum(int(s) for *_x, s in rows)
    mean = [sum(row[k] for row in rows) / len(rows) for k in (1, 2, 3)]
    acc = report.get("val_accuracy")
    if isinstance(acc, (int, float)):
        cells += (f"<tr><th style='text-align:left'>accuracy</th><td></td><td></td>"
                  f"<td>{acc:.3f}</td><td>{total}</td></tr>")
    cells += ("<tr><th style='text-align:left'>macro avg</th>"
              + "".join(f"<td>{v:.3f}</td>" for v in mean) + f"<td>{total}</td></tr>")
    return ("<div><b>held-out scores by class</b></div><table><tr><th></th><th>precision"
            "</th><th>recall</th><th>f1-score</th><th>support</th></tr>" + cells + "</table>")


def _continue_line(checkpoint: str, job_id: str | None = None,
                   config: dict | None = None) -> str:
    """How to go on from a stopped training's ``checkpoint``: ``jobs resume ID`` as the two
    fronts type it when the checkpoint is in its job's run folder (the folder's
    ``config.json`` names the job) and a checkpoint is still there (else that it is gone,
    as ``jobs resume`` refuses it); a notebook object's job from the notebook (``jobs
    resume`` refuses it); else (``--checkpoint-dir`` elsewhere: no job to name from here)
    the job's id, or the same command with ``--resume --checkpoint-dir``."""
    import json

    where = os.path.dirname(checkpoint)
    meta = {}
    if os.path.basename(where) == "checkpoints":
        try:
            with open(os.path.join(os.path.dirname(where), "config.json"), "rb") as fh:
                meta = json.loads(fh.read(4 << 20))
        except (OSError, ValueError):
            meta = {}
    if isinstance(meta, dict) and meta.get("id"):  # its run folder's own record
        job_id, config = meta.get("id"), meta.get("config")
        meta_kind = meta.get("kind")
    else:  # a checkpoint folder elsewhere: the job, where the front has it (summary_of)
        meta_kind = "train" if job_id else None
    model = str((config or {}).get("model", "")) if isinstance(config, dict) else ""
    if model.startswith("<notebook"):
        return (f"to continue: from the notebook, the same %train with --resume "
                f"--checkpoint-dir {shlex.quote(where)}")
    if isinstance(job_id, str) and job_id and meta_kind == "train":
        if not os.path.isfile(checkpoint) and _newest_step(where) is None:
            # its checkpoints removed since: `jobs resume` refuses it ("wrote no checkpoint")
            return (f"to continue: nothing left to go on from, its checkpoints in "
                    f"{shlex.quote(where)} are gone (removed?); python -m skiff jobs show "
                    f"{shlex.quote(job_id)} lists the options to train again with")
        return (f"to continue: python -m skiff jobs resume {shlex.quote(job_id)} "
                f"(%jobs resume {job_id} in a notebook)")
    return (f"to continue: python -m skiff jobs resume ID with this job's id (%jobs resume "
            f"ID in a notebook), or the same command with --resume --checkpoint-dir "
            f"{shlex.quote(where)}")


def _more_steps_command(config: dict, done: int, where: str) -> str:
    """``python -m skiff train mlp --steps N --resume --checkpoint-dir DIR (N > 5)``: the
    command that goes on from a finished job's checkpoint."""
    if config.get("source"):
        return (f"%%train --steps N --resume --checkpoint-dir {shlex.quote(where)} with "
                f"the same cell (N > {done})")
    words = ["python -m skiff train", str(config.get("model"))]
    data = config.get("data")
    if data and data != DEFAULT_DATA.get(str(config.get("model"))):
        words.append(shlex.quote(str(data)))
    if config.get("from"):
        words += ["--from", shlex.quote(str(config["from"]))]
    words += ["--steps N --resume --checkpoint-dir", shlex.quote(where)]
    return f"{' '.join(words)} (N > {done})"


def _ranks_line(plan) -> str | None:
    """``on 2 ranks: zero2 (dp=2,tp=1,pp=1,micro=1), chosen by the planner`` from a result's
    strategy record, or None for one rank."""
    if not isinstance(plan, dict) or not isinstance(plan.get("choice"), dict):
        return None
    c = plan["choice"]
    try:
        world = int(c.get("dp", 1)) * int(c.get("tp", 1)) * int(c.get("pp", 1))
    except (TypeError, ValueError):
        return None
    if world <= 1:
        return None
    how = "as asked" if plan.get("explicit") else "chosen by the planner"
    label = f" ({plan['label']})" if plan.get("label") else ""
    return f"on {world} ranks: {plan.get('strategy') or '?'}{label}, {how}"


def _cell_job(user_ns: dict):
    """The job of a ``%%train`` cell on a thread: the cell runs with the notebook's
    variables visible (a copy of the namespace), then trains."""

    def job(cfg, reporter):
        from skiff.kernels.train.entry import CELL_NAMES, exec_cell, train_parts

        from .class_weight import weigh_classes

        ns = exec_cell(cfg["source"], seed=int(cfg.get("seed") or 0),
                       namespace=cell_namespace(user_ns), notebook=True)
        return train_parts(weigh_classes({k: ns.get(k) for k in CELL_NAMES}, cfg, reporter),
                           cfg, reporter)

    return job


def _lookup(values: dict, user_ns: dict):
    """Notebook objects named by MODEL / DATA (None where the word is a name or path)."""
    model_obj = data_obj = None
    mname, dname = values.get("model"), values.get("data")
    if mname is not None and mname in user_ns:
        value = user_ns[mname]
        if isinstance(value, type) and hasattr(value, "parameters"):
            raise TypeError(f"MODEL {mname!r} is a class; train an instance of it, e.g. "
                            f"net = {mname}(...) then %train net DATA")
        if is_model(value):
            model_obj = value
        elif isinstance(value, str):
            if value not in (*BUILTIN_MODELS, OCR_REC):  # name the variable, not only its text
                raise ValueError(f"MODEL {mname!r} is a notebook variable holding the text "
                                 f"{_short(value)}, not a model: give a model object, or a "
                                 f"built-in model name ({', '.join(BUILTIN_MODELS)})"
                                 f"{did_you_mean(value, BUILTIN_MODELS)}")
            values["model"] = value
        else:
            raise TypeError(f"MODEL {mname!r} is a {type(value).__name__}, not a skiff model")
    if dname is not None and dname in user_ns:
        value = user_ns[dname]
        parts = value if isinstance(value, tuple) else (value,)
        sparse = next((p for p in parts if type(p).__module__.startswith("scipy.sparse")), None)
        if sparse is not None:  # len() raised SciPy's "sparse array length is ambiguous"
            raise TypeError(f"DATA {dname!r} holds a sparse matrix ({type(sparse).__name__}): "
                            f"%train takes dense arrays, e.g. X = S.toarray() then "
                            f"%train {values.get('model') or 'MODEL'} (X, y)")
        if model_obj is None and values.get("model") == "mlp" and is_frame(value):
            # %train mlp df --target outcome: the frame is read as the table file it would
            # be (words one-hot, gaps filled, dates, --target/--drop, table.json for
            # predict); as arrays it was "has no targets" or "encode text ... first"
            values["data"] = str(frame_table_file(value))  # in the runs folder's frames/
        elif is_dataset(value) or loader_order(value) is not None:  # a DataLoader
            data_obj = value
        elif isinstance(value, str):
            try:
                if not os.path.isdir(os.path.expanduser(value)):  # cnn's folder: to_config
                    check_data_name(value)
            except ValueError as exc:  # name the variable, then what its text is not
                raise ValueError(f"DATA {dname!r} is a notebook variable holding the text "
                                 f"{_short(value)}: {exc}") from None
            values["data"] = value
        else:
            raise TypeError(f"DATA {dname!r} is a {type(value).__name__}, not a data set "
                            "(it needs len() and items)")
    if mname is not None and mname not in user_ns and mname not in (*BUILTIN_MODELS, OCR_REC):
        # a mistyped variable ("modle"): the closest of the built-in names and the notebook's
        # models (it used to fail as "UsageError: modle", a KeyError's text)
        models = [k for k, v in user_ns.items() if not k.startswith("_") and is_model(v)]
        if not models:  # the words of the form and of a line with no variable (round 48:
            check_model_name(mname)  # a terminal was told of "the notebook's" models)
        raise unknown_name("model", mname, [*BUILTIN_MODELS, *models],
                           " (built-in models, then the notebook's)")
    if model_obj is not None and data_obj is None and values.get("data") is None:
        raise ValueError(f"DATA is needed to train the notebook model {mname!r} "
                         "(only built-in models have their own data)")
    return model_obj, data_obj


_SCAN_ROWS = 100_000  # the rows of a data set of its own whose targets count its classes


def _mlp_sizes(data, name: str) -> dict:
    """``{"in_features", "out_features"}`` of the built-in mlp for notebook data ``(X, y)``,
    as a table file's mlp is built: as wide as X's rows (flattened), one output per class
    for integer (or bool) targets (the largest id + 1), else as many as a target row holds
    (regression).
    The built-in mlp was built for blobs (2 inputs, 4 classes), and ``%train mlp (X, y)``
    with 5 features failed at step 1 ("MLP expects inputs of shape (B, 2)"); data it cannot
    read (rows that are no vectors, no targets) is refused here, before any run folder."""
    import numpy as np

    arrays = getattr(data, "arrays", None)
    if arrays is None:  # a data set of its own: its first item says the shapes, and the
        try:            # targets of its first rows the classes (a list of (x, label) pairs)
            first = data[0]
            items = first if isinstance(first, (tuple, list)) else (first,)
            arrays = [np.asarray(a)[None] for a in items]
            if len(items) > 1:
                rows = min(len(data), _SCAN_ROWS)
                arrays[1] = np.stack([np.asarray(data[i][1]) for i in range(rows)])
        except Exception:  # noqa: BLE001  (the job will say what it cannot read)
            return {}
    if len(arrays) < 2:
        raise ValueError(f"DATA {name!r} has no targets for the mlp to learn: pass inputs "
                         f"and targets, e.g. %train mlp (X, y)")
    x, y = np.asarray(arrays[0]), np.asarray(arrays[1])
    if x.ndim < 2:  # (N,): one number a row, or a mistake; the mlp flattens (N, C, H, W)
        raise ValueError(f"the mlp reads rows of features, shape (N, F); DATA {name!r} has "
                         f"inputs of shape {x.shape}: one feature a row is "
                         f"X.reshape(-1, 1)")
    if y.dtype == np.bool_ or np.issubdtype(y.dtype, np.integer):
        if y.ndim > 2 or (y.ndim == 2 and y.shape[1] != 1):
            raise ValueError(f"integer targets are class ids, one per row; DATA {name!r} has "
                             f"targets of shape {y.shape} (for regression pass floats: "
                             f"y.astype('float32'))")
        ids = y.astype(np.int64).ravel()
        ids = ids[ids != -100]  # ignored rows
        if ids.size and ids.min() < 0:
            raise ValueError(f"class ids must be 0 or more (-100: ignored), DATA {name!r} "
                             f"has {int(ids.min())}: map them first, classes, y = "
                             f"np.unique(y, return_inverse=True)")
        out = max(int(ids.max()) + 1 if ids.size else 1, 2)
    else:
        out = 1 if y.ndim == 1 else int(np.prod(y.shape[1:]))
    return {"in_features": int(np.prod(x.shape[1:])), "out_features": out}


def _short(text: str, size: int = 40) -> str:
    """``'some text'`` as the user wrote it, cut to ``size`` characters."""
    return repr(text if len(text) <= size else text[:size] + "...")


# the notebook models a thread job is training now: id -> (the model, its job's id). A
# second %train of one model while the first runs (its cell run again) is refused: both
# trained it at once, and one failed on gradients the other had cleared (round 45)
_TRAINING: dict[int, tuple[object, str]] = {}
_TRAINING_LOCK = threading.Lock()


def _training_job(model) -> str | None:
    """The id of the running job that trains ``model`` in place, or None."""
    with _TRAINING_LOCK:
        held = _TRAINING.get(id(model))
    return held[1] if held is not None and held[0] is model else None


def _busy(name: str, job_id: str) -> str:
    return (f"MODEL {name!r} is being trained by job {job_id}, still running: one model "
            f"cannot be trained by two jobs at once. Wait for it (%jobs wait {job_id}), "
            f"cancel it (%jobs cancel {job_id}), or train a copy (copy.deepcopy({name}))")


def _objects_request(values: dict, model_obj, data_obj, local: str) -> JobRequest:
    """A thread job over notebook objects (a model, a data set, or both)."""
    from skiff.kernels.train.data import ArrayDataset, as_dataset

    if model_obj is not None and (busy := _training_job(model_obj)) is not None:
        raise ValueError(_busy(values["model"], busy))
    if data_obj is not None and loader_order(data_obj) is None:  # a loader: train() reads it
        data_obj = as_dataset(data_obj, what=f"DATA {values['data']!r}")
        has_loss = model_obj is not None and callable(getattr(model_obj, "loss", None))
        if model_obj is not None and not has_loss and isinstance(data_obj, ArrayDataset) and \
                len(data_obj.arrays) == 1:
            raise ValueError(f"DATA {values['data']!r} is one array, and the model has no "
                             f"loss(batch) of its own: pass inputs and targets, e.g. "
                             f"%train {values['model']} (X, y)")
    # validate every other option through the grammar, with stand-in names for the objects
    stand_model = values["model"] if model_obj is None else None
    stand_data = values.get("data") if data_obj is None else None
    if stand_model is None:  # a built-in model that takes this data, to check the rest
        stand_model = next((m for m in BUILTIN_MODELS
                            if stand_data is None or _fits(m, check_data_name(stand_data))),
                           "mlp")
    stand_in = {**values, "model": stand_model, "eval": None, "eval_every": None,
                "data": DEFAULT_DATA[stand_model] if stand_data is None else stand_data,
                "_objects": True,
                "_notebook_data": None if data_obj is None else values["data"]}
    config = to_config(stand_in)
    config.update(_eval(values, None))  # the model's tokenizer is checked in the job
    if config.get("class_weight") and data_obj is not None:
        from .class_weight import check_data

        check_data(data_obj, values["data"])
    sizes = None
    if model_obj is None and values["model"] == "mlp" and data_obj is not None \
            and not config.get("from"):  # as a table file's mlp: as wide as the data
        sizes = _mlp_sizes(data_obj, values["data"])
        config["mlp"] = dict(sizes)
    config["model"] = values["model"] if model_obj is None else f"<notebook {values['model']}>"
    config["data"] = config["data"] if data_obj is None else f"<notebook {values['data']}>"
    seed = config["seed"]
    model_name, data_name = values["model"], values.get("data")

    def run(cfg, reporter):
        from skiff.kernels.train import models
        from skiff.kernels.train.core import random as train_random
        from skiff.kernels.train.data import builtin_dataset
        from skiff.kernels.train.entry import train_parts
        from skiff.kernels.train.tables import is_table, read_table

        model = model_obj
        if model is None:
            with train_random.using(train_random.new_generator(seed)):   # the job's own
                model = models.get(model_name, **({"path": cfg["from"]} if cfg.get("from")
                                                  else sizes or {}))
        if cfg.get("lora"):
            from skiff.kernels.train.models.lora import apply_job_lora

            apply_job_lora(model, cfg["lora"], seed=seed)
        dataset, table = data_obj, None
        if dataset is None and is_table(data_name) and (  # a CSV/TSV/NPZ: its rows
                model_name == "mlp" and model_obj is None or not _json_lines(data_name)):
            from skiff.kernels.train.data import ArrayDataset
            from skiff.kernels.train.entry import table_order, training_rows

            table = read_table(data_name, cfg.get("target"), cfg.get("drop"),
                               training_rows(seed, cfg.get("val_split")), cfg.get("text"),
                               int(cfg.get("ngrams") or 1), bool(cfg.get("tfidf")))
            # in an order of the seed's, as a terminal job's table: --val-split holds out the
            # last rows, and a file sorted by its classes held out one class only; those of
            # each class in its share (round 46 h7)
            order = table_order(seed, len(table.x), cfg.get("val_split"),
                                table.y if table.classes is not None else None)
            dataset = ArrayDataset(table.x[order], table.y[order])
        elif dataset is None:
            block = cfg.get("block_size") or getattr(getattr(model, "config", None),
                                                     "block_size", 128)
            dataset = builtin_dataset(data_name, block_size=int(block), seed=seed)
        from .class_weight import weigh_classes

        parts = {"model": model, "dataset": dataset, "val_dataset": None, "table": table}
        return train_parts(weigh_classes(parts, cfg, reporter), cfg, reporter)

    def job(cfg, reporter):
        if model_obj is None:
            return run(cfg, reporter)
        with _TRAINING_LOCK:  # two launches in a row: the second to start is refused
            held = _TRAINING.get(id(model_obj))
            if held is not None and held[0] is model_obj:
                raise RuntimeError(_busy(model_name, held[1]))
            _TRAINING[id(model_obj)] = (model_obj, reporter.run_dir.name)
        try:
            return run(cfg, reporter)
        finally:
            with _TRAINING_LOCK:
                _TRAINING.pop(id(model_obj), None)

    return JobRequest("train", config, fn=job, local_only=local,
                      label=f"%train {values['model']}")


# the start order of each %%train's delivery of ``model``, and per namespace the newest
# that set it: a job that ends after a newer one set ``model`` leaves it (round 42)
_STARTED = itertools.count()
_MODEL_SET: dict[int, tuple[int, str]] = {}


def _deliver(user_ns: dict, config: dict, *, set_model: bool):
    """Done callback: put the trained model where the notebook can reach it. ``model`` is
    the newest started job's: a cell run again while its first job ran (``--runner
    process``: both run at once) got the first's model when that one ended last."""
    order = next(_STARTED)

    def callback(job):
        if job.status != "done" or config.get("model") == OCR_REC:
            return
        if job.value is not None and hasattr(job.value, "model"):
            model = job.value.model
        else:  # a process job: rebuild and load the weights it wrote
            from skiff.kernels.train.entry import load_trained_model

            namespace = cell_namespace() if config.get("source") else None
            model = load_trained_model(job.run_dir, config, namespace)
            job.value = _Loaded(model, job.result)
        if set_model and model is not None:
            newer = _MODEL_SET.get(id(user_ns))
            if newer is not None and newer[0] > order:
                job.emit("log", level="warning", message=(
                    f"model left as job {newer[1]}'s (started after this one); this "
                    f"job's model is job.value.model"))
                return
            _MODEL_SET[id(user_ns)] = (order, job.id)
            user_ns["model"] = model

    return callback


KIND = TrainKind()


def _ocr_rec_summary(result: dict) -> list[str]:
    """What a fine-tuned recognizer's user needs from the terminal: the file, the accuracy
    before and after on the held-out crops and on general text, the rows left out."""
    from types import SimpleNamespace

    from skiff.kernels.ocr_train.entry import forgetting

    def acc(key):
        value = result.get(key)
        return "n/a" if not isinstance(value, (int, float)) else f"{100 * value:.1f}%"

    lines = [f"{figure(result.get('steps', 0))} steps, final loss "
             f"{figure(result.get('final_loss') or 0.0)}, "
             f"{figure(result.get('train_rows', 0))} crops trained on, "
             f"{figure(result.get('val_rows', 0))} held out",
             f"held-out crops: {acc('val_before')} -> {acc('val_after')} of characters read; "
             f"general text: {acc('general_before')} -> {acc('general_after')}"]
    lost = forgetting(SimpleNamespace(general_before=result.get("general_before"),
                                      general_after=result.get("general_after")))
    if lost:
        lines.append(f"warning: {lost}")
    pull = result.get("pull")
    if isinstance(pull, (int, float)) and pull != 1.0:
        lines.append(f"weights kept {pull:g} of the way from the base to the tuned ones "
                     f"({result.get('pull_measure') or 'asked'})")
    if result.get("added_chars"):
        lines.append(f"characters added to the dictionary: {''.join(result['added_chars'])}")
    errors = result.get("errors") or []
    if errors:
        lines.append(f"{len(errors)} label row(s) left out:")
        lines += [f"  {e}" for e in errors[:5]]
        if len(errors) > 5:
            lines.append(f"  ... and {len(errors) - 5} more (the result's 'errors')")
    if result.get("upright"):   # the export says so: %ocr skips the direction model for it
        lines.append(f"crops come upright ({result.get('upright_measure') or 'said'}): "
                     "%ocr with it skips the direction model (--no-cls is not needed)")
    lines.append(f"model: {result['onnx']}")
    use = (f"--lang {result['model_set']}" if result.get("model_set")
           else f"--rec-model {shlex.quote(str(result['onnx']))}")
    lines.append(f"read with it: %ocr IMAGES {use}")
    lines.append(f"{figure(result.get('seconds') or result.get('time_s') or 0.0)} s")
    return lines
