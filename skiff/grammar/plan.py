"""Grammar of ``%plan`` and ``python -m skiff plan``: how would a model train on a cluster?

``%plan 7b --devices 8 --device-memory 80GB`` prints the planner's choice, its reasons and the
table of the best layouts; ``--json`` gives the same as one JSON document. Hypothetical
clusters need no devices: nothing is launched.
"""

from __future__ import annotations

import argparse

from .common import (
    byte_size,
    command,
    json_option,
    notebook_only,
    positive_float,
    positive_int,
    unknown_name,
)

__all__ = ["COMMAND", "to_kwargs", "cli"]

PRECISIONS = {"bf16": 2, "fp16": 2, "fp32": 4}
# %train's --precision spellings, taken here too: a user plans the run they will train
# (`plan 7b --precision bf16-mixed` was refused as an invalid choice with no hint)
PRECISION_ALIASES = {"bf16-mixed": "bf16", "fp16-mixed": "fp16", "32": "fp32", "float32": "fp32",
                     "bfloat16": "bf16", "float16": "fp16"}


def _precision(text: str) -> str:
    """``--precision``: bf16, fp16 or fp32, or %train's bf16-mixed, fp16-mixed, 32."""
    key = text.strip().lower()
    return PRECISION_ALIASES.get(key, key)


def _bandwidth(text: str) -> float:
    try:
        return float(byte_size(text))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a bandwidth in bytes/s like 25GB or 400MB, got {text!r}") from None


@command("plan", help="Plan how to train a model on N devices: layout, memory and step time.")
@json_option
def COMMAND(p):
    p.add_argument("model", help="a preset (7b, 13b, 70b, gpt-moe, gpt-mini, gpt-small, ...)")
    # --np: the ranks a training takes (%train --np N), the word a user plans it with
    p.add_argument("--devices", "--np", dest="devices", type=positive_int, default=8,
                   metavar="N", help="how many devices (GPUs, or CPU ranks; --np N as "
                                     "%%train takes it; default 8)")
    p.add_argument("--device-memory", type=byte_size, default=None,
                   metavar="SIZE", help="memory per device, e.g. 80GB (default: this "
                                        "machine's GPU's; without one, 80GB for a preset, "
                                        "and for mlp, cnn or a notebook's model this "
                                        "machine's memory shared by the ranks)")
    p.add_argument("--nodes", type=positive_int, default=1, metavar="K",
                   help="machines the devices are spread over (evenly)")
    p.add_argument("--bandwidth", type=_bandwidth, default=None, metavar="BW",
                   help="bytes/s per device between nodes, e.g. 25GB")
    p.add_argument("--intra-bandwidth", type=_bandwidth, default=None, metavar="BW",
                   help="bytes/s between devices of one node, e.g. 150GB")
    p.add_argument("--flops", type=positive_float, default=None, metavar="F",
                   help="sustained flop/s of one device (default 1.5e14)")
    p.add_argument("--global-batch", type=positive_int, default=None, metavar="B",
                   help="sequences per optimizer step (default: ~1M tokens)")
    p.add_argument("--seq-len", type=positive_int, default=None, metavar="T",
                   help="tokens per sequence (default: the preset's, 4096 for 7b)")
    p.add_argument("--precision", type=_precision, choices=tuple(PRECISIONS), default="bf16",
                   help="bytes per weight: bf16 or fp16 (2, the default), fp32 (4); "
                        "%%train's bf16-mixed, fp16-mixed and 32 are taken too")
    p.add_argument("--top", type=positive_int, default=8, metavar="N",
                   help="rows of the table (default 8)")
    notebook_only(p.add_argument("-o", "--output", metavar="NAME", default=None,
                                 help="store the plan in the notebook variable NAME"))


def to_kwargs(values: dict) -> dict:
    """Keyword arguments of :func:`skiff.kernels.train.plan.plan` from parsed values."""
    from skiff.kernels.train.plan import PRESETS
    from skiff.kernels.train.plan.cost import LIVE_BUILTINS  # %train's mlp, cnn: built

    model = values["model"]
    if model.lower() not in PRESETS and model.lower() not in LIVE_BUILTINS:
        raise unknown_name("model", model, [*PRESETS, *LIVE_BUILTINS])
    if values["devices"] % values["nodes"]:
        raise ValueError(f"--devices {values['devices']} must split evenly over "
                         f"--nodes {values['nodes']}")
    return {"devices": values["devices"], "device_memory": values["device_memory"],
            "nodes": values["nodes"], "bandwidth": values.get("bandwidth"),
            "intra_bandwidth": values.get("intra_bandwidth"), "flops": values.get("flops"),
            "global_batch": values.get("global_batch"), "seq_len": values.get("seq_len"),
            "weight_bytes": PRECISIONS[values.get("precision", "bf16")],
            "top": values.get("top", 8)}


def run(values: dict):
    from skiff.kernels.train.plan import plan

    return plan(values["model"], **to_kwargs(values))


def cli(ns: argparse.Namespace) -> tuple[dict, str]:
    """(JSON document, text) for ``python -m skiff plan``."""
    result = run(vars(ns))
    return result.to_json(), repr(result)
