"""``skiff.models``: the built-in models (``MLP``, ``CNN``, ``GPT``), ``get(name)``, and open
models from their checkpoints: ``from_pretrained(DIR)`` (ERNIE-4.5, dense and MoE, in the
Hugging Face layout) and ``save_pretrained(model, DIR)``; LoRA adapters with ``apply_lora``,
``merge_lora``, ``save_adapter`` and ``load_adapter`` (peft's layout); ``load_tokenizer(DIR)`` and
``reply(model, prompt)`` (an answer through the checkpoint's chat template); ``ChatDataset``
(conversations tokenized through a chat template, trained on the assistant's tokens).

The public name of :mod:`skiff.kernels.train.models`; the same classes."""

from skiff.kernels.train import models as _real
from skiff.kernels.train.models import (  # noqa: F401
    BUILTIN_DATA,
    BUILTIN_MODELS,
    CNN,
    DEFAULT_DATA,
    GPT,
    MLP,
    ErnieConfig,
    ErnieForCausalLM,
    GPTConfig,
    apply_lora,
    from_pretrained,
    get,
    load_adapter,
    load_tokenizer,
    merge_lora,
    names,
    reply,
    save_adapter,
    save_pretrained,
)
from skiff.kernels.train.models.chat import ChatDataset  # noqa: F401

# the same names as skiff.kernels.train.models, and the chat dataset its fine-tunes train on
__all__ = [*_real.__all__, "ChatDataset"]
