"""The whole model's weights from any checkpoint a Trainer wrote, read in one process.

Here, above both ``train.checkpoint`` (one-file checkpoints) and ``parallel.checkpoint``
(sharded ones), so neither imports the other back."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from skiff.kernels.train.checkpoint import load_checkpoint, load_latest

from .checkpoint import load_sharded
from .comm import SelfComm
from .relayout import newest_steps


def model_weights(path: str | os.PathLike) -> dict:
    """The whole model's weights (name -> array) in what a Trainer wrote, read in this one
    process: a one-file checkpoint (``step-N.npz``), a sharded one of several ranks (its
    ``step-N/`` folder, any strategy: dp and ZeRO keep the model whole, tp and pp in pieces
    joined here), the ``latest`` file naming one, or a checkpoint directory (its newest).
    A frozen base (LoRA) is not in checkpoints: only what trained comes back."""
    path = Path(path)
    if path.name == "latest" and path.is_file():  # the pointer: the folder it names
        path = path.parent / path.read_text().strip()
    if path.is_file():
        state = load_checkpoint(path)
        return dict(state["model"]) if isinstance(state.get("model"), dict) else state
    if not path.is_dir():
        raise FileNotFoundError(f"no checkpoint at {str(path)!r}")
    if not (path / "manifest.json").is_file():  # a checkpoint directory: its newest
        one, sharded = newest_steps(path)
        if one is None and sharded is None:
            raise FileNotFoundError(f"no checkpoint in {str(path)!r} (step-N.npz files or "
                                    "step-N/ folders)")
        if sharded is None or (one is not None and one > sharded):
            return dict(load_latest(path)[1]["model"])

    found = load_sharded(path, SelfComm(), exact=(path / "manifest.json").is_file())
    if found is None:
        raise FileNotFoundError(f"no complete checkpoint in {str(path)!r}")
    replicated = found["replicated"] or {}
    for key in ("model", "full_model"):  # dp and ZeRO: rank 0 wrote the whole model
        if isinstance(replicated.get(key), dict):
            return dict(replicated[key])
    pieces = {k.removeprefix("model/"): np.asarray(v)
              for k, v in (found["pieces"] or {}).items() if k.startswith("model/")}
    if not pieces:
        raise ValueError(f"{str(path)!r}: a sharded checkpoint without model weights")
    return pieces
