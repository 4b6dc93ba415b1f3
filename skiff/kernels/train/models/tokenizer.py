"""A checkpoint's own tokenizer: ``tokenizer.json`` (the ``tokenizers`` library) or
``tokenizer.model`` (SentencePiece, what the published ERNIE-4.5 folders ship).

Both give the same small interface: ``encode(text) -> ids`` (no special tokens added),
``encode_with_offsets(text)``, ``decode(ids) -> text``, ``vocab_size``, ``token_id(text)``
and the folder's chat template (``apply_chat_template``). ``tokenizer.json`` wins when a
folder has both, as in transformers.

Both are also called as transformers' tokenizers are: ``tok(texts, padding=True,
truncation=True, max_length=N, return_tensors="np")`` (a :class:`BatchEncoding` of
``input_ids`` and ``attention_mask``, padded on ``padding_side``), ``decode`` /
``batch_decode`` with ``skip_special_tokens``, ``eos_token_id``, ``pad_token_id`` and the
other special tokens of ``tokenizer_config.json``: equal to transformers' ``AutoTokenizer``
of the same folder.

The SentencePiece tokenizer encodes exactly as transformers' tokenizer built from the same
``tokenizer.model`` and ``tokenizer_config.json``:

* the added and special tokens of the config (``added_tokens_decoder``, ``bos_token`` ...,
  ``additional_special_tokens``, ``added_tokens.json``) are matched in the raw text first,
  and the pieces between them go through SentencePiece one by one;
* ``"legacy": true`` (the default) gives each of those pieces SentencePiece's dummy prefix
  (``"▁"``); ``"legacy": false`` only the piece at the start of the text, and not when the
  text starts with a space;
* decoding joins the pieces (byte-fallback pieces ``<0xNN>`` as bytes), turns ``"▁"`` into
  spaces and drops the one leading space the dummy prefix added.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np

from .tokenizer_added import EXTRA_KEYS, AddedTokensMixin
from .tokenizer_encoding import (
    KEYS,
    BatchEncoding,
    _tensor,
    assemble,
    overflow_windows,
    pad_rows,
    pair_lengths,
    rows_from_features,
)

__all__ = ["HFTokenizer", "SentencePieceTokenizer", "BatchEncoding", "load_tokenizer"]

_SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                  "cls_token", "mask_token")
_USER_DEFINED = 4  # SentencePiece.Type
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _missing(package: str, path) -> ImportError:
    return ImportError(f"{path} needs the {package} package (pip install "
                       "'skiff[open-models]')")


_LARGE = int(1e20)  # transformers' "no limit" model_max_length is larger than this
_UNLIMITED = int(1e30)  # transformers' VERY_LARGE_INTEGER: the model_max_length it reports
_CLEANUPS = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def _special_property(name: str):
    def get(self):
        return self.specials.get(name)

    def put(self, value):
        self.specials[name] = _token_text(value)

    return property(get, put, doc=f"The config's ``{name}`` (text), or None.")


def _special_id_property(name: str):
    def get(self):
        text = self.specials.get(name)
        return None if text is None else self.token_id(text)

    return property(get, doc=f"The id of ``{name}``, or None.")


class _CallMixin:
    """transformers' calling API over ``encode``/``decode``: ``tok(texts, padding=True,
    truncation=True, max_length=N, return_tensors="np")``, ``decode``/``batch_decode`` with
    ``skip_special_tokens``, the special tokens and their ids, ``padding_side``."""

    specials: dict
    path: Path

    bos_token = _special_property("bos_token")
    eos_token = _special_property("eos_token")
    pad_token = _special_property("pad_token")
    unk_token = _special_property("unk_token")
    sep_token = _special_property("sep_token")
    cls_token = _special_property("cls_token")
    mask_token = _special_property("mask_token")
    bos_token_id = _special_id_property("bos_token")
    eos_token_id = _special_id_property("eos_token")
    pad_token_id = _special_id_property("pad_token")
    unk_token_id = _special_id_property("unk_token")
    sep_token_id = _special_id_property("sep_token")
    cls_token_id = _special_id_property("cls_token")
    mask_token_id = _special_id_property("mask_token")

    def _read_config(self, folder: Path) -> dict:
        """The special tokens and settings of ``tokenizer_config.json`` (and
        ``special_tokens_map.json``), as transformers reads them."""
        config = _read_json(folder / "tokenizer_config.json")
        special_map = _read_json(folder / "special_tokens_map.json")
        self.specials = {}
        for name in _SPECIAL_NAMES:
            text = _token_text(config.get(name)) or _token_text(special_map.get(name))
            if text:
                self.specials[name] = text
        extra = [v for key in EXTRA_KEYS for v in (*(config.get(key) or []),
                                                    *(special_map.get(key) or []))]
        self.additional_special_tokens = list(dict.fromkeys(
            t for t in (_token_text(v) for v in extra) if t))
        decoder = config.get("added_tokens_decoder") or {}
        self._special_added = [  # the config's added tokens marked special, by id
            _token_text(decoder[k]) for k in sorted(decoder, key=lambda k: int(k))
            if isinstance(decoder[k], dict) and decoder[k].get("special")
            and _token_text(decoder[k])]
        side = config.get("padding_side", "right")
        self.padding_side = side if side in ("left", "right") else "right"
        side = config.get("truncation_side", "right")
        self.truncation_side = side if side in ("left", "right") else "right"
        limit = config.get("model_max_length")
        self.model_max_length = int(limit) if isinstance(limit, (int, float)) and \
            limit < _LARGE else _UNLIMITED
        self.clean_up_tokenization_spaces = bool(config.get("clean_up_tokenization_spaces",
                                                            False))
        # transformers 5 leaves BPE text as it is unless this says otherwise
        self._clean_bpe = bool(config.get(
            "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output", False))
        return config

    # -- special tokens ---------------------------------------------------------------------
    @property
    def special_tokens_map(self) -> dict:
        out = dict(self.specials)
        if self.additional_special_tokens:
            out["additional_special_tokens"] = list(self.additional_special_tokens)
        return out

    @property
    def all_special_tokens(self) -> list[str]:
        return list(dict.fromkeys([*self.specials.values(), *self.additional_special_tokens,
                                   *self._special_added]))

    @property
    def all_special_ids(self) -> list[int]:
        ids = (self.token_id(t) for t in self.all_special_tokens)
        return [i for i in ids if i is not None]

    def _skipped_ids(self) -> set[int]:
        """What ``skip_special_tokens`` leaves out: the special tokens and the added tokens
        marked special."""
        return set(self.all_special_ids) | self._backend_special_ids()

    def _backend_special_ids(self) -> set[int]:
        return set()

    def _is_bpe(self) -> bool:
        return False

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            i = self.token_id(tokens)
            return self.unk_token_id if i is None else i
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def __len__(self) -> int:
        """Every id, the added tokens included (``vocab_size`` is the base vocabulary's,
        as in transformers)."""
        return int(self._full_size())

    # -- encoding ---------------------------------------------------------------------------
    model_input_names = ["input_ids", "attention_mask"]

    def _special_parts(self, pair: bool) -> tuple[list, list, list, list]:
        """The special tokens ``add_special_tokens`` puts before and after the first text
        and, for a pair, before and after the second."""
        return [], [], [], []

    def _pieces(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids of ``text`` (no special tokens added) and each one's (start, end) characters,
        as transformers' ``offset_mapping`` gives them."""
        raise NotImplementedError

    def _encode_row(self, text: str, pair, add_special_tokens: bool, max_length, strategy,
                    side: str) -> dict:
        """One row (``tokenizer_encoding``): the text (and pair) with the special tokens
        ``add_special_tokens`` adds, truncated to ``max_length`` (room left for the special
        tokens; a pair by ``strategy``) on ``side``."""
        ids_a, off_a = self._pieces(_text(text))
        ids_b, off_b = self._pieces(_text(pair)) if pair is not None else ([], [])
        pre_a, post_a, pre_b, post_b = self._special_parts(pair is not None) \
            if add_special_tokens else ([], [], [], [])
        if max_length is not None:
            budget = max(int(max_length) - len(pre_a) - len(post_a) - len(pre_b) - len(post_b),
                         0)
            k1, k2 = pair_lengths(len(ids_a), len(ids_b), budget, strategy) \
                if pair is not None else (min(len(ids_a), budget), 0)
            ids_a, off_a = _cut(ids_a, k1, side), _cut(off_a, k1, side)
            ids_b, off_b = _cut(ids_b, k2, side), _cut(off_b, k2, side)
        first = pre_a + ids_a + post_a
        second = pre_b + ids_b + post_b if pair is not None else []
        ids = first + second
        special = [1] * len(pre_a) + [0] * len(ids_a) + [1] * len(post_a)
        offsets = [(0, 0)] * len(pre_a) + off_a + [(0, 0)] * len(post_a)
        if pair is not None:
            special += [1] * len(pre_b) + [0] * len(ids_b) + [1] * len(post_b)
            offsets += [(0, 0)] * len(pre_b) + off_b + [(0, 0)] * len(post_b)
        return {"input_ids": ids, "token_type_ids": [0] * len(first) + [1] * len(second),
                "attention_mask": [1] * len(ids), "special_tokens_mask": special,
                "offset_mapping": offsets}

    def __call__(self, text=None, text_pair=None, *, add_special_tokens: bool = True,
                 padding=False, truncation=None, max_length: int | None = None,
                 pad_to_multiple_of: int | None = None, padding_side: str | None = None,
                 return_tensors: str | None = None, return_attention_mask: bool | None = None,
                 return_token_type_ids: bool | None = None,
                 return_special_tokens_mask: bool = False,
                 return_offsets_mapping: bool = False, return_length: bool = False,
                 verbose: bool = True, **kwargs) -> BatchEncoding:
        """Encode a text, a list of texts, or text pairs (``tok(a, b)``, ``text_pair=``, a
        list of firsts and a list of seconds, or a list of (a, b) pairs) as transformers'
        tokenizer call does: special tokens added as the checkpoint's tokenizer adds them
        (``add_special_tokens``; for a pair its pair template); ``truncation`` (True /
        ``"longest_first"``, ``"only_first"``, ``"only_second"``: to ``max_length``; a
        ``max_length`` alone truncates too, as in transformers), ``padding`` (True /
        ``"longest"``: to the longest row, ``"max_length"``, ``pad_to_multiple_of``) on
        ``padding_side`` (default the tokenizer's) with ``pad_token_id``;
        ``return_tensors``: ``"np"`` int64 arrays (B, T), ``"pt"`` torch tensors (skiff's
        models take both), None lists. Returns a :class:`BatchEncoding` (``input_ids``,
        ``attention_mask``; ``token_type_ids``, ``special_tokens_mask``,
        ``offset_mapping``, ``length`` when asked) to pass as ``model(**enc)`` /
        ``model.generate(**enc)``."""
        overflow = bool(kwargs.pop("return_overflowing_tokens", False))  # round 40
        stride = int(kwargs.pop("stride", 0) or 0)
        unknown = sorted(k for k, v in kwargs.items() if v not in (None, False, 0))
        if unknown:
            raise TypeError(f"skiff's tokenizer does not take {', '.join(unknown)} (it takes "
                            "text_pair, add_special_tokens, padding, truncation, max_length, "
                            "pad_to_multiple_of, padding_side, return_tensors, "
                            "return_attention_mask, return_token_type_ids, "
                            "return_special_tokens_mask, return_offsets_mapping, "
                            "return_length, return_overflowing_tokens, stride)")
        if text is None:
            raise ValueError("the tokenizer needs text (a str, a list of str, or pairs)")
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if text_pair is not None:
            pairs = [text_pair] if isinstance(text_pair, str) else list(text_pair)
            if single != isinstance(text_pair, str) or len(pairs) != len(texts):
                raise ValueError(f"text_pair must match text: a str for a str, a list of "
                                 f"{len(texts)} for a list of {len(texts)}")
        elif not single and texts and all(isinstance(t, (list, tuple)) and len(t) == 2
                                          and all(isinstance(s, str) for s in t)
                                          for t in texts):
            texts, pairs = [t[0] for t in texts], [t[1] for t in texts]
        else:
            pairs = [None] * len(texts)
        # transformers' rule: max_length alone (no padding, truncation unsaid) truncates
        if max_length is not None and padding is False and truncation is None:
            truncation = True
        if padding is True:
            padding = "longest"
        elif padding in (False, None):
            padding = "do_not_pad"
        if padding not in ("longest", "max_length", "do_not_pad"):
            raise ValueError(f"padding={padding!r}: one of True, 'longest', 'max_length', "
                             "False")
        if truncation is True:
            truncation = "longest_first"
        if truncation not in (None, False, "longest_first", "only_first", "only_second",
                              "do_not_truncate"):
            raise ValueError(f"truncation={truncation!r}: True, 'longest_first', "
                             "'only_first', 'only_second' or False")
        truncate = truncation not in (None, False, "do_not_truncate")
        if max_length is None:
            limit = self.model_max_length if self.model_max_length < _LARGE else None
            if padding == "max_length":
                padding = "max_length" if limit is not None else "do_not_pad"
            max_length = limit if (truncate or padding == "max_length") else None
            if truncate and limit is None:
                truncate = False
        side = padding_side or self.padding_side
        if side not in ("left", "right"):
            raise ValueError(f"padding_side={side!r}: 'left' or 'right'")
        pad = self.pad_token_id
        if padding != "do_not_pad" and pad is None:
            raise ValueError("asking to pad but the tokenizer has no pad token: set "
                             "tok.pad_token (e.g. tok.pad_token = tok.eos_token)")
        mapping = list(range(len(texts)))
        single = single and not overflow  # transformers' rows of windows, even of one text
        if overflow and truncate:  # every window of each text, not only the first
            rows, mapping = self._overflowing(texts, pairs, add_special_tokens, max_length,
                                              stride)
        else:
            rows = [self._encode_row(t, p, add_special_tokens,
                                     max_length if truncate else None, truncation,
                                     self.truncation_side) for t, p in zip(texts, pairs)]
        width = None
        if padding == "longest":
            width = max((len(r["input_ids"]) for r in rows), default=0)
        elif padding == "max_length":
            width = int(max_length)
        if width is not None and pad_to_multiple_of:
            width = -(-width // int(pad_to_multiple_of)) * int(pad_to_multiple_of)
        if width is not None:
            pad_rows(rows, width, side, pad)
        keys = {"input_ids"}
        keys |= {"attention_mask"} if return_attention_mask is not False else set()
        keys |= {"token_type_ids"} if return_token_type_ids else set()
        keys |= {"special_tokens_mask"} if return_special_tokens_mask else set()
        keys |= {"offset_mapping"} if return_offsets_mapping else set()
        keys |= {"length"} if return_length else set()
        out = assemble(rows, single, return_tensors, keys)
        if overflow:  # which text each row came from
            out["overflow_to_sample_mapping"] = mapping if return_tensors is None else \
                _tensor(mapping, return_tensors)
        return out

    def _overflowing(self, texts, pairs, add_special_tokens, max_length, stride):
        """``return_overflowing_tokens=True`` with truncation: (rows, the text of each)."""
        if any(p is not None for p in pairs):
            raise ValueError("return_overflowing_tokens with text pairs is not supported: "
                             "window each text alone (or truncate the pair)")
        if self.truncation_side != "right":
            raise ValueError("return_overflowing_tokens needs truncation_side='right' (the "
                             "windows run from the text's start)")
        rows, mapping = [], []
        for i, t in enumerate(texts):
            full = self._encode_row(t, None, add_special_tokens, None, None, "right")
            bare = self._encode_row(t, None, False, None, None, "right")["input_ids"]
            for row in overflow_windows(full, bare, max_length, stride):
                rows.append(row)
                mapping.append(i)
        return rows, mapping

    def _encode_as_transformers(self, text, text_pair=None, *, add_special_tokens=True,
                                return_tensors=None, **kwargs):
        """transformers' ``tok.encode(a, b, add_special_tokens=True, truncation=...,
        max_length=..., padding=..., return_tensors=...)``: the ``input_ids`` of calling the
        tokenizer on one text or pair (a list of ints; a (1, T) tensor with
        ``return_tensors``)."""
        if not isinstance(text, str) or not (text_pair is None or isinstance(text_pair, str)):
            raise TypeError("encode takes one text (and one text_pair); call the tokenizer "
                            "itself for a batch: tok(texts, text_pair=...)")
        enc = self(text, text_pair, add_special_tokens=add_special_tokens,
                   return_tensors=return_tensors, **kwargs)
        return enc["input_ids"]

    def pad(self, encoded_inputs, padding=True, max_length: int | None = None,
            pad_to_multiple_of: int | None = None, padding_side: str | None = None,
            return_attention_mask: bool | None = None, return_tensors: str | None = None,
            **kwargs) -> BatchEncoding:
        """Pad encoded rows (a :class:`BatchEncoding` of lists or a list of dicts, as a data
        collator passes them) as transformers' ``pad``: to the longest row (``padding=True``)
        or ``max_length``, on ``padding_side``, with an ``attention_mask``."""
        rows, single = rows_from_features(encoded_inputs)
        if padding is True or padding == "longest":
            width = max((len(r["input_ids"]) for r in rows), default=0)
        elif padding == "max_length":
            if max_length is None:
                raise ValueError("padding='max_length' needs max_length")
            width = int(max_length)
        elif padding in (False, None, "do_not_pad"):
            width = None
        else:
            raise ValueError(f"padding={padding!r}: True, 'longest', 'max_length' or False")
        for r in rows:
            r.setdefault("attention_mask", [1] * len(r["input_ids"]))
        if width is not None and pad_to_multiple_of:
            width = -(-width // int(pad_to_multiple_of)) * int(pad_to_multiple_of)
        if width is not None:
            if self.pad_token_id is None:
                raise ValueError("asking to pad but the tokenizer has no pad token: set "
                                 "tok.pad_token (e.g. tok.pad_token = tok.eos_token)")
            pad_rows(rows, width, padding_side or self.padding_side, self.pad_token_id)
        keys = set(rows[0]) if rows else {"input_ids"}
        if return_attention_mask is False:
            keys.discard("attention_mask")
        extra = sorted(k for r in rows for k in r if k not in KEYS)
        if extra:
            raise ValueError(f"pad pads {', '.join(KEYS[:-1])}; the rows also hold "
                             f"{', '.join(dict.fromkeys(extra))} (pad those yourself)")
        return assemble(rows, single, return_tensors, keys)

    # -- tokens -----------------------------------------------------------------------------
    def _id_to_token(self, i: int) -> str | None:
        raise NotImplementedError

    def convert_ids_to_tokens(self, ids, skip_special_tokens: bool = False):
        """The token (piece) text of an id, or of each id of a list/array, as transformers
        gives it (``"▁H"``, ``"<0xF0>"``, ``"Ġwo"``); ``skip_special_tokens`` leaves out
        the config's special tokens (``all_special_ids``: as transformers, not every added
        token marked special, which ``decode`` skips)."""
        if isinstance(ids, (int, np.integer)) or (hasattr(ids, "ndim") and ids.ndim == 0):
            return self._id_to_token(int(ids))
        skip = set(self.all_special_ids) if skip_special_tokens else set()
        return [self._id_to_token(int(i)) for i in np.asarray(ids).reshape(-1)
                if int(i) not in skip]

    def tokenize(self, text: str, pair: str | None = None, add_special_tokens: bool = False,
                 **kwargs) -> list[str]:
        """The tokens of ``text`` (and ``pair``) as strings: transformers' ``tokenize``."""
        row = self._encode_row(text, pair, add_special_tokens, None, None, "right")
        return self.convert_ids_to_tokens(row["input_ids"])

    def convert_tokens_to_string(self, tokens) -> str:
        """Text of a list of tokens (as :meth:`tokenize` gives them)."""
        return self.decode(self.convert_tokens_to_ids(list(tokens)))

    def get_vocab(self) -> dict[str, int]:
        """Every token (added ones too) and its id."""
        raise NotImplementedError

    # -- decoding ---------------------------------------------------------------------------
    def decode(self, ids, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool | None = None, **kwargs) -> str:
        """Text of ``ids`` (an id, a list or a 1-D array), as transformers decodes them:
        special tokens kept unless ``skip_special_tokens``; ``clean_up_tokenization_spaces``
        (default the config's) takes the space off before punctuation."""
        ids = [int(i) for i in np.asarray(ids).reshape(-1)]
        if skip_special_tokens:
            skip = self._skipped_ids()
            ids = [i for i in ids if i not in skip]
        text = self._decode_ids(ids)
        clean = self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None \
            else clean_up_tokenization_spaces
        if clean and (not self._is_bpe() or self._clean_bpe):
            for a, b in _CLEANUPS:
                text = text.replace(a, b)
        return text

    def batch_decode(self, sequences, skip_special_tokens: bool = False, **kwargs) -> list[str]:
        """:meth:`decode` of each row of ``sequences`` (a 2-D array or a list of id lists)."""
        if isinstance(sequences, np.ndarray) and sequences.ndim == 1:
            sequences = [sequences]
        return [self.decode(s, skip_special_tokens=skip_special_tokens, **kwargs)
                for s in sequences]


class _ChatMixin:
    """``apply_chat_template`` over the folder's :class:`~.chat.ChatTemplate`."""

    chat_template = None
    path: Path

    def apply_chat_template(self, messages=None, add_generation_prompt: bool = False,
                            tokenize: bool | None = None, *, conversation=None,
                            return_dict: bool | None = None, return_tensors: str | None = None,
                            padding=False, truncation=None, max_length: int | None = None,
                            continue_final_message=False,
                            return_assistant_tokens_mask: bool = False, **kwargs):
        """The conversation (or a list of conversations) rendered by the checkpoint's
        template, as transformers' ``apply_chat_template`` renders it: with ``tokenize``
        (no special tokens added, as transformers) the tokenizer call's
        :class:`BatchEncoding` (``return_tensors``, ``padding``, ``truncation``,
        ``max_length`` as in a call), or with ``return_dict=False`` the ids alone (a list,
        or the tensor of ``return_tensors``), as transformers 5. ``tokenize`` left out (and
        no ``return_dict``/``return_tensors``): a :class:`~.tokenizer_chat.ChatText`, the
        text that also reads as transformers 5's default ``BatchEncoding`` of it.
        ``continue_final_message`` and ``return_assistant_tokens_mask`` as transformers
        (``tokenizer_chat``)."""
        from .tokenizer_chat import (
            ChatText,
            continue_final,
            generation_spans,
            with_assistant_masks,
        )

        if self.chat_template is None:
            raise ValueError(f"the tokenizer at {self.path.parent} has no chat template "
                             "(chat_template.jinja or tokenizer_config.json)")
        messages = conversation if messages is None else messages
        batch = isinstance(messages, (list, tuple)) and bool(messages) and \
            isinstance(messages[0], (list, tuple))
        chats = list(messages) if batch else [messages]
        if continue_final_message and return_assistant_tokens_mask:
            raise ValueError("continue_final_message is not compatible with "
                             "return_assistant_tokens_mask")
        if continue_final_message:
            texts = [continue_final(self.chat_template, m, continue_final_message,
                                    add_generation_prompt, kwargs) for m in chats]
        else:
            texts = [self.chat_template.render(m, add_generation_prompt, **kwargs)
                     for m in chats]
        default = tokenize is None and not return_dict and return_tensors is None
        if tokenize is None:
            tokenize = bool(return_dict) or return_tensors is not None
        if default and not return_assistant_tokens_mask:
            texts = [ChatText(t, self) for t in texts]
            return texts if batch else texts[0]
        if not tokenize and not default:
            return texts if batch else texts[0]
        if return_dict is None:  # transformers 5: a tokenized chat is a BatchEncoding
            return_dict = True
        if return_dict or return_tensors is not None:
            enc = self(texts if batch else texts[0], add_special_tokens=False, padding=padding,
                       truncation=truncation, max_length=max_length,
                       return_tensors=return_tensors,
                       return_offsets_mapping=bool(return_assistant_tokens_mask and return_dict))
            if return_assistant_tokens_mask and return_dict:
                spans = [generation_spans(self.chat_template, m, add_generation_prompt, kwargs)
                         for m in chats]
                enc = with_assistant_masks(enc, spans, batch, return_tensors)
            return enc if return_dict else enc["input_ids"]
        ids = [[int(i) for i in self.encode(t)] for t in texts]
        if max_length is not None and truncation:
            ids = [i[:max_length] for i in ids]
        return ids if batch else ids[0]

class HFTokenizer(AddedTokensMixin, _ChatMixin, _CallMixin):
    """A checkpoint's ``tokenizer.json`` through the ``tokenizers`` library."""

    def __init__(self, path: Path, chat_template=None):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise _missing("tokenizers", path) from None
        self.path = Path(path)
        self._tok = Tokenizer.from_file(str(path))
        self.chat_template = chat_template
        self._read_config(self.path.parent)

    def encode(self, text: str, text_pair=None, **kwargs):
        """The ids of ``text`` (an int64 array, no special tokens); with a pair or any of
        transformers' options, transformers' ``encode`` (:meth:`_encode_as_transformers`)."""
        if text_pair is not None or kwargs:
            return self._encode_as_transformers(text, text_pair, **kwargs)
        return np.asarray(self._tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)

    def encode_with_offsets(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Ids and, per character of ``text``, the index of the token holding it (-1: none)."""
        enc = self._tok.encode(text, add_special_tokens=False)
        owner = np.full(len(text), -1, dtype=np.int64)
        for t, (a, b) in enumerate(enc.offsets):
            owner[a:b] = np.where(owner[a:b] < 0, t, owner[a:b])
        return np.asarray(enc.ids, dtype=np.int64), owner

    def _decode_ids(self, ids: list[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=False)

    def _is_bpe(self) -> bool:
        return type(self._tok.model).__name__ == "BPE"

    def _backend_special_ids(self) -> set[int]:
        return {int(i) for i, t in self._tok.get_added_tokens_decoder().items() if t.special}

    def _pieces(self, text: str):
        enc = self._tok.encode(text, add_special_tokens=False)
        return list(enc.ids), [tuple(o) for o in enc.offsets]

    def _encode_row(self, text: str, pair, add_special_tokens: bool, max_length, strategy,
                    side: str) -> dict:
        """``tokenizer.json``'s own post-processor adds the special tokens (and joins a
        pair, its type ids, special-token mask and offsets), as transformers uses it;
        truncation leaves room for them."""
        enc = self._tok.encode(_text(text), add_special_tokens=False)
        second = self._tok.encode(_text(pair), add_special_tokens=False) \
            if pair is not None else None
        post = self._tok.post_processor
        extra = post.num_special_tokens_to_add(second is not None) \
            if add_special_tokens and post else 0
        if max_length is not None:
            budget = max(int(max_length) - extra, 0)
            k1, k2 = pair_lengths(len(enc.ids), len(second.ids), budget, strategy) \
                if second is not None else (min(len(enc.ids), budget), 0)
            if k1 < len(enc.ids):
                enc.truncate(k1, direction=side)
            if second is not None and k2 < len(second.ids):
                second.truncate(k2, direction=side)
        first = len(enc.ids)
        enc = self._tok.post_process(enc, second, add_special_tokens)
        types = list(enc.type_ids)
        if second is not None and post is None:  # no template: transformers types the pair
            types = [0] * first + [1] * (len(types) - first)
        return {"input_ids": [int(i) for i in enc.ids], "token_type_ids": types,
                "attention_mask": [1] * len(enc.ids),
                "special_tokens_mask": list(enc.special_tokens_mask),
                "offset_mapping": [tuple(o) for o in enc.offsets]}

    def _id_to_token(self, i: int) -> str | None:
        return self._tok.id_to_token(i)

    def _add_to_vocab(self, texts: list[str], special: bool) -> int:
        """``tokenizers``' own added tokens (a special one not normalized, as
        transformers adds them); the number new to the vocabulary."""
        from tokenizers import AddedToken

        tokens = [AddedToken(t, special=special, normalized=not special) for t in texts]
        return int(self._tok.add_special_tokens(tokens) if special
                   else self._tok.add_tokens(tokens))

    def _save_backend(self, folder: Path) -> list[str]:
        self._tok.save(str(folder / "tokenizer.json"))
        return ["tokenizer.json"]

    def get_vocab(self) -> dict[str, int]:
        return dict(self._tok.get_vocab(with_added_tokens=True))

    def token_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    @property
    def vocab_size(self) -> int:
        """The model's vocabulary without the added tokens (transformers' ``vocab_size``;
        ``len(tok)`` counts them)."""
        return self._tok.get_vocab_size(with_added_tokens=False)

    def _full_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def __repr__(self) -> str:
        return f"HFTokenizer({str(self.path)!r}, vocab={len(self)})"


class SentencePieceTokenizer(AddedTokensMixin, _ChatMixin, _CallMixin):
    """A checkpoint's ``tokenizer.model`` through the ``sentencepiece`` library, with the
    added tokens and ``legacy`` setting of its ``tokenizer_config.json`` (module docstring)."""

    def __init__(self, path: Path, chat_template=None):
        try:
            import sentencepiece as spm
        except ImportError:
            raise _missing("sentencepiece", path) from None
        self.path = Path(path)
        self.chat_template = chat_template
        self._proto = self.path.read_bytes()
        self._sp = spm.SentencePieceProcessor(model_proto=self._proto)
        self._bare = None  # the same model without the dummy prefix (legacy: false), on use
        config = self._read_config(self.path.parent)
        self.legacy = bool(config.get("legacy", True))
        self.add_bos_token = bool(config.get("add_bos_token", False))
        self.add_eos_token = bool(config.get("add_eos_token", False))
        self.added = self._added_tokens(config)  # {text: id}
        self.added_text = {i: t for t, i in self.added.items()}
        pattern = "|".join(re.escape(t) for t in sorted(self.added, key=len, reverse=True))
        self._split = re.compile(f"({pattern})") if pattern else None
        self._dummy = self._has_dummy_prefix()

    def _added_tokens(self, config: dict) -> dict[str, int]:
        """Tokens matched in the raw text before SentencePiece runs: the config's added
        tokens and special tokens (user-defined pieces are SentencePiece's own business)."""
        sp = self._sp
        out: dict[str, int] = {}
        for key, value in (config.get("added_tokens_decoder") or {}).items():
            text = value.get("content") if isinstance(value, dict) else value
            if isinstance(text, str) and text:
                out[text] = int(key)
        extra = _read_json(self.path.parent / "added_tokens.json")
        out.update({t: int(i) for t, i in extra.items() if isinstance(t, str)})
        special_map = _read_json(self.path.parent / "special_tokens_map.json")
        names = [config.get(n) or special_map.get(n) for n in _SPECIAL_NAMES]
        for key in EXTRA_KEYS:
            names += list(config.get(key) or []) + list(special_map.get(key) or [])
        for value in names:
            text = value.get("content") if isinstance(value, dict) else value
            if not isinstance(text, str) or not text or text in out:
                continue
            i = sp.piece_to_id(text)
            if i != sp.unk_id() or text == sp.id_to_piece(sp.unk_id()):
                out[text] = int(i)
        # user-defined pieces are matched by SentencePiece itself, as transformers leaves them
        user = {i for i, kind in enumerate(_piece_types(self._proto)) if kind == _USER_DEFINED}
        return {t: i for t, i in out.items() if i not in user}

    def _has_dummy_prefix(self) -> bool:
        ids = self._sp.encode("a")
        return bool(ids) and self._sp.id_to_piece(ids[0]).startswith("▁")

    def _bare_processor(self):
        """The model with ``add_dummy_prefix`` off (text after an added token when the
        config says ``legacy: false``): the serialized model plus one more
        ``normalizer_spec`` field holding ``add_dummy_prefix = false``, which protobuf merges
        into the first (no protobuf package needed)."""
        if self._bare is None:
            import sentencepiece as spm

            self._bare = spm.SentencePieceProcessor(model_proto=self._proto + b"\x1a\x02\x18\x00")
        return self._bare

    def _chunks(self, text: str):
        """(start, chunk, added id or None) of ``text`` split at the added tokens."""
        if self._split is None:
            return [(0, text, None)] if text else []
        out, pos = [], 0
        for part in self._split.split(text):
            if part:
                out.append((pos, part, self.added.get(part)))
            pos += len(part)
        return out

    def _encode_chunk(self, start: int, chunk: str):
        """SentencePiece pieces (id, begin char, end char) of plain text at ``start``."""
        prefix = self.legacy or (start == 0 and not chunk.startswith(" "))
        sp = self._sp if prefix or not self._dummy else self._bare_processor()
        proto = sp.encode(chunk, return_type="proto")
        raw = chunk.encode("utf-8")
        # byte offset -> character offset
        char_at = np.zeros(len(raw) + 1, dtype=np.int64)
        char_at[np.cumsum([len(c.encode("utf-8")) for c in chunk])] = 1
        char_at = np.cumsum(char_at)
        return [(p.id, start + int(char_at[p.begin]), start + int(char_at[p.end]))
                for p in proto.pieces]

    def encode(self, text: str, text_pair=None, **kwargs):
        """The ids of ``text`` (an int64 array, no special tokens); with a pair or any of
        transformers' options, transformers' ``encode`` (:meth:`_encode_as_transformers`)."""
        if text_pair is not None or kwargs:
            return self._encode_as_transformers(text, text_pair, **kwargs)
        return self.encode_with_offsets(text)[0]

    def encode_with_offsets(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Ids and, per character of ``text``, the index of the token holding it (-1: none)."""
        ids, spans = [], []
        for start, chunk, added in self._chunks(text):
            if added is not None:
                ids.append(added)
                spans.append((start, start + len(chunk)))
            else:
                for i, a, b in self._encode_chunk(start, chunk):
                    ids.append(i)
                    spans.append((a, b))
        owner = np.full(len(text), -1, dtype=np.int64)
        for t, (a, b) in enumerate(spans):
            owner[a:b] = np.where(owner[a:b] < 0, t, owner[a:b])
        return np.asarray(ids, dtype=np.int64), owner

    def _is_bpe(self) -> bool:
        return _model_type(self._proto) == 2  # TrainerSpec.BPE

    def _special_parts(self, pair: bool):
        """``add_bos_token`` / ``add_eos_token`` of the config around each text
        (transformers' default for a ``tokenizer.model``: neither)."""
        bos = [self.bos_token_id] if self.add_bos_token and self.bos_token_id is not None else []
        eos = [self.eos_token_id] if self.add_eos_token and self.eos_token_id is not None else []
        return (bos, eos, bos, eos) if pair else (bos, eos, [], [])

    def _pieces(self, text: str):
        """Ids and offsets as transformers' tokenizer of the same ``tokenizer.model`` gives
        them: a piece with no characters of its own (the dummy prefix alone, the leading
        bytes of a character split into byte pieces) has the character it starts at."""
        ids, offsets = [], []
        for start, chunk, added in self._chunks(text):
            if added is not None:
                ids.append(added)
                offsets.append((start, start + len(chunk)))
                continue
            for i, a, b in self._encode_chunk(start, chunk):
                ids.append(int(i))
                offsets.append((a, b) if b > a or a >= len(text) else (a, a + 1))
        return ids, offsets

    def _add_to_vocab(self, texts: list[str], special: bool) -> int:
        """New tokens take the next ids and are matched in the raw text before
        SentencePiece runs (a piece of the model marked special too); the number new."""
        fresh = 0
        for t in texts:
            i = self.token_id(t)
            if i is None:
                i, fresh = len(self), fresh + 1
            elif t in self.added or not special:
                continue
            self.added[t] = int(i)
            self.added_text[int(i)] = t
        pattern = "|".join(re.escape(t) for t in sorted(self.added, key=len, reverse=True))
        self._split = re.compile(f"({pattern})") if pattern else None
        return fresh

    def _save_backend(self, folder: Path) -> list[str]:
        if self.path.resolve() != (folder / "tokenizer.model").resolve():
            shutil.copyfile(self.path, folder / "tokenizer.model")
        return ["tokenizer.model"]

    def _id_to_token(self, i: int) -> str | None:
        if i in self.added_text:
            return self.added_text[i]
        return self._sp.id_to_piece(i) if 0 <= i < self._sp.get_piece_size() else None

    def get_vocab(self) -> dict[str, int]:
        vocab = {self._sp.id_to_piece(i): i for i in range(self._sp.get_piece_size())}
        vocab.update(self.added)
        return vocab

    def _decode_ids(self, ids: list[int]) -> str:
        """Text of ``ids``, as transformers decodes them (special tokens kept)."""
        sp, size = self._sp, self._sp.get_piece_size()
        out, pending = [], bytearray()
        for i in ids:
            if i in self.added_text:
                piece = self.added_text[i]
            elif 0 <= i < size:
                piece = sp.id_to_piece(i)
                m = _BYTE_PIECE.fullmatch(piece) if sp.IsByte(i) else None
                if m:
                    pending.append(int(m.group(1), 16))
                    continue
            else:
                raise ValueError(f"token id {i} is outside the vocabulary ({len(self)})")
            if pending:
                out.append(_bytes_text(pending))
                pending = bytearray()
            out.append(piece)
        if pending:
            out.append(_bytes_text(pending))
        text = "".join(out).replace("▁", " ")
        return text[1:] if self._dummy and text.startswith(" ") else text

    def token_id(self, token: str) -> int | None:
        if token in self.added:
            return self.added[token]
        i = self._sp.piece_to_id(token)
        return None if i == self._sp.unk_id() and token != self._sp.id_to_piece(i) else int(i)

    @property
    def vocab_size(self) -> int:
        """The SentencePiece model's pieces (transformers' ``vocab_size``; ``len(tok)``
        counts the added tokens after them)."""
        return self._sp.get_piece_size()

    def _full_size(self) -> int:
        return max([self._sp.get_piece_size(), *(i + 1 for i in self.added.values())])

    def __repr__(self) -> str:
        return f"SentencePieceTokenizer({str(self.path)!r}, vocab={len(self)})"


def _bytes_text(raw: bytearray) -> str:
    """A run of byte-fallback pieces as text: its UTF-8, or one U+FFFD per byte when the run
    is not valid UTF-8 (as tokenizers' ``ByteFallback`` decoder, which transformers uses)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" * len(raw)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _fields(buf: bytes):
    """A serialized protobuf message's fields in order, as (number, value): an int for a
    varint, the bytes of a length-delimited field, None for a fixed 32/64-bit one."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire in (1, 5):
            value, pos = None, pos + (8 if wire == 1 else 4)
        else:
            raise ValueError(f"not a SentencePiece model (protobuf wire type {wire})")
        yield field, value


def _piece_types(proto: bytes) -> list[int]:
    """The type of each piece of a serialized SentencePiece ``ModelProto`` (field 1:
    repeated ``SentencePiece`` whose field 3 is the type, NORMAL = 1 when absent), read
    from the protobuf wire format directly."""
    return [_field_varint(value, 3, 1) for field, value in _fields(proto)
            if field == 1 and isinstance(value, bytes)]


def _model_type(proto: bytes) -> int:
    """``trainer_spec.model_type`` of a serialized ``ModelProto`` (field 2, its field 3;
    UNIGRAM = 1 when absent)."""
    return next((_field_varint(value, 3, 1) for field, value in _fields(proto)
                 if field == 2 and isinstance(value, bytes)), 1)


def _field_varint(msg: bytes, wanted: int, default: int) -> int:
    """The last value of varint field ``wanted`` of a message, or ``default``."""
    kind = default
    for field, value in _fields(msg):
        if field == wanted and isinstance(value, int):
            kind = value
    return kind


def _text(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"the tokenizer encodes text (str), got {type(value).__name__}")
    return value


def _cut(seq: list, keep: int, side: str) -> list:
    """The ``keep`` items of ``seq`` that truncation on ``side`` leaves."""
    if len(seq) <= keep:
        return seq
    return seq[len(seq) - keep:] if side == "left" else seq[:keep]


def _token_text(value):
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) and value else None


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    return value if isinstance(value, dict) else {}


def load_tokenizer(folder: str | os.PathLike):
    """The folder's tokenizer (``tokenizer.json``, else ``tokenizer.model``), or None when
    it has neither."""
    from .chat import ChatTemplate

    folder = Path(folder).expanduser()
    if (folder / "tokenizer.json").is_file():
        return HFTokenizer(folder / "tokenizer.json", ChatTemplate.from_folder(folder))
    if (folder / "tokenizer.model").is_file():
        return SentencePieceTokenizer(folder / "tokenizer.model",
                                      ChatTemplate.from_folder(folder))
    return None
