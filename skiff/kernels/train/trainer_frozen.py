"""Checkpoints of a run whose base is frozen (a LoRA fine-tune): only what trains is stored.

A model with frozen parameters (``requires_grad = False``: :func:`~.models.lora.apply_lora`
freezes the whole base) keeps them unchanged for the whole run, so a checkpoint that holds
them holds a copy of the base each time: gigabytes per checkpoint for a real model, for a
few megabytes of adapters. :func:`trainable_model_state` keeps the model state's trainable
parameters, buffers and extra state, and :func:`frozen_record` says which base they go with:
its source folder (``model.source_folder`` when it was loaded from one) and a cheap
fingerprint of every frozen array (shape, dtype and a CRC of at most 4,096 evenly spaced
values). :func:`check_frozen` compares that record with the model a run resumes into, so
resuming on another base (or a base changed since) is one clear error instead of adapters
trained on one base silently applied to another.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

__all__ = ["frozen_names", "trainable_model_state", "frozen_record", "check_frozen"]

SAMPLES = 4096  # values of each frozen array that go into its fingerprint


def frozen_names(model) -> list[str]:
    """Every name of every frozen parameter (a tied one under each of its names)."""
    names = []
    for name, p in _all_named_parameters(model):
        if not getattr(p, "requires_grad", True):
            names.append(name)
    return names


def _all_named_parameters(model):
    try:
        return list(model.named_parameters(remove_duplicate=False))
    except TypeError:  # a module whose named_parameters takes no such argument
        return list(model.named_parameters())


def trainable_model_state(model, state: dict, frozen: list[str]) -> dict:
    """``state`` (the model's state dict) without the frozen parameters."""
    drop = set(frozen)
    return {k: v for k, v in state.items() if k not in drop}


def _fingerprint(p) -> str:
    """shape, dtype and a CRC32 of at most ``SAMPLES`` evenly spaced values of ``p``."""
    data = getattr(p, "_data", p)
    flat = data.reshape(-1)
    step = max(1, int(flat.size) // SAMPLES)
    sample = flat[::step][:SAMPLES]
    if not isinstance(sample, np.ndarray) and hasattr(sample, "get"):  # a device array
        sample = sample.get()
    sample = np.ascontiguousarray(np.asarray(sample))
    crc = zlib.crc32(sample.view(np.uint8).tobytes())
    return f"{tuple(int(s) for s in data.shape)}|{sample.dtype}|{crc:08x}"


def frozen_record(model, frozen: list[str]) -> dict:
    """What identifies the frozen base: its source folder and each frozen array's print."""
    params = dict(_all_named_parameters(model))
    return {"source": getattr(model, "source_folder", None),
            "fingerprints": {n: _fingerprint(params[n]) for n in frozen}}


def check_frozen(model, record: dict, where: str = "the checkpoint") -> None:
    """Raise ValueError when ``model``'s frozen base is not the one ``record`` was made on."""
    want = record.get("fingerprints")
    frozen = frozen_names(model)
    source = record.get("source")
    named = f" (saved from base {source})" if source else ""
    here = getattr(model, "source_folder", None)
    fix = (f"load the same base (from_pretrained({source!r})) and apply the same adapters "
           "before resuming" if source else "resume on the model the run started with")
    if want is None:  # another layout's slices of the base: their prints do not compare
        if source and here and Path(str(source)).resolve() != Path(str(here)).resolve():
            raise ValueError(f"{where} was trained on another base{named}, this model's base "
                             f"is {here}: {fix}")
        return
    if sorted(frozen) != sorted(want):
        extra = sorted(set(want) - set(frozen))[:3]
        lacking = sorted(set(frozen) - set(want))[:3]
        raise ValueError(
            f"{where} holds only the trained parameters of a run whose base was frozen"
            f"{named}, and this model freezes other parameters (the checkpoint's frozen "
            f"parameters not frozen here: {extra or 'none'}; frozen here only: "
            f"{lacking or 'none'}): {fix}")
    params = dict(_all_named_parameters(model))
    differ = [n for n in frozen if _fingerprint(params[n]) != want[n]]
    if differ:
        on = f" (this model's base: {here})" if here else ""
        raise ValueError(
            f"{where} was trained on another base{named}: {len(differ)} of its "
            f"{len(frozen)} frozen arrays differ here{on}, first {differ[0]!r}: {fix}")
