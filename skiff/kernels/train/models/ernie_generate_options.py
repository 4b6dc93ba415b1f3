"""The rest of transformers' ``generate()`` options, for ERNIE-4.5's ``generate``.

``resolve_options(given, options)`` reads what a transformers user passes beyond skiff's
named arguments: ``max_length`` / ``min_length`` (total lengths, turned into new-token
counts), ``min_new_tokens``, ``no_repeat_ngram_size``, ``num_return_sequences``,
``return_dict_in_generate`` with ``output_scores`` / ``output_logits``, a
``generation_config`` (a transformers ``GenerationConfig`` or a dict; the arguments given
win) and the beam-only ``length_penalty`` / ``early_stopping`` (ignored without beams, as
transformers ignores them). Options skiff does not implement (diverse beam groups,
constraints, ...) are one error naming them when set to
anything but their neutral value; unknown names are one error too (transformers: "not used
by the model"), never silently dropped.

:class:`StepChooser` picks each step's tokens with transformers' processors in their order
(repetition penalty, no-repeat n-grams, min new tokens; then temperature, top-k, top-p when
sampling) and keeps the step's ``scores`` (the processed logits, as transformers'
``output_scores``) and raw ``logits``. :class:`GenerateOutput` is what
``return_dict_in_generate=True`` returns (``.sequences``, ``.scores``, ``.logits``).
"""

from __future__ import annotations

import warnings

import numpy as np

from .ernie_generate import is_torch_generator, repetition_penalty_, sampling_probs
from .ernie_generate_processors import OPTIONS as PROCESSOR_OPTIONS

__all__ = ["GenerateOutput", "StepChooser", "resolve_options", "expand_rows"]

# Arguments skiff's generate names itself: a generation_config fills them when not given.
NAMED = ("max_new_tokens", "do_sample", "temperature", "top_k", "top_p", "repetition_penalty",
         "eos_token_id", "pad_token_id", "stop_strings")
# transformers' options skiff reads here, with their defaults.
EXTRA = {"max_length": None, "min_length": None, "min_new_tokens": None,
         "no_repeat_ngram_size": None, "num_return_sequences": 1,
         "return_dict_in_generate": False, "output_scores": False, "output_logits": False,
         "num_beams": 1, "length_penalty": None, "early_stopping": None,
         **PROCESSOR_OPTIONS}
# transformers' options skiff does not implement, with the value that means "off".
UNSUPPORTED = {"num_beam_groups": 1, "diversity_penalty": 0.0,
               "force_words_ids": None, "constraints": None,
               "max_time": None, "dola_layers": None,
               "watermarking_config": None, "past_key_values": None, "token_healing": False,
               "low_memory": None, "cache_implementation": None, "synced_gpus": None}
# accepted and without effect here (bookkeeping options of transformers)
HARMLESS = {"penalty_alpha",  # contrastive search (ernie_contrastive) took it when it applies
            # without return_dict_in_generate transformers returns the ids alone: no states
            "output_attentions", "output_hidden_states",
            "return_legacy_cache", "use_model_defaults", "cache_config", "bos_token_id",
            "decoder_start_token_id", "num_assistant_tokens", "transformers_version",
            "_from_model_config", "compile_config", "disable_compile",
            # prompt-lookup decoding is a speed-up only: transformers' greedy tokens are those
            # of plain greedy decoding (and sampled ones are drawn from the same distribution)
            "prompt_lookup_num_tokens", "max_matching_ngram_size",
            # assisted decoding's tuning (ernie_assisted; the tokens do not depend on it)
            "num_assistant_tokens_schedule", "assistant_confidence_threshold",
            "assistant_early_exit", "assistant_lookbehind", "target_lookbehind",
            "is_assistant"}


class GenerateOutput(dict):
    """transformers' ``GenerateDecoderOnlyOutput``: ``sequences`` (the ids ``generate``
    would return), ``scores`` (a tuple with one (B, V) float32 array per step: the logits
    after the processors, what the token was chosen from; None unless ``output_scores``)
    and ``logits`` (the raw logits per step; None unless ``output_logits``); ``cache`` (also
    read as ``past_key_values``) the key/value cache to continue (``ernie_past``). A dict
    whose keys are attributes; ``out[0]`` is ``sequences``. As transformers' outputs, the
    entries that are None are left out of the keys (``keys()``, ``len``, iteration) and read
    None as attributes."""

    FIELDS = ("sequences", "sequences_scores", "scores", "logits", "beam_indices",
              "attentions", "hidden_states", "cache", "past_key_values")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for k in [k for k, v in self.items() if v is None]:
            del self[k]

    def __setitem__(self, key, value):
        if value is None:
            self.pop(key, None)
        else:
            super().__setitem__(key, value)

    def __getattr__(self, name):
        if name == "past_key_values" and "cache" in self:  # transformers' older name
            name = "cache"
        try:
            return self[name]
        except KeyError:
            if name in self.FIELDS:
                return None
            raise AttributeError(name) from None

    def to_tuple(self) -> tuple:
        return tuple(self.values())

    def __getitem__(self, key):
        if isinstance(key, int):
            return list(v for v in self.values() if v is not None)[key]
        return super().__getitem__(key)


def _config_values(config) -> dict:
    """The values a ``generation_config`` sets (a transformers ``GenerationConfig``: those
    that differ from its defaults; a dict: all)."""
    if config is None:
        return {}
    if isinstance(config, dict):
        return dict(config)
    if hasattr(config, "to_diff_dict"):
        return dict(config.to_diff_dict())
    raise TypeError(f"generation_config must be a transformers GenerationConfig or a dict, "
                    f"got {type(config).__name__}")


def resolve_options(given: dict, options: dict, beams: bool = False) -> tuple[dict, dict]:
    """``(named, extra)``: skiff's named arguments (``given``, None or ``"config"`` for not
    given) completed from ``options["generation_config"]``, and the extra options of
    :data:`EXTRA` with their defaults (``ernie_generate_processors``' options among them).
    Unsupported or unknown options are one error;
    ``num_beams`` > 1 too unless ``beams`` (the caller runs ``ernie_beam.beam_search``)."""
    options = dict(options)
    from_config = _config_values(options.pop("generation_config", None))
    named = dict(given)
    for key, value in from_config.items():
        if key in NAMED:
            if named.get(key) in (None, "config"):
                named[key] = value
        elif key not in options:
            options[key] = value
    extra = dict(EXTRA)
    unsupported, unknown = [], []
    for key, value in options.items():
        if key in EXTRA:
            extra[key] = value
        elif key in UNSUPPORTED:
            if key == "diversity_penalty" and int(options.get("num_beam_groups") or 1) == 1:
                continue  # transformers' beams without groups: no effect (the same tokens)
            if not _neutral(value, UNSUPPORTED[key]):
                unsupported.append(f"{key}={value!r}")
        elif key not in HARMLESS:
            unknown.append(key)
    if unknown:
        raise ValueError(f"generate does not know {', '.join(sorted(unknown))} (a typo? "
                         "transformers: 'not used by the model'); skiff's generate takes "
                         f"{', '.join(NAMED)}, {', '.join(k for k in EXTRA)}, streamer, seed, "
                         "generator, tokenizer, attention_mask, generation_config")
    if int(extra["num_beams"] or 1) != 1 and not beams:
        unsupported.append(f"num_beams={extra['num_beams']!r} (beam search: "
                           "skiff.kernels.train.models.ernie_beam.generate_beams(model, ...))")
    forced = [u for u in unsupported if u.startswith(("force_words_ids=", "constraints="))]
    if forced:
        raise ValueError(f"skiff's generate does not support {', '.join(forced)} (constrained "
                         "beam search; transformers 5 runs it only from the Hub repository "
                         "transformers-community/constrained-beam-search): to make the words "
                         "likely pass sequence_bias={(word ids...): bias}, or put the words in "
                         "the prompt; to forbid others, bad_words_ids")
    if unsupported:
        raise ValueError(f"skiff's generate does not support {', '.join(unsupported)}: it "
                         "decodes greedily or by sampling (temperature, top_k, top_p, "
                         "repetition_penalty, no_repeat_ngram_size, min_new_tokens, "
                         "stop_strings); leave these out")
    for key in ("min_length", "min_new_tokens", "no_repeat_ngram_size", "max_length"):
        value = extra[key]
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 0):
            raise ValueError(f"{key} must be an integer >= 0, got {value!r}")
    n = extra["num_return_sequences"]
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"num_return_sequences must be an integer >= 1, got {n!r}")
    return named, extra


def _neutral(value, off) -> bool:
    if value is None or value is off:
        return True
    try:
        return bool(value == off)
    except Exception:  # arrays, callables: set
        return False


def new_token_counts(extra: dict, max_new_tokens, prompt_width: int) -> tuple[int, int]:
    """``(max_new, min_new)`` as transformers resolves them: ``max_new_tokens`` wins over
    ``max_length`` (prompt + new, the padded prompt width counted), default 20 new tokens;
    ``min_new_tokens`` wins over ``min_length`` likewise."""
    if max_new_tokens is None:
        if extra["max_length"] is not None:
            max_new_tokens = int(extra["max_length"]) - prompt_width
            if max_new_tokens <= 0:
                raise ValueError(f"max_length={extra['max_length']} leaves no new token after "
                                 f"a prompt of {prompt_width}: pass max_new_tokens")
        else:
            max_new_tokens = 20
    min_new = extra["min_new_tokens"]
    if min_new is None:
        min_new = max(int(extra["min_length"]) - prompt_width, 0) \
            if extra["min_length"] is not None else 0
        given = f"`min_length` ({extra['min_length']}) is larger than"
    else:
        given = (f"`min_new_tokens` ({min_new}), when added to the prompt length "
                 f"({prompt_width}), is larger than")
    if int(min_new) > max_new_tokens:  # transformers' warning, in its words
        warnings.warn(f"Unfeasible length constraints: {given} the maximum possible length "
                      f"({prompt_width + max_new_tokens}). Generation will stop at the defined "
                      "maximum length. You should decrease the minimum length and/or increase "
                      "the maximum length.", UserWarning, stacklevel=3)
    return max_new_tokens, int(min_new)


def expand_rows(values, n: int):
    """Each row ``n`` times in a row (transformers' ``num_return_sequences`` order:
    b0, b0, b1, b1, ...): an array along axis 0, or a list of prompts."""
    if n == 1 or values is None:
        return values
    if isinstance(values, (list, tuple)):
        return [v for v in values for _ in range(n)]
    return np.repeat(np.asarray(values), n, axis=0)


def _banned_ngrams(seen, n: int) -> list[int]:
    """Tokens that would repeat an n-gram of ``seen`` (transformers' no-repeat rule: the
    last n-1 tokens as a prefix that occurred before)."""
    seen = [int(t) for t in seen]
    if len(seen) + 1 < n:
        return []
    prefix = tuple(seen[len(seen) - n + 1:])
    return [seen[i + n - 1] for i in range(len(seen) - n + 1)
            if tuple(seen[i:i + n - 1]) == prefix]


class StepChooser:
    """Chooses each step's tokens from the model's logits as transformers' ``generate``:
    processors first (repetition penalty, no-repeat n-grams, eos forbidden before
    ``min_new`` new tokens), then greedy or a draw through temperature, top-k, top-p.
    Called once per step as ``chooser(logits (n, V), histories, rows)`` (``rows``: which of
    the ``batch`` rows these are, None: all); keeps the scores and raw logits asked for.
    ``padded``: each row's (padded prompt, real prompt length) when the prompts came
    padded, for the no-repeat n-grams (transformers' run over the padding too)."""

    def __init__(self, *, batch: int, do_sample: bool, temperature, top_k, top_p, penalty,
                 rng, eos: set, min_new: int = 0, no_repeat: int | None = None,
                 keep_scores: bool = False, keep_logits: bool = False, padded=None,
                 hooks=None, processors=None):
        self.batch, self.do_sample, self.rng = batch, do_sample, rng
        self.temperature, self.top_k, self.top_p, self.penalty = temperature, top_k or None, \
            top_p, penalty
        self.eos = sorted(eos)
        self.min_new, self.no_repeat = min_new, no_repeat or 0
        self.keep_scores, self.keep_logits = keep_scores, keep_logits
        # (padded prompt, real length) per row: transformers' n-grams run over the padded
        # ids, the padding included
        self.padded = padded
        # (B,) leading padding of a padded batch's rows run whole (ernie_masked_past): the
        # repetition penalty does not see it, as transformers' ``prompt_ignore_length``
        self.penalty_skip = None
        self.hooks = hooks  # the user's logits processors (ernie_generate_hooks)
        self.processors = processors  # ernie_generate_processors.ExtraProcessors
        self.scores: list[np.ndarray] = []
        self.logits: list[np.ndarray] = []
        self.step = 0

    def _rows(self, histories, rows):
        """The rows' ids as transformers holds them (a padded prompt as given)."""
        if self.padded is None:
            return histories
        out = []
        for b, seen in enumerate(histories):
            full, n = self.padded[b if rows is None else int(rows[b])]
            out.append([*full, *list(seen)[n:]])
        return out

    def __call__(self, logits: np.ndarray, histories, rows=None) -> np.ndarray:
        z = np.asarray(logits, dtype=np.float64)  # edited in place (a float64 copy or the
        # caller's fresh array)
        if self.keep_logits:
            self.logits.append(self._full(z, rows))
        extra = self.processors if self.processors else None
        if extra is not None:
            extra.early(z, self._rows(histories, rows), self.step, rows)
        if self.penalty != 1.0:
            skip = self.penalty_skip  # transformers' prompt_ignore_length: leading padding
            repetition_penalty_(z, histories if skip is None else
                                [list(h)[int(s):] for h, s in zip(histories, skip)],
                                self.penalty)
        if self.no_repeat:
            for b, seen in enumerate(histories):
                if self.padded is not None:
                    full, n = self.padded[b if rows is None else int(rows[b])]
                    seen = [*full, *list(seen)[n:]]
                banned = _banned_ngrams(seen, self.no_repeat)
                if banned:
                    z[b, banned] = -np.inf
        if extra is not None:
            extra.middle(z, self._rows(histories, rows), rows)
        if self.step < self.min_new and self.eos:
            z[:, self.eos] = -np.inf
        if extra is not None:
            extra.late(z, self.step)
        if self.hooks:
            z = self._user(z, histories, rows)
        self.step += 1
        renorm = extra is not None and extra.renormalize
        if not self.do_sample:
            if self.keep_scores:
                self.scores.append(self._full(_log_softmax(z) if renorm else z, rows))
            return z.argmax(axis=-1).astype(np.int64)
        if extra is not None and extra.top_h is not None:
            extra.top_h_(z, self.temperature)  # after the temperature, before top-k
        p = sampling_probs(z, self.temperature, self.top_k, self.top_p)
        if extra is not None:
            p = extra.warp(p)
        if self.keep_scores:  # the warped logits: z / T where kept, -inf where cut
            kept = np.where(p > 0, z / self.temperature, -np.inf)
            self.scores.append(self._full(_log_softmax(kept) if renorm else kept, rows))
        if is_torch_generator(self.rng):
            return self._torch_draw(p, rows)
        return np.array([self.rng.choice(p.shape[1], p=row) for row in p], dtype=np.int64)

    def _user(self, z: np.ndarray, histories, rows) -> np.ndarray:
        """The user's processors, given every row as transformers passes them (round 41):
        once rows of the packed loop have finished, :meth:`UserHooks.process_rows`."""
        hooks = self.hooks
        if rows is None or len(rows) == self.batch:
            if not isinstance(histories, np.ndarray):  # the packed loop's growing rows
                hooks.every = list(histories)
            return hooks.process(z, hooks.rows(self._rows(histories, rows)))
        return hooks.process_rows(z, rows)

    def _torch_draw(self, p: np.ndarray, rows) -> np.ndarray:
        """transformers' draw, ``torch.multinomial(probs, 1)`` over the whole batch (a row
        that left the packed batch gets a stand-in row: the draw uses as many random numbers
        as transformers', so the generator stays in step with its)."""
        import torch

        full = p.astype(np.float32)
        if rows is not None and len(rows) != self.batch:
            full = np.full((self.batch, p.shape[1]), 1.0 / p.shape[1], dtype=np.float32)
            full[np.asarray(rows)] = p
        out = torch.multinomial(torch.from_numpy(full), 1, generator=self.rng)[:, 0].numpy()
        return out if rows is None or len(rows) == self.batch else out[np.asarray(rows)]

    def _full(self, z: np.ndarray, rows) -> np.ndarray:
        """(batch, V) float32 of this step; rows that have finished (left the packed batch)
        are NaN."""
        if rows is None or len(rows) == self.batch:
            return z.astype(np.float32)
        out = np.full((self.batch, z.shape[1]), np.nan, dtype=np.float32)
        out[np.asarray(rows)] = z
        return out

    def output(self, sequences, extra: dict):
        """``sequences`` or, with ``return_dict_in_generate``, a :class:`GenerateOutput`."""
        if not extra["return_dict_in_generate"]:
            return sequences
        return GenerateOutput(
            sequences=sequences,
            scores=tuple(self.scores) if extra["output_scores"] else None,
            logits=tuple(self.logits) if extra["output_logits"] else None)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    """transformers' ``LogitNormalization`` (``renormalize_logits``): log-probabilities."""
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
