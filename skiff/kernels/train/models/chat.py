"""Chat templates of a checkpoint, rendered as transformers' ``apply_chat_template`` renders
them, and the thinking part of an answer kept apart.

A checkpoint's chat template is ``chat_template.jinja`` or the ``chat_template`` entry of
``tokenizer_config.json`` (a string, or a list of named templates: ``"default"`` is used).
It is Jinja2 run in a sandbox with the settings the reference uses (``trim_blocks``,
``lstrip_blocks``, ``loopcontrols``; ``raise_exception``, ``strftime_now``, a ``tojson``
that does not escape HTML), and it sees ``messages``, ``add_generation_prompt``, the special
tokens (``bos_token``, ``eos_token``, ... from the tokenizer files) and any extra keyword
(``enable_thinking=False``). A message's reasoning given as ``reasoning_content``,
``thinking`` or ``reasoning`` is visible under the first two names, as in the reference.

>>> split_thinking("<think>\\n2 + 2 is 4.\\n</think>\\n\\nFour.")
('2 + 2 is 4.', 'Four.')
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import numpy as np

__all__ = ["ChatTemplate", "ChatDataset", "split_thinking", "SPECIAL_TOKEN_NAMES"]

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token")
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def split_thinking(text: str, open_tag: str = "<think>", close_tag: str = "</think>"
                   ) -> tuple[str, str]:
    """``(thinking, answer)`` of a generated text: what lies between the thinking tags and
    what follows them, both stripped. Without a closing tag the whole text is the answer
    (no thinking), unless an opening tag was seen (then it is all thinking, unfinished)."""
    start = text.find(open_tag)
    end = text.find(close_tag)
    if end < 0:
        if start >= 0:
            return text[start + len(open_tag):].strip(), ""
        return "", text.strip()
    begin = start + len(open_tag) if 0 <= start < end else 0
    return text[begin:end].strip(), text[end + len(close_tag):].strip()


def _token_text(value):
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


class ChatTemplate:
    """A Jinja2 chat template and the special tokens it may refer to."""

    def __init__(self, source: str, special_tokens: dict | None = None):
        if not isinstance(source, str) or not source.strip():
            raise ValueError("a chat template must be a non-empty Jinja2 string")
        self.source = source
        self.special_tokens = {k: v for k, v in (special_tokens or {}).items() if v is not None}
        self._compiled = None

    @classmethod
    def from_folder(cls, folder: str | os.PathLike) -> ChatTemplate | None:
        """The folder's chat template, or None when it has none."""
        folder = Path(folder).expanduser()
        config = {}
        if (folder / "tokenizer_config.json").is_file():
            config = json.loads((folder / "tokenizer_config.json").read_text())
        special = {k: _token_text(config.get(k)) for k in SPECIAL_TOKEN_NAMES}
        if (folder / "special_tokens_map.json").is_file():
            extra = json.loads((folder / "special_tokens_map.json").read_text())
            for k in SPECIAL_TOKEN_NAMES:
                special[k] = special[k] or _token_text(extra.get(k))
        if (folder / "chat_template.jinja").is_file():
            return cls((folder / "chat_template.jinja").read_text(), special)
        source = config.get("chat_template")
        if isinstance(source, list):  # named templates
            named = {t.get("name"): t.get("template") for t in source if isinstance(t, dict)}
            source = named.get("default")
        return cls(source, special) if isinstance(source, str) and source.strip() else None

    def _template(self):
        if self._compiled is None:
            import jinja2
            import jinja2.ext
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            def raise_exception(message):
                raise jinja2.exceptions.TemplateError(message)

            def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
                return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                                  separators=separators, sort_keys=sort_keys)

            class Generation(jinja2.ext.Extension):
                """``{% generation %}...{% endgeneration %}`` (marks assistant text in some
                templates): rendered as its body."""

                tags = {"generation"}

                def parse(self, parser):
                    lineno = next(parser.stream).lineno
                    body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
                    return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body) \
                        .set_lineno(lineno)

                def _body(self, caller):
                    return caller()

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                extensions=[Generation, jinja2.ext.loopcontrols])
            env.filters["tojson"] = tojson
            env.globals["raise_exception"] = raise_exception
            env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
            self._compiled = env.from_string(self.source)
        return self._compiled

    def render(self, messages: list[dict], add_generation_prompt: bool = False,
               **kwargs) -> str:
        """The conversation as the model reads it (``add_generation_prompt``: end with the
        assistant's turn opening, for generation). A message without ``role`` or
        ``content`` is one clear error."""
        if not isinstance(messages, (list, tuple)):
            raise TypeError(f"messages must be a list of dicts, got {type(messages).__name__}")
        chat = []
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or "role" not in m:
                raise ValueError(f"message {i} must be a dict with a 'role', got {m!r}")
            m = {k: v for k, v in m.items() if v is not None}
            reasoning = next((m[k] for k in _REASONING_FIELDS if m.get(k) is not None), None)
            if reasoning is not None:
                m = {"thinking": reasoning, **m, "reasoning_content": reasoning}
            chat.append(m)
        context = {**self.special_tokens, **kwargs}
        return self._template().render(messages=chat, tools=None, documents=None,
                                       add_generation_prompt=add_generation_prompt,
                                       **context)


    def assistant_spans(self, messages: list[dict], **kwargs) -> tuple[str, list[tuple]]:
        """The rendered conversation and the character spans of what the assistant wrote:
        for assistant message ``i``, from the end of the conversation before it with the
        generation prompt to the end of the conversation through it."""
        full = self.render(messages, **kwargs)
        spans = []
        for i, m in enumerate(messages):
            if m.get("role") != "assistant":
                continue
            prompt = self.render(messages[:i], add_generation_prompt=True, **kwargs)
            upto = self.render(messages[:i + 1], **kwargs)
            if not (full.startswith(upto) and upto.startswith(prompt)):
                raise ValueError("this chat template does not render a conversation as a "
                                 "prefix of its continuation, so the assistant's tokens "
                                 "cannot be told apart")
            spans.append((len(prompt), len(upto)))
        return full, spans


class ChatDataset:
    """Conversations (JSONL rows ``{"messages": [{"role", "content"}, ...]}``) as training
    sequences: each rendered with the checkpoint's chat template and tokenized once, the
    loss on the assistant's tokens only (other targets are -100), cut to ``block_size``
    tokens. Items are ``(tokens, targets)``; a batch is a
    :class:`~skiff.kernels.train.data.PackedBatch` (no padding)."""

    def __init__(self, rows, tokenizer, block_size: int, source: str = "conversations"):
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("chat data needs the checkpoint's chat template (it has none)")
        self.block_size = int(block_size)
        self.source = source
        self.items = []
        for n, row in enumerate(rows, 1):
            messages = row.get("messages") if isinstance(row, dict) else None
            if not isinstance(messages, list) or not messages:
                raise ValueError(f"{source}: row {n} has no 'messages' list (each row is "
                                 '{"messages": [{"role": ..., "content": ...}, ...]})')
            if not any(m.get("role") == "assistant" for m in messages if isinstance(m, dict)):
                raise ValueError(f"{source}: row {n} has no assistant message to learn")
            text, spans = tokenizer.chat_template.assistant_spans(messages)
            ids, owner = tokenizer.encode_with_offsets(text)
            learn = np.zeros(len(ids), dtype=bool)
            for start, end in spans:  # the tokens holding the span's first and last character
                a, b = _token_at(owner, start), _token_at(owner, end - 1)
                if a is not None and b is not None:
                    learn[a:b + 1] = True
            ids, learn = ids[:self.block_size + 1], learn[:self.block_size + 1]
            if len(ids) >= 2 and learn[1:].any():
                self.items.append((ids[:-1], np.where(learn[1:], ids[1:], -100)))
        if not self.items:
            raise ValueError(f"{source}: no conversation with assistant tokens to learn")

    @classmethod
    def from_jsonl(cls, path, tokenizer, block_size: int) -> ChatDataset:
        return cls(read_jsonl(path), tokenizer, block_size, source=str(path))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def collate(self, items):
        from ..data import PackedBatch

        lens = [len(t) for t, _ in items]
        cu = np.zeros(len(items) + 1, dtype=np.int64)
        cu[1:] = np.cumsum(lens)
        return PackedBatch(np.concatenate([t for t, _ in items]),
                           np.concatenate([y for _, y in items]), cu,
                           np.concatenate([np.arange(n, dtype=np.int64) for n in lens]))

    def __repr__(self) -> str:
        return f"ChatDataset({len(self)} conversations from {self.source})"


def _token_at(owner: np.ndarray, char: int):
    """The token holding character ``char`` (None for a character no token covers)."""
    if not 0 <= char < len(owner) or owner[char] < 0:
        return None
    return int(owner[char])


def read_jsonl(path) -> list:
    """The rows of a JSONL file, blank lines skipped; a line that is not JSON is one error
    naming its number."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {n} is not JSON ({exc.msg})") from None
    return rows
