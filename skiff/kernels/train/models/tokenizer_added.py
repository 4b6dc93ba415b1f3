"""Adding tokens to a checkpoint's tokenizer and saving it, as transformers' tokenizers do.

``tok.add_special_tokens({"additional_special_tokens": ["<|tool|>"], "pad_token": "<pad>"})``
and ``tok.add_tokens(["word"], special_tokens=False)`` give each token that the vocabulary
does not hold the next id (``len(tok)``, ``len(tok) + 1``, ...) and return how many were new,
as transformers returns it; the model's embeddings are grown to match with
``model.resize_token_embeddings(len(tok))``. ``tok.save_pretrained(DIR)`` writes the
tokenizer files with the added tokens (``tokenizer.json`` for a ``tokenizers`` tokenizer;
``tokenizer.model`` plus the ``added_tokens_decoder`` of ``tokenizer_config.json`` for a
SentencePiece one), which transformers' ``AutoTokenizer`` reads back with the same ids.

Added tokens are matched in the raw text before the model's own pieces, as the special
tokens already are. For a SentencePiece tokenizer a non-special added token is matched the
same way (transformers normalizes the text around a non-special token first, which changes
the pieces next to it: use special tokens there, or a ``tokenizer.json``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

__all__ = ["AddedTokensMixin", "EXTRA_KEYS"]

# transformers 5 writes extra_special_tokens; older folders say additional_special_tokens
EXTRA_KEYS = ("additional_special_tokens", "extra_special_tokens")
_NAMED = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
          "mask_token")
_COPIED = ("special_tokens_map.json", "chat_template.jinja", "added_tokens.json")


def _content(token) -> str:
    """A token's text: a string, or an ``AddedToken`` (``.content``)."""
    text = getattr(token, "content", token)
    if not isinstance(text, str) or not text:
        raise TypeError(f"a token to add is a non-empty string (or an AddedToken), got "
                        f"{token!r}")
    return text


class AddedTokensMixin:
    """``add_tokens``, ``add_special_tokens`` and ``save_pretrained`` over a backend's
    ``_add_to_vocab(texts, special) -> int`` and ``_save_backend(folder, config)``."""

    def _added_log(self) -> dict:
        """{text: special} of the tokens added in this session (in order)."""
        if not hasattr(self, "_added_now"):
            self._added_now = {}
        return self._added_now

    def add_tokens(self, new_tokens, special_tokens: bool = False) -> int:
        """Add ``new_tokens`` (a string, an ``AddedToken`` or a list of them) to the
        vocabulary; returns the number that were not in it (their ids follow the last)."""
        tokens = [new_tokens] if isinstance(new_tokens, str) or hasattr(new_tokens, "content") \
            else list(new_tokens)
        texts = list(dict.fromkeys(_content(t) for t in tokens))
        special = bool(special_tokens) or any(getattr(t, "special", False) for t in tokens)
        fresh = [t for t in texts if self.token_id(t) is None]
        log = self._added_log()
        for t in texts:  # a known token marked special is special from now on
            if special or t in fresh:
                log[t] = special or log.get(t, False)
            if special and t not in self._special_added:
                self._special_added.append(t)
        return self._add_to_vocab(texts, special) if texts else 0

    def add_special_tokens(self, special_tokens_dict: dict,
                           replace_additional_special_tokens: bool = True,
                           replace_extra_special_tokens: bool | None = None) -> int:
        """Set special tokens (``bos_token``, ``eos_token``, ``pad_token``, ... and the
        list ``additional_special_tokens`` / ``extra_special_tokens``), adding to the
        vocabulary those it lacks; returns how many were added. The list replaces the
        tokenizer's extra special tokens (``replace_additional_special_tokens=False``:
        extends it), as transformers does."""
        if not isinstance(special_tokens_dict, dict):
            raise TypeError("add_special_tokens takes a dict such as {'additional_special_"
                            "tokens': ['<|tool|>'], 'pad_token': '<pad>'}")
        replace = replace_additional_special_tokens if replace_extra_special_tokens is None \
            else replace_extra_special_tokens
        texts = []
        for key, value in special_tokens_dict.items():
            if key in _NAMED:
                self.specials[key] = _content(value)
                texts.append(_content(value))
            elif key in EXTRA_KEYS:
                values = [value] if isinstance(value, str) else list(value)
                extra = [_content(v) for v in values]
                self.additional_special_tokens = list(dict.fromkeys(
                    extra if replace else [*self.additional_special_tokens, *extra]))
                texts += extra
            else:
                raise ValueError(f"add_special_tokens does not know {key!r}: it takes "
                                 f"{', '.join(_NAMED)} and additional_special_tokens")
        return self.add_tokens(texts, special_tokens=True) if texts else 0

    def save_pretrained(self, save_directory, **kwargs) -> tuple[str, ...]:
        """Write the tokenizer files to ``save_directory`` (the tokens added included);
        transformers' ``AutoTokenizer.from_pretrained`` reads them back with the same ids.
        Returns the files written."""
        unknown = sorted(k for k, v in kwargs.items() if k not in ("legacy_format",
                                                                    "filename_prefix",
                                                                    "push_to_hub") or v)
        if unknown:
            raise ValueError(f"save_pretrained does not take {', '.join(unknown)}")
        folder = Path(save_directory).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        source = Path(self.path).parent
        written = []
        if source.resolve() != folder.resolve():
            for name in _COPIED:
                if (source / name).is_file():
                    shutil.copyfile(source / name, folder / name)
                    written.append(name)
        path = source / "tokenizer_config.json"
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        decoder = dict(config.get("added_tokens_decoder") or {})
        for text, special in self._added_log().items():
            i = self.token_id(text)
            entry = decoder.get(str(i))
            if isinstance(entry, dict):
                entry["special"] = bool(entry.get("special")) or special
                continue
            decoder[str(i)] = {"content": text, "lstrip": False, "normalized": not special,
                               "rstrip": False, "single_word": False, "special": special}
        config["added_tokens_decoder"] = dict(sorted(decoder.items(), key=lambda kv: int(kv[0])))
        config.update(self.specials)
        for key in EXTRA_KEYS:
            config.pop(key, None)
        if self.additional_special_tokens:
            config["extra_special_tokens"] = list(self.additional_special_tokens)
        config["padding_side"] = self.padding_side
        written += self._save_backend(folder)
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2,
                                                                  ensure_ascii=False) + "\n",
                                                       encoding="utf-8")
        written.append("tokenizer_config.json")
        if (folder / "special_tokens_map.json").is_file():  # an old map would win over ours
            smap = json.loads((folder / "special_tokens_map.json").read_text(encoding="utf-8"))
            smap.update(self.specials)
            for key in EXTRA_KEYS:
                smap.pop(key, None)
            if self.additional_special_tokens:
                smap["additional_special_tokens"] = list(self.additional_special_tokens)
            (folder / "special_tokens_map.json").write_text(json.dumps(smap, indent=2) + "\n")
        return tuple(str(folder / n) for n in dict.fromkeys(written))
