"""Names of the built-in models and data sets (no heavy imports: the grammar reads these).

A built-in model name maps to ``"module:factory"``; :func:`skiff.kernels.train.models.get`
imports the factory on first use. Each built-in model has a default data set, so
``%train gpt-mini`` needs no DATA.
"""

from __future__ import annotations

__all__ = ["BUILTIN_MODELS", "DEFAULT_DATA", "BUILTIN_DATA", "FROM_CHECKPOINT", "unknown_model"]

BUILTIN_MODELS: dict[str, str] = {
    "mlp": "skiff.kernels.train.models.mlp:mlp",
    "cnn": "skiff.kernels.train.models.cnn:cnn",
    "gpt-mini": "skiff.kernels.train.models.gpt:gpt_mini",
    "gpt-small": "skiff.kernels.train.models.gpt:gpt_small",
    "gpt-moe": "skiff.kernels.train.parallel.moe:gpt_moe_preset",  # mixture of experts (parallel)
    # ERNIE-4.5 (dense or MoE) from a checkpoint folder in the Hugging Face layout: get("ernie",
    # path=DIR), %train ernie DATA --from DIR
    "ernie": "skiff.kernels.train.models.hf_checkpoint:ernie_from_folder",
}

# models loaded from a checkpoint folder (they need --from DIR / path=DIR)
FROM_CHECKPOINT: tuple[str, ...] = ("ernie",)

DEFAULT_DATA: dict[str, str] = {
    "mlp": "blobs",
    "cnn": "shapes",
    "gpt-mini": "classics",
    "gpt-small": "classics",
    "gpt-moe": "classics",
    "ernie": "classics",  # tokenized with the checkpoint's own tokenizer
}

# text corpora shipped in skiff/data/corpus, and small synthetic sets made on the fly
BUILTIN_DATA: dict[str, str] = {
    "classics": "the shipped public-domain texts (sonnets and prose), byte-level",
    "sonnets": "Shakespeare's sonnets (a selection), byte-level",
    "prose": "public-domain prose and verse, byte-level",
    "blobs": "synthetic 2-D points in 4 Gaussian classes (for mlp)",
    "shapes": "synthetic 1x16x16 images of 4 shapes (for cnn)",
}


def unknown_model(name) -> ValueError:
    return ValueError(f"unknown model {name!r}: built-in models are "
                      f"{', '.join(BUILTIN_MODELS)}")
