"""Grammar of ``%train`` / ``%%train`` / ``python -m skiff train``.

``%train MODEL [DATA] [--epochs N | --steps N] [--lr X] [--batch-size B] [--device DEV]
[--strategy S] [--checkpoint-dir DIR] [--resume] [--np N] [--wait] [-o NAME]``.
MODEL is a built-in model name (or, in a notebook, a variable holding a model); DATA is a
built-in data set, a text file, or (in a notebook) a variable; left out, a built-in model
trains on its own data. ``%%train [options]`` runs the cell, which defines ``model`` and
``dataset``, as the job.
"""

from __future__ import annotations

import os

from skiff.kernels.train.models.registry import BUILTIN_DATA, BUILTIN_MODELS, DEFAULT_DATA

from .common import (
    cluster_options,
    command,
    device_option,
    launch_options,
    positive_float,
    positive_int,
)

__all__ = ["COMMAND", "to_config", "STRATEGIES"]

# strategy names known here; the distributed planner accepts more ("dp=2,tp=2,pp=1", ...)
STRATEGIES = ("auto", "single", "dp", "zero1", "zero2", "tp", "pp", "ep")


@command("train", help="Train a model on a data set: a built-in, a text file, or notebook "
                       "variables; %%train runs a cell that defines model and dataset.")
@launch_options
@cluster_options
@device_option
def COMMAND(p):
    p.add_argument("model", nargs="?", default=None, metavar="MODEL",
                   help=f"built-in model ({', '.join(BUILTIN_MODELS)}) or a notebook variable")
    p.add_argument("data", nargs="?", default=None, metavar="DATA",
                   help=f"built-in data ({', '.join(BUILTIN_DATA)}), a text file, or a "
                        "notebook variable; default: the model's own data")
    p.add_argument("--epochs", type=positive_int, default=None, metavar="N")
    p.add_argument("--steps", type=positive_int, default=None, metavar="N",
                   help="optimizer steps (default: 1 epoch when neither is given)")
    p.add_argument("--lr", type=positive_float, default=None, metavar="X",
                   help="peak learning rate (default: the model's own, else 3e-4)")
    p.add_argument("--batch-size", type=positive_int, default=None, metavar="B")
    p.add_argument("--grad-accum", type=positive_int, default=1, metavar="K",
                   help="micro-batches per optimizer step")
    p.add_argument("--strategy", default="auto", metavar="S",
                   help="auto (the planner decides), single, dp, zero1, zero2, tp, pp, ep, "
                        "or a layout like dp=2,tp=1,pp=1")
    p.add_argument("--checkpoint-dir", default=None, metavar="DIR",
                   help="where checkpoints go (default: the job's run folder)")
    p.add_argument("--checkpoint-every", type=positive_int, default=None, metavar="N",
                   help="write a checkpoint every N steps (and always at the end)")
    p.add_argument("--resume", action="store_true",
                   help="continue from the newest checkpoint in --checkpoint-dir")
    p.add_argument("--seed", type=int, default=0, metavar="N")
    p.add_argument("--block-size", type=positive_int, default=None, metavar="T",
                   help="context length for text data (default: the model's)")


def _check_strategy(spec: str) -> str:
    spec = str(spec).strip()
    if spec in STRATEGIES:
        return spec
    if "=" in spec:  # a layout like dp=2,tp=2,pp=1: the planner validates it
        parts = [x.partition("=") for x in spec.split(",")]
        if all(k.strip() and v.strip() for k, _, v in parts):
            return spec
    raise ValueError(f"unknown strategy {spec!r}: choose from {', '.join(STRATEGIES)} "
                     "or a layout like dp=2,tp=1,pp=1")


def check_model_name(name: str) -> str:
    if name not in BUILTIN_MODELS:
        raise ValueError(f"unknown model {name!r}: built-in models are "
                         f"{', '.join(BUILTIN_MODELS)}")
    return name


def check_data_name(name: str) -> str:
    if name in BUILTIN_DATA:
        return name
    if os.path.isfile(os.path.expanduser(name)):
        return os.path.abspath(os.path.expanduser(name))
    raise ValueError(f"unknown data {name!r}: not a file, and not a built-in data set "
                     f"({', '.join(BUILTIN_DATA)})")


def to_config(values: dict) -> dict:
    """Validate parsed values and return the ``train`` kernel config.

    ``values["source"]`` (a ``%%train`` cell) replaces MODEL and DATA; otherwise MODEL must
    be a built-in name here (the magic puts notebook objects in a thread job itself).
    """
    source = values.get("source")
    model = values.get("model")
    data = values.get("data")
    if source is None:
        if model is None:
            raise ValueError(f"train needs a MODEL: one of {', '.join(BUILTIN_MODELS)}")
        check_model_name(model)
        data = check_data_name(data) if data is not None else DEFAULT_DATA[model]
    elif model is not None or data is not None:
        raise ValueError(f"%%train takes its model and data from the cell; got MODEL/DATA "
                         f"{model!r} {data!r} on the line")
    epochs, steps = values.get("epochs"), values.get("steps")
    if values.get("resume") and not values.get("checkpoint_dir"):
        raise ValueError("--resume needs --checkpoint-dir DIR (where the checkpoints are)")
    config = {
        "model": model,
        "data": data,
        "source": source,
        "epochs": epochs,
        "steps": steps,
        "lr": values.get("lr"),
        "batch_size": values.get("batch_size"),
        "grad_accum": values.get("grad_accum", 1),
        "device": values.get("device", "auto"),
        "strategy": _check_strategy(values.get("strategy", "auto")),
        "checkpoint_dir": values.get("checkpoint_dir"),
        "checkpoint_every": values.get("checkpoint_every"),
        "resume": bool(values.get("resume", False)),
        "seed": int(values.get("seed", 0)),
        "block_size": values.get("block_size"),
    }
    return config
