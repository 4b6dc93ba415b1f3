"""A checkpoint's own tokenizer: ``tokenizer.json`` (the ``tokenizers`` library) or
``tokenizer.model`` (SentencePiece, what the published ERNIE-4.5 folders ship).

Both give the same small interface: ``encode(text) -> ids`` (no special tokens added),
``encode_with_offsets(text)``, ``decode(ids) -> text``, ``vocab_size``, ``token_id(text)``
and the folder's chat template (``apply_chat_template``). ``tokenizer.json`` wins when a
folder has both, as in transformers.

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
from pathlib import Path

import numpy as np

__all__ = ["HFTokenizer", "SentencePieceTokenizer", "load_tokenizer"]

_SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                  "cls_token", "mask_token")
_USER_DEFINED = 4  # SentencePiece.Type
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _missing(package: str, path) -> ImportError:
    return ImportError(f"{path} needs the {package} package (pip install "
                       "'skiff[open-models]')")


class _ChatMixin:
    """``apply_chat_template`` over the folder's :class:`~.chat.ChatTemplate`."""

    chat_template = None
    path: Path

    def apply_chat_template(self, messages, add_generation_prompt: bool = False,
                            tokenize: bool = False, **kwargs):
        """The conversation rendered by the checkpoint's template (text, or its ids with
        ``tokenize``), as transformers' ``apply_chat_template`` renders it."""
        if self.chat_template is None:
            raise ValueError(f"the tokenizer at {self.path.parent} has no chat template "
                             "(chat_template.jinja or tokenizer_config.json)")
        text = self.chat_template.render(messages, add_generation_prompt, **kwargs)
        return self.encode(text) if tokenize else text


class HFTokenizer(_ChatMixin):
    """A checkpoint's ``tokenizer.json`` through the ``tokenizers`` library."""

    def __init__(self, path: Path, chat_template=None):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise _missing("tokenizers", path) from None
        self.path = Path(path)
        self._tok = Tokenizer.from_file(str(path))
        self.chat_template = chat_template

    def encode(self, text: str) -> np.ndarray:
        return np.asarray(self._tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)

    def encode_with_offsets(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Ids and, per character of ``text``, the index of the token holding it (-1: none)."""
        enc = self._tok.encode(text, add_special_tokens=False)
        owner = np.full(len(text), -1, dtype=np.int64)
        for t, (a, b) in enumerate(enc.offsets):
            owner[a:b] = np.where(owner[a:b] < 0, t, owner[a:b])
        return np.asarray(enc.ids, dtype=np.int64), owner

    def decode(self, ids) -> str:
        return self._tok.decode([int(i) for i in np.asarray(ids).reshape(-1)],
                                skip_special_tokens=False)

    def token_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    def __repr__(self) -> str:
        return f"HFTokenizer({str(self.path)!r}, vocab={self.vocab_size})"


class SentencePieceTokenizer(_ChatMixin):
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
        config = _read_json(self.path.parent / "tokenizer_config.json")
        self.legacy = bool(config.get("legacy", True))
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
        names += list(config.get("additional_special_tokens") or [])
        names += list(special_map.get("additional_special_tokens") or [])
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

    def encode(self, text: str) -> np.ndarray:
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

    def decode(self, ids) -> str:
        """Text of ``ids``, as transformers decodes them (special tokens kept)."""
        sp, size = self._sp, self._sp.get_piece_size()
        out, pending = [], bytearray()
        for i in (int(i) for i in np.asarray(ids).reshape(-1)):
            if i in self.added_text:
                piece = self.added_text[i]
            elif 0 <= i < size:
                piece = sp.id_to_piece(i)
                m = _BYTE_PIECE.fullmatch(piece) if sp.IsByte(i) else None
                if m:
                    pending.append(int(m.group(1), 16))
                    continue
            else:
                raise ValueError(f"token id {i} is outside the vocabulary ({self.vocab_size})")
            if pending:
                out.append(pending.decode("utf-8", errors="replace"))
                pending = bytearray()
            out.append(piece)
        if pending:
            out.append(pending.decode("utf-8", errors="replace"))
        text = "".join(out).replace("▁", " ")
        return text[1:] if self._dummy and text.startswith(" ") else text

    def token_id(self, token: str) -> int | None:
        if token in self.added:
            return self.added[token]
        i = self._sp.piece_to_id(token)
        return None if i == self._sp.unk_id() and token != self._sp.id_to_piece(i) else int(i)

    @property
    def vocab_size(self) -> int:
        return max([self._sp.get_piece_size(), *(i + 1 for i in self.added.values())])

    def __repr__(self) -> str:
        return f"SentencePieceTokenizer({str(self.path)!r}, vocab={self.vocab_size})"


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _piece_types(proto: bytes) -> list[int]:
    """The type of each piece of a serialized SentencePiece ``ModelProto`` (field 1:
    repeated ``SentencePiece`` whose field 3 is the type, NORMAL = 1 when absent), read
    from the protobuf wire format directly."""
    types, pos = [], 0
    while pos < len(proto):
        key, pos = _varint(proto, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(proto, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            n, pos = _varint(proto, pos)
            if field == 1:
                types.append(_piece_type(proto[pos:pos + n]))
            pos += n
        else:
            raise ValueError(f"not a SentencePiece model (protobuf wire type {wire})")
    return types


def _piece_type(msg: bytes) -> int:
    kind, pos = 1, 0
    while pos < len(msg):
        key, pos = _varint(msg, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(msg, pos)
            if field == 3:
                kind = value
        elif wire == 2:
            n, pos = _varint(msg, pos)
            pos += n
        elif wire == 5:
            pos += 4
        elif wire == 1:
            pos += 8
        else:
            raise ValueError(f"not a SentencePiece model (protobuf wire type {wire})")
    return kind


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
