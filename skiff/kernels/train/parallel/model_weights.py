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


def model_weights(path: str | os.PathLike, model=None) -> dict:
    """The whole model's weights (name -> array) in what a Trainer wrote, read in this one
    process: a one-file checkpoint (``step-N.npz``), a sharded one of several ranks (its
    ``step-N/`` folder, any strategy: dp and ZeRO keep the model whole, tp and pp in pieces
    joined here), the ``latest`` file naming one, or a checkpoint directory (its newest).

    A frozen base (a LoRA fine-tune's) is not in checkpoints: only what trained comes back,
    with the record of the base it trained on (``.frozen``). Give ``model`` (the base loaded
    and the same adapters applied, as for the run) to get every weight: the base it holds
    is checked against the record (its source folder; with dp, ZeRO or one device each
    frozen array's print too) and its frozen arrays (and buffers the checkpoint left out)
    fill in the rest, so
    ``model.load_state_dict(model_weights(path, model))`` loads a tp, pp or ep fine-tune's
    checkpoint (without ``model`` its frozen keys were "missing", round 35)."""
    weights, record = _read(Path(path))
    if record is None:
        return weights
    frozen = {"source": record.get("source"), "fingerprints": None}
    prints = record.get("fingerprints")
    if type(prints) is dict:  # a whole model's (one device, dp, ZeRO); tp/pp/ep's: per rank
        frozen["fingerprints"] = prints
    if model is None:
        return _trained_weights(weights, frozen)
    return _with_base(weights, frozen, model, str(path))


def _read(path: Path) -> tuple[dict, dict | None]:
    """The checkpoint's model weights and its frozen base's record (None: none frozen)."""
    if path.name == "latest" and path.is_file():  # the pointer: the folder it names
        path = path.parent / path.read_text().strip()
    if path.is_file():
        state = load_checkpoint(path)
        if not isinstance(state.get("model"), dict):
            return state, None
        return dict(state["model"]), _record(state)
    if not path.is_dir():
        raise FileNotFoundError(f"no checkpoint at {str(path)!r}")
    if not (path / "manifest.json").is_file():  # a checkpoint directory: its newest
        one, sharded = newest_steps(path)
        if one is None and sharded is None:
            raise FileNotFoundError(f"no checkpoint in {str(path)!r} (step-N.npz files or "
                                    "step-N/ folders)")
        if sharded is None or (one is not None and one > sharded):
            state = load_latest(path)[1]
            return dict(state["model"]), _record(state)

    found = load_sharded(path, SelfComm(), exact=(path / "manifest.json").is_file())
    if found is None:
        raise FileNotFoundError(f"no complete checkpoint in {str(path)!r}")
    replicated = found["replicated"] or {}
    for key in ("model", "full_model"):  # dp and ZeRO: rank 0 wrote the whole model
        if isinstance(replicated.get(key), dict):
            return dict(replicated[key]), _record(replicated)
    pieces = {k.removeprefix("model/"): np.asarray(v)
              for k, v in (found["pieces"] or {}).items() if k.startswith("model/")}
    if not pieces:
        raise ValueError(f"{str(path)!r}: a sharded checkpoint without model weights")
    return pieces, _record(replicated)


def _record(state: dict) -> dict | None:
    record = state.get("frozen")
    return record if isinstance(record, dict) else None


def _trained_weights(weights: dict, frozen: dict) -> dict:
    """What trained, as ``Module.load_state_dict`` knows a frozen base's checkpoint: with
    the whole model's prints it checks the base and counts its arrays as present."""
    try:
        from skiff.kernels.train.core.nn.module import _TrainedWeights
    except ImportError:  # pragma: no cover - core without it: a dict that says the same
        _TrainedWeights = None
    if _TrainedWeights is not None:
        return _TrainedWeights(weights, frozen)
    out = dict(weights)
    out.frozen = frozen  # type: ignore[attr-defined]
    return out


def _with_base(weights: dict, frozen: dict, model, where: str) -> dict:
    """``weights`` with ``model``'s frozen arrays added, once its base is checked."""
    from skiff.kernels.train.trainer_frozen import check_frozen, frozen_names

    names = frozen_names(model)
    source = frozen.get("source")
    if not names:
        raise ValueError(
            f"the checkpoint {where} holds only the trained weights of a run whose base was "
            f"frozen{f' ({source})' if source else ''}, and this {type(model).__name__} "
            "freezes nothing: load that base and apply the same adapters (apply_lora with the "
            "run's r, alpha and targets) before loading it")
    check_frozen(model, frozen, where=f"the checkpoint {where}")
    state = model.state_dict()
    trained = {n for n, p in model.named_parameters() if getattr(p, "requires_grad", True)}
    out = dict(weights)
    # the frozen parameters and the base's buffers a split checkpoint leaves out (an ERNIE
    # MoE's router bias under ep): as the resume of such a run takes them, from the model
    for name, value in state.items():
        if name not in out and name not in trained:
            out[name] = np.asarray(value)
    return out
