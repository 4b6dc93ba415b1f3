"""Growing (or cutting) an ERNIE-4.5 model's vocabulary: transformers'
``model.resize_token_embeddings(len(tok))`` after tokens were added to the tokenizer.

The embedding table, the head (the same Parameter when tied) and its bias are resized in
place, ``config.vocab_size`` follows; the rows kept are the old ones. New rows are
initialised as transformers initialises them: with ``mean_resizing`` (the default) drawn from
a normal with the old rows' mean and 1e-9 times their covariance (the mean itself when that
covariance is not positive definite), a new bias entry the old biases' mean; without it
N(0, ``initializer_range``) rows and zero biases (a tied head's new biases are 0 either
way, as transformers pads them). A model with LoRA adapters cannot be
resized (resize first, then ``apply_lora``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["resize_token_embeddings"]


def _mean_rows(old: np.ndarray, added: int, rng) -> np.ndarray:
    """``added`` rows around the mean of ``old``'s rows, as transformers'
    ``_init_added_embeddings_weights_with_mean`` draws them (float32 statistics)."""
    w = old.astype(np.float32)
    mean = w.mean(axis=0)
    centered = w - mean
    cov = (centered.T @ centered / w.shape[0]) * np.float32(1e-9)
    try:
        chol = np.linalg.cholesky(cov.astype(np.float64))
    except np.linalg.LinAlgError:  # not positive definite: the mean itself
        return np.repeat(mean[None], added, axis=0)
    noise = rng.standard_normal((added, w.shape[1]))
    return (mean + noise @ chol.T).astype(np.float32)


def _resized(data: np.ndarray, n: int, fill) -> np.ndarray:
    out = np.empty((n,) + data.shape[1:], dtype=data.dtype)
    keep = min(n, data.shape[0])
    out[:keep] = data[:keep]
    if n > keep:
        out[keep:] = fill(n - keep).astype(data.dtype)
    return out


def resize_token_embeddings(model, new_num_tokens: int | None = None,
                            pad_to_multiple_of: int | None = None, mean_resizing: bool = True,
                            seed: int | None = None):
    """Resize ``model``'s token embeddings (and untied head) to ``new_num_tokens`` rows
    (rounded up to ``pad_to_multiple_of``); returns the embedding module, as transformers.
    ``seed`` seeds the new rows' draw."""
    from .lora import has_lora

    emb = model.model.embed_tokens
    old = emb.weight._data
    if pad_to_multiple_of is not None:
        if not isinstance(pad_to_multiple_of, (int, np.integer)) or pad_to_multiple_of < 1:
            raise ValueError(f"pad_to_multiple_of must be a positive integer, got "
                             f"{pad_to_multiple_of!r}")
        if new_num_tokens is None:
            new_num_tokens = old.shape[0]
        new_num_tokens = -(-int(new_num_tokens) // int(pad_to_multiple_of)) \
            * int(pad_to_multiple_of)
    if new_num_tokens is None:
        return emb
    n = int(new_num_tokens)
    if n < 1:
        raise ValueError(f"new_num_tokens must be >= 1, got {new_num_tokens!r}")
    if n == old.shape[0]:
        return emb
    if has_lora(model):
        raise ValueError("resize_token_embeddings on a model with LoRA adapters: resize "
                         "before apply_lora (the adapters hold the head's old size)")
    if not isinstance(old, np.ndarray):
        raise ValueError("resize_token_embeddings runs on host weights: resize before "
                         "moving the model to a GPU")
    rng = np.random.default_rng(seed)
    std = float(model.config.extra.get("initializer_range", 0.02))

    def rows_like(data):
        if mean_resizing:
            return lambda k: _mean_rows(data, k, rng)
        return lambda k: rng.standard_normal((k, data.shape[1])) * std

    emb.weight._data = _resized(old, n, rows_like(old))
    emb.num_embeddings = n
    head = model.lm_head
    if model.config.tie_word_embeddings:
        head.weight = emb.weight
    else:
        head.weight._data = _resized(head.weight._data, n, rows_like(head.weight._data))
    if getattr(head, "bias", None) is not None:
        bias = head.bias._data
        # untied: the old biases' mean (transformers' mean resizing); tied: 0, as
        # transformers pads the head's bias when it ties the grown table again
        tied = model.config.tie_word_embeddings
        value = float(bias.astype(np.float32).mean()) if mean_resizing and not tied else 0.0
        head.bias._data = _resized(bias, n, lambda k: np.full(k, value))
    if hasattr(head, "out_features"):
        head.out_features = n
    model.config.vocab_size = n
    return emb
