"""Reference models: :class:`MLP`, :class:`CNN` and :class:`GPT` (``gpt-mini``, ``gpt-small``),
and open models from their published checkpoints: :class:`ErnieForCausalLM` (ERNIE-4.5, dense
and MoE).

``models.get("gpt-mini")`` builds a built-in model by name; an unknown name lists them.
``models.from_pretrained(DIR)`` loads a checkpoint folder in the Hugging Face layout and
``models.save_pretrained(model, DIR)`` writes one (transformers loads it back);
``models.load_adapter(model, DIR)`` puts a peft adapter folder on a model,
``models.load_tokenizer(DIR)`` reads its tokenizer and ``models.reply(model, prompt)``
answers a prompt through its chat template.
Classes import on first use, so ``import skiff.kernels.train.models`` stays light.
"""

from __future__ import annotations

import importlib

from .registry import BUILTIN_DATA, BUILTIN_MODELS, DEFAULT_DATA, unknown_model

__all__ = ["MLP", "CNN", "GPT", "GPTConfig", "ErnieForCausalLM", "ErnieConfig", "get", "names",
           "from_pretrained", "save_pretrained", "apply_lora", "merge_lora", "save_adapter",
           "load_adapter", "load_tokenizer", "reply", "BUILTIN_MODELS", "BUILTIN_DATA",
           "DEFAULT_DATA"]

_CLASSES = {"MLP": ".mlp", "CNN": ".cnn", "GPT": ".gpt", "GPTConfig": ".gpt",
            "PRESETS": ".gpt", "ErnieForCausalLM": ".ernie", "ErnieConfig": ".ernie",
            "from_pretrained": ".hf_checkpoint", "save_pretrained": ".hf_checkpoint",
            "apply_lora": ".lora", "merge_lora": ".lora", "save_adapter": ".lora",
            "load_adapter": ".lora",
            "load_tokenizer": ".tokenizer", "reply": ".chat_reply"}


def names() -> list[str]:
    """Names of the built-in models."""
    return list(BUILTIN_MODELS)


def get(name: str, **overrides):
    """A fresh built-in model by name (``"mlp"``, ``"cnn"``, ``"gpt-mini"``, ``"gpt-small"``),
    or a checkpoint's (``get("ernie", path=DIR)``, the same as ``from_pretrained(DIR)``).

    Keyword overrides go to the model's config (e.g. ``get("gpt-mini", n_layer=2)``).
    """
    if not isinstance(name, str) or name not in BUILTIN_MODELS:
        raise unknown_model(name)
    module, _, factory = BUILTIN_MODELS[name].partition(":")
    return getattr(importlib.import_module(module), factory)(**overrides)


def __getattr__(name):
    if name in _CLASSES:
        mod = importlib.import_module(_CLASSES[name], __name__)
        return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
