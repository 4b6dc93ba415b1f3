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

    def to_json_string(self, use_diff: bool = True) -> str:
        import json

        return json.dumps(self.to_diff_dict() if use_diff else self.to_dict(), indent=2,
                          sort_keys=True, default=_plain) + "\n"

    def save_pretrained(self, save_directory, config_file_name=None, push_to_hub=False,
                        **kwargs) -> None:
        """transformers' ``GenerationConfig.save_pretrained(DIR)``: ``DIR/generation_config.json``
        (the options set), which ``GenerationConfig.from_pretrained(DIR)`` and
        ``from_pretrained`` read back (round 37)."""
        from pathlib import Path

        if push_to_hub:
            raise ValueError("push_to_hub is not supported: save to a folder and upload it")
        folder = Path(save_directory).expanduser()
        if folder.is_file():
            raise AssertionError(f"Provided path ({save_directory}) should be a directory, "
                                 "not a file")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / (config_file_name or "generation_config.json")).write_text(
            self.to_json_string())

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


def _plain(value):
    """A numpy value (an id set from an array) as JSON's."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"generation_config value {value!r} is not JSON")


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
