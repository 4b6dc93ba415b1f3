"""``model.generation_config`` as transformers users handle it (round 29): the checkpoint's
``generation_config.json`` values, a dict that also reads and writes as transformers'
``GenerationConfig`` (``model.generation_config.pad_token_id = tok.pad_token_id`` was an
AttributeError on the plain dict). An option not set reads None, as in transformers 5
(generate resolves it); a value set by attribute is a key, so ``generate`` and
``save_pretrained`` see it."""

from __future__ import annotations

__all__ = ["GenerationDefaults", "as_generation_config"]

# the options a script reads; transformers 5 leaves each None until generate resolves it
DEFAULTS = dict.fromkeys((
    "max_length", "max_new_tokens", "min_length", "min_new_tokens", "do_sample", "num_beams",
    "temperature", "top_k", "top_p", "min_p", "typical_p", "repetition_penalty",
    "no_repeat_ngram_size", "length_penalty", "early_stopping", "num_return_sequences",
    "pad_token_id", "bos_token_id", "eos_token_id", "use_cache", "penalty_alpha",
    "stop_strings", "output_scores", "output_logits", "return_dict_in_generate",
    "bad_words_ids", "suppress_tokens", "begin_suppress_tokens", "sequence_bias",
    "forced_eos_token_id", "max_time", "num_beam_groups", "diversity_penalty",
    "output_attentions", "output_hidden_states"))


class GenerationDefaults(dict):
    """The checkpoint's generation options (a dict of what is set), with attribute access
    as transformers' ``GenerationConfig``: a missing option reads as its default there."""

    def __getattr__(self, name):
        if name in self:
            return self[name]
        if name in DEFAULTS:
            return DEFAULTS[name]
        raise AttributeError(f"generation_config has no option {name!r}")

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        self.pop(name, None)

    def to_dict(self) -> dict:
        return {**DEFAULTS, **self}

    def to_diff_dict(self) -> dict:
        return dict(self)

    def update(self, *args, **kwargs):  # GenerationConfig.update(**kwargs) and dict's
        dict.update(self, *args, **kwargs)
        return {}

    def __copy__(self):
        return GenerationDefaults(self)

    def __deepcopy__(self, memo):
        import copy

        return GenerationDefaults(copy.deepcopy(dict(self), memo))

    def __reduce__(self):
        return (GenerationDefaults, (dict(self),))


def as_generation_config(value) -> GenerationDefaults:
    """A dict, None or a transformers ``GenerationConfig`` (what it sets) as
    :class:`GenerationDefaults`."""
    if value is None:
        return GenerationDefaults()
    if isinstance(value, dict):
        return GenerationDefaults(value)
    if hasattr(value, "to_diff_dict"):
        return GenerationDefaults({k: v for k, v in value.to_diff_dict().items()
                                   if k != "transformers_version"})
    raise TypeError(f"generation_config must be a dict or a transformers GenerationConfig, "
                    f"got {type(value).__name__}")
