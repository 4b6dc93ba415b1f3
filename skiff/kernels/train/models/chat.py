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

import hashlib
import json
import os
import re
from datetime import datetime
from pathlib import Path

import numpy as np

__all__ = ["ChatTemplate", "ChatDataset", "split_thinking", "opens_thinking",
           "SPECIAL_TOKEN_NAMES"]

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token")
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
# {% generation %} in a template: the assistant's text as transformers' mask reads it
_GENERATION_TAG = re.compile(r"{%-?\s*generation\s*-?%}")
_MARKS = ("\ue000\U0010fff0", "\U0010fff1\ue001")  # private-use: not in real text
_MARK_SPLIT = re.compile("(" + "|".join(re.escape(m) for m in _MARKS) + ")")


def _tool_schemas(tools):
    """``tools`` as the template sees them (transformers' rule): a dict (a JSON schema) as
    it is, a Python function as the schema transformers' ``get_json_schema`` writes from
    its type hints and Google-style docstring."""
    if tools is None:
        return None
    if isinstance(tools, dict) or callable(tools):
        tools = [tools]
    out = []
    for tool in tools:
        if isinstance(tool, dict):
            out.append(tool)
        elif callable(tool):
            try:
                from transformers.utils import get_json_schema
            except ImportError:
                raise ValueError(f"tools: {getattr(tool, '__name__', tool)!r} is a function; "
                                 "pass its JSON schema as a dict ({'type': 'function', "
                                 "'function': {...}}) or install transformers, which "
                                 "writes it") from None
            out.append(get_json_schema(tool))
        else:
            raise TypeError(f"tools must be JSON-schema dicts or functions, got "
                            f"{type(tool).__name__}")
    return out


def split_thinking(text: str, open_tag: str = "<think>", close_tag: str = "</think>",
                   inside: bool = False) -> tuple[str, str]:
    """``(thinking, answer)`` of a generated text: what lies between the thinking tags and
    what follows them, both stripped. Without a closing tag the whole text is the answer
    (no thinking), unless an opening tag was seen or ``inside`` (the prompt ended with an
    open thinking block, as ERNIE-4.5's thinking template's generation prompt does): then it
    is all thinking, unfinished. An answer wrapped in ``<response>...</response>`` (the
    ERNIE-4.5 thinking models' format) is unwrapped."""
    start = text.find(open_tag)
    end = text.find(close_tag)
    if end < 0:
        if start >= 0:
            return text[start + len(open_tag):].strip(), ""
        return (text.strip(), "") if inside else ("", _unwrap(text.strip()))
    begin = start + len(open_tag) if 0 <= start < end else 0
    return text[begin:end].strip(), _unwrap(text[end + len(close_tag):].strip())


def _unwrap(answer: str, open_tag: str = "<response>", close_tag: str = "</response>") -> str:
    if answer.startswith(open_tag):
        answer = answer[len(open_tag):]
        at = answer.rfind(close_tag)
        answer = (answer[:at] if at >= 0 else answer).strip()
    return answer


def opens_thinking(prompt: str, open_tag: str = "<think>", close_tag: str = "</think>"
                   ) -> bool:
    """Whether ``prompt`` (a rendered chat prompt) ends inside an open thinking block."""
    return prompt.rfind(open_tag) > prompt.rfind(close_tag)


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
        self._marking = False  # {% generation %} bodies wrapped in _MARKS (assistant_spans)

    def __getstate__(self):
        """Without the compiled Jinja2 template (compiled again on first use): a model whose
        template had rendered a conversation could not be copied (``copy.deepcopy``: a
        reference model beside the trained one, the planner's micro-run of a chat
        fine-tune: "Template.__new__() missing 1 required positional argument") nor
        pickled (its local filters), as transformers' models and tokenizers can."""
        return {**self.__dict__, "_compiled": None}

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
            owner = self
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
                    text = caller()
                    return f"{_MARKS[0]}{text}{_MARKS[1]}" if owner._marking else text

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
        tools = _tool_schemas(kwargs.pop("tools", None))
        documents = kwargs.pop("documents", None)
        context = {**self.special_tokens, **kwargs}
        return self._template().render(messages=chat, tools=tools, documents=documents,
                                       add_generation_prompt=add_generation_prompt,
                                       **context)


    def assistant_spans(self, messages: list[dict], **kwargs) -> tuple[str, list[tuple]]:
        """The rendered conversation and the character spans of what the assistant wrote:
        for assistant message ``i``, from the end of the conversation before it with the
        generation prompt to the end of the conversation through it. A thinking template
        whose generation prompt opens a thinking block the history does not show (``...
        Assistant: <think>``, the ERNIE-4.5 and Qwen3 thinking models') starts the span where
        the two renderings part (after ``Assistant: ``).

        A template that marks the assistant's text with ``{% generation %}`` ...
        ``{% endgeneration %}`` gives those spans instead, as transformers'
        ``return_assistant_tokens_mask`` reads them (the text the template writes after the
        turn, a newline, is then not trained on)."""
        if _GENERATION_TAG.search(self.source):
            self._marking = True
            try:
                return _unmark(self.render(messages, **kwargs))
            finally:
                self._marking = False
        full = self.render(messages, **kwargs)
        spans = [self.turn_span(messages, i, full, kwargs)
                 for i, m in enumerate(messages) if m.get("role") == "assistant"]
        return full, spans

    def turn_span(self, messages: list[dict], i: int, full: str, kwargs: dict) -> tuple:
        """The character span of assistant message ``i`` in ``full`` (the conversation
        rendered whole), as :meth:`assistant_spans` finds it; :class:`TurnsRerendered` when
        the template renders the conversation through message ``i`` otherwise once it goes
        on."""
        prompt = self.render(messages[:i], add_generation_prompt=True, **kwargs)
        upto = self.render(messages[:i + 1], **kwargs)
        before = self.render(messages[:i], **kwargs)
        if not full.startswith(upto):
            raise TurnsRerendered("this chat template does not render a conversation as a "
                                  "prefix of its continuation, so the assistant's tokens "
                                  "cannot be told apart")
        if upto.startswith(prompt):
            return len(prompt), len(upto)
        if upto.startswith(before):  # the generation prompt differs from the history
            return len(os.path.commonprefix([prompt, upto])), len(upto)
        raise TurnsRerendered("this chat template renders the conversation before "
                              f"assistant message {i} differently once that message "
                              "follows, so the assistant's tokens cannot be told apart")


class TurnsRerendered(ValueError):
    """A chat template renders an earlier part of a conversation otherwise once the
    conversation goes on (Qwen3-style thinking templates show an assistant turn's thinking
    only after the last user message: an earlier turn's thinking is dropped)."""


class ChatDataset:
    """Conversations as training sequences: JSONL rows ``{"messages": [{"role", "content"},
    ...]}`` rendered with the checkpoint's chat template (ShareGPT's ``conversations`` and
    TRL's conversational prompt/completion too, :func:`as_chat_row`), or ``{"prompt": ...,
    "completion": ...}`` pairs (``"response"`` too: a user message and the assistant's
    answer; without a chat template, the prompt's tokens followed by the completion's and
    the eos token). Each is tokenized once, the loss on the assistant's tokens only (other
    targets are -100), cut to ``block_size`` tokens: how many were cut, and any left
    without an assistant token, are counted (``cut``, ``dropped``) and said by ``repr``.
    A conversation whose template renders an earlier assistant turn otherwise once it goes
    on (a Qwen3-style thinking template drops earlier turns' thinking) is one item per
    assistant turn, each after its history as rendered then (``turned``).
    Items are ``(tokens, targets)``; a batch is a
    :class:`~skiff.kernels.train.data.PackedBatch` (no padding).

    ``whole_rows`` (an MoE model trained with its router's balancing loss): a conversation
    that fits the block is fed whole, its last token too (target -100), as transformers
    feeds a row: the router sees every token, so the balancing loss counts every one
    (round 42: each row's last token was left out of it)."""

    def __init__(self, rows, tokenizer, block_size: int, source: str = "conversations",
                 whole_rows: bool = False):
        template = getattr(tokenizer, "chat_template", None)
        self.block_size = int(block_size)
        self.source = source
        self.items = []
        self.cut = self.dropped = 0
        labels = getattr(rows, "labels", None) or []
        self.left_out, self.cut_rows = [], []  # where the rows left out / cut are
        self.unthought = []  # rows whose thinking the template does not render
        self.turned = []  # rows trained one assistant turn at a time (TurnsRerendered)
        self.merged = []  # prompt/completion pairs sharing a token across the prompt's end
        self.item_rows = []  # the row (0-based) of each item: --val-split holds out rows
        self.row_keys, self.row_where = [], []  # each row's text and label (repeats said)
        self.repeats, self.empty = [], []  # rows equal to an earlier one, with an empty answer
        seen = set()
        self.rows = 0
        for n, row in enumerate(rows, 1):
            where = labels[n - 1] if n <= len(labels) else f"row {n}"
            row = as_chat_row(row, f"{source}: {where}")
            self.rows += 1
            key = hashlib.sha1(json.dumps(row, sort_keys=True, default=str).encode()).digest()
            self.row_keys.append(key)
            self.row_where.append(where)
            if key in seen:
                self.repeats.append(where)
            seen.add(key)
            pair = _prompt_completion(row)
            if _empty_answer(row, pair):
                self.empty.append(where)
            if pair is not None and template is None:
                ids, learn, merged = _plain_pair(tokenizer, *pair)
                pieces = [(ids, learn)]
                if merged:
                    self.merged.append(where)
            else:
                messages = _row_messages(row, pair, source, where)
                if template is None:
                    raise ValueError("chat data needs the checkpoint's chat template (it has "
                                     "none)")
                rendered = _render_row(template, messages, _row_template_kwargs(
                    row, f"{source}: {where}"), f"{source}: {where}")
                if rendered[0][2] is not None:
                    self.turned.append(where)
                if any(_thinking_unrendered(messages if turn is None else [messages[turn]],
                                            text) for text, _, turn in rendered):
                    self.unthought.append(where)
                # TRL's prompt/completion: the prompt's assistant messages are not trained on
                start = int(row.get("learn_from") or 0) if isinstance(row, dict) else 0
                first = sum(m.get("role") == "assistant" for m in messages[:start])
                pieces = [_learned(tokenizer, text, spans[first:] if turn is None else spans)
                          for text, spans, turn in rendered if turn is None or turn >= start]
            kept = cut_any = False
            for ids, learn in pieces:
                cut = len(ids) > self.block_size + 1
                cut_any |= cut
                ids, learn = ids[:self.block_size + 1], learn[:self.block_size + 1]
                if len(ids) >= 2 and learn[1:].any():
                    kept = True
                    targets = np.where(learn[1:], ids[1:], -100)
                    if whole_rows and len(ids) <= self.block_size:  # the last token's route
                        self.items.append((np.asarray(ids), np.append(targets, -100)))
                    else:
                        self.items.append((ids[:-1], targets))
                    self.item_rows.append(n - 1)
            self.cut += cut_any
            if kept and cut_any:  # (a row left out is said as left out, not as cut too)
                self.cut_rows.append(where)
            elif not kept:
                self.dropped += 1
                self.left_out.append(where)
        if not self.items:
            raise ValueError(f"{source}: no conversation with assistant tokens to learn"
                             + (f" within --block-size {self.block_size} tokens"
                                if self.dropped else ""))

    @classmethod
    def from_jsonl(cls, path, tokenizer, block_size: int) -> ChatDataset:
        return cls(read_jsonl(path), tokenizer, block_size, source=str(path))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def held_out(self, fraction: float):
        """``(train, validation)`` for ``val_split``: the last ``round(rows * fraction)``
        conversations held out, every item of a row on one side (round 48 h15: the items
        were split, so the turns of one conversation trained one at a time could train and
        validate both, and ``--val-split`` held out another count than it checked). The
        counts are said by ``split_note`` (also on the validation part)."""
        from ..data import Subset

        if isinstance(fraction, bool) or not isinstance(fraction, (float, int)) or \
                not 0 < fraction < 1:
            raise ValueError(f"val_split must be a fraction between 0 and 1, got {fraction!r}")
        rows = np.asarray(self.item_rows, dtype=np.int64)
        if len(rows) != len(self.items) or not self.rows:  # filled otherwise: one row an item
            rows, n = np.arange(len(self.items)), len(self.items)
        else:
            n = self.rows
        n_val = int(round(n * fraction))
        if n_val < 1 or n_val >= n:
            raise ValueError(f"val_split={fraction!r} of {n} conversations holds out {n_val}; "
                             f"give a share from {1 / n:.3g} (one conversation) to "
                             f"{(n - 1) / n:.3g} (all but one)" if n > 1 else
                             f"val_split={fraction!r}: {n} conversation; validation needs at "
                             "least 2 (one to train on, one held out)")
        train, val = np.flatnonzero(rows < n - n_val), np.flatnonzero(rows >= n - n_val)
        if not len(train) or not len(val):
            side = "training" if not len(train) else "held-out"
            raise ValueError(f"val_split={fraction!r}: the {side} conversations have no "
                             "assistant token within the block (left out): a larger "
                             "--block-size or another share")
        self.split_note = (f"val_split {fraction:g} holds out the last {n_val} of {n} "
                           f"conversations, whole: {_count(len(val), 'sequence')} to "
                           f"validate, {len(train)} to train")
        keys = self.row_keys if len(self.row_keys) == n else []
        trained = set(keys[:n - n_val])
        also = [i for i in range(n - n_val, n) if keys and keys[i] in trained]
        if also:  # a held-out row the training rows repeat: its loss is not held out
            where = [self.row_where[i] if len(self.row_where) == n else f"row {i + 1}"
                     for i in also]
            self.split_note += (f"; {_count(len(also), 'held-out conversation')} "
                                f"({_places(where)}) also in the training rows, so not "
                                "held out from training: remove the repeats")
        held = Subset(self, val)
        held.split_note = self.split_note
        return Subset(self, train), held

    split_note = None

    def collate(self, items):
        from ..data import PackedBatch

        lens = [len(t) for t, _ in items]
        cu = np.zeros(len(items) + 1, dtype=np.int64)
        cu[1:] = np.cumsum(lens)
        return PackedBatch(np.concatenate([t for t, _ in items]),
                           np.concatenate([y for _, y in items]), cu,
                           np.concatenate([np.arange(n, dtype=np.int64) for n in lens]))

    cut = dropped = rows = 0  # (a subclass that fills items itself cut nothing)

    left_out: list = []
    cut_rows: list = []
    unthought: list = []
    turned: list = []
    merged: list = []
    item_rows: list = []
    row_keys: list = []
    row_where: list = []
    repeats: list = []
    empty: list = []

    @property
    def read_note(self) -> str | None:
        """What a training job says of the rows it did not train on whole (round 41: said
        by ``repr`` only, which no job printed: a user's conversations vanished without a
        word): those left out (no assistant token within the block) and those cut."""
        parts = []
        total = (self.rows or len(self)) + self.dropped * (not self.rows)
        if self.dropped:
            parts.append(f"{self.dropped} of {total} conversations left out: no assistant "
                         f"token within the first {self.block_size + 1} tokens ("
                         f"{_places(self.left_out)})")
        if self.cut_rows:
            parts.append(f"{len(self.cut_rows)} cut to {self.block_size + 1} tokens, their "
                         f"ends not trained on ({_places(self.cut_rows)})")
        if parts:
            parts[-1] += "; a larger --block-size keeps them"
        if self.turned:
            parts.append(f"{len(self.turned)} conversations trained one assistant turn at a "
                         f"time ({_places(self.turned)}): the chat template renders an "
                         "earlier turn otherwise once the conversation goes on (its thinking "
                         "dropped), so each turn is learned after the history as the model "
                         "reads it when writing that turn")
        if self.merged:
            one = len(self.merged) == 1
            parts.append(f"{_count(len(self.merged), 'prompt/completion pair')} share"
                         f"{'s' * one} a token across the prompt's end ("
                         f"{_places(self.merged)}): it is not learned, the loss "
                         "starts at the token after the prompt's text (TRL's at "
                         "len(prompt_ids), with a warning); cut the pair after a newline, or "
                         "with the space starting the completion, to learn it")
        if self.empty:
            parts.append(f"{_count(len(self.empty), 'conversation')} with an empty answer "
                         f"({_places(self.empty)}): only the end of that turn is learned (as "
                         "TRL learns it), teaching the model to answer nothing there")
        if self.repeats:
            parts.append(f"{_count(len(self.repeats), 'conversation')} repeating an earlier "
                         f"one ({_places(self.repeats)}): trained on as often as it appears "
                         "(as TRL does); remove the repeats to weigh each once")
        if self.unthought:  # a field the template drops: trained without it, as TRL would
            parts.append(f"the chat template does not show the thinking of "
                         f"{len(self.unthought)} conversations ({_places(self.unthought)}): "
                         "it is not trained on (a thinking model's template renders "
                         "reasoning_content)")
        return "; ".join(parts) or None

    def __repr__(self) -> str:
        more = ""
        if self.cut:
            more += f", {self.cut} cut to block_size {self.block_size}"
        if self.dropped:
            more += f", {self.dropped} left out (no assistant token within the block)"
        return f"ChatDataset({len(self)} conversations from {self.source}{more})"


# ShareGPT's speakers (``{"from": ..., "value": ...}``) as chat-template roles
_SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant",
                   "assistant": "assistant", "model": "assistant", "bot": "assistant",
                   "chatgpt": "assistant", "system": "system", "tool": "tool",
                   "observation": "tool", "function_response": "tool"}


def as_chat_row(row, where: str = "row"):
    """A chat row in the other layouts users' files have, as ``{"messages": [...]}`` (other
    keys kept), else the row unchanged:

    * ShareGPT (Axolotl, LLaMA-Factory, FastChat): ``{"conversations": [{"from": "human" |
      "gpt" | "system" | ..., "value": ...}]}`` (``"messages"`` holding such turns too), or
      ``"conversations"`` holding ``{"role", "content"}`` messages;
    * TRL's conversational prompt-completion: ``{"prompt": [messages], "completion":
      [messages]}``: the loss on the completion's assistant messages only (TRL's
      ``completion_only_loss``), kept as ``"learn_from"``: the index of the first message
      trained on.

    * Alpaca (LLaMA-Factory's ``formatting: alpaca``, Stanford Alpaca's files):
      ``{"instruction", "input", "output"}`` (``input`` optional, ``system`` and
      ``history``: ``[[question, answer], ...]`` earlier turns, optional): the user's turn
      is the instruction and the input joined by a newline (LLaMA-Factory's
      ``"\n".join``), the answer the assistant's, learned as a prompt/completion pair.

    LLaMA-Factory's ShareGPT tool rows: a ``"function_call"`` turn (its value the JSON text of
    ``{"name", "arguments"}``, or of a list of them) is an assistant message with
    ``tool_calls`` (``[{"type": "function", "function": {"name", "arguments"}}]``, content
    ``""``), an ``"observation"`` turn a ``tool`` message; the row's ``tools`` (LLaMA-Factory
    keeps the JSON text of bare ``{"name", "description", "parameters"}`` schemas) are parsed
    and wrapped as transformers' ``{"type": "function", "function": ...}``, and its
    ``system`` text is the first message when the turns have none.

    A speaker ShareGPT does not name is one error (``where`` names the row)."""
    if not isinstance(row, dict):
        return row
    if isinstance(row.get("instruction"), str) and isinstance(row.get("output"), str) \
            and "messages" not in row:
        return dict({k: v for k, v in row.items()
                     if k not in ("instruction", "input", "output", "history", "system")},
                    messages=alpaca_messages(row, where))
    prompt, completion = row.get("prompt"), row.get("completion")
    if isinstance(prompt, list) and isinstance(completion, list) and all(
            isinstance(m, dict) and "role" in m for m in prompt + completion):
        out = {k: v for k, v in row.items() if k not in ("prompt", "completion")}
        return dict(out, messages=list(prompt) + list(completion), learn_from=len(prompt))
    key = "messages" if "messages" in row else "conversations"
    turns = row.get(key)
    if not isinstance(turns, list) or not turns or not all(isinstance(m, dict) for m in turns):
        return row
    out = {k: v for k, v in row.items() if k != key}
    if all("from" in m and "value" in m for m in turns):
        messages = []
        for i, m in enumerate(turns):
            speaker = str(m["from"]).lower()
            if speaker == "function_call":
                messages.append({"role": "assistant", "content": "",
                                 "tool_calls": _sharegpt_calls(m["value"], f"{where}: turn {i}")})
                continue
            role = _SHAREGPT_ROLES.get(speaker)
            if role is None:
                raise ValueError(f"{where}: turn {i} is from {m['from']!r}; ShareGPT turns are "
                                 "from " + ", ".join(sorted([*_SHAREGPT_ROLES, "function_call"])))
            messages.append({"role": role, "content": m["value"]})
        system = out.pop("system", None)
        if isinstance(system, str) and system and messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": system})
        if "tools" in out:
            out["tools"] = _sharegpt_tools(out["tools"], where)
        return dict(out, messages=messages)
    if key == "conversations" and all("role" in m for m in turns):
        return dict(out, messages=turns)
    return row


def _sharegpt_calls(value, where: str) -> list:
    """The ``tool_calls`` of a LLaMA-Factory ``function_call`` turn: its value is the JSON
    text (or the object) of one ``{"name", "arguments"}`` call or a list of them."""
    calls = value
    if isinstance(value, str):
        try:
            calls = json.loads(value)
        except ValueError as e:
            raise ValueError(f"{where} (function_call) is not JSON ({e}): LLaMA-Factory's "
                             'function_call value is {"name": ..., "arguments": {...}} or a '
                             "list of them") from None
    calls = calls if isinstance(calls, list) else [calls]
    out = []
    for call in calls:
        if isinstance(call, dict) and call.get("type") == "function" \
                and isinstance(call.get("function"), dict):
            call = call["function"]
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                or "arguments" not in call:
            raise ValueError(f"{where} (function_call) holds {call!r}: each call is "
                             '{"name": ..., "arguments": {...}}')
        out.append({"type": "function", "function": {"name": call["name"],
                                                     "arguments": call["arguments"]}})
    return out


def _sharegpt_tools(tools, where: str):
    """A ShareGPT row's ``tools`` (LLaMA-Factory: the JSON text of bare function schemas) as
    transformers' ``[{"type": "function", "function": schema}]``."""
    if isinstance(tools, str):
        try:
            tools = json.loads(tools) if tools.strip() else None
        except ValueError as e:
            raise ValueError(f"{where}: 'tools' is text but not JSON ({e})") from None
    if isinstance(tools, dict):
        tools = [tools]
    if not isinstance(tools, list):
        return tools
    return [{"type": "function", "function": t}
            if isinstance(t, dict) and "name" in t and "type" not in t else t for t in tools]


def alpaca_prompt(instruction: str, extra) -> str:
    """The user's turn of an Alpaca row: the instruction, then the input on a new line when
    there is one (LLaMA-Factory's ``AlpacaDatasetConverter``)."""
    parts = [p for p in (instruction, extra) if isinstance(p, str) and p]
    return "\n".join(parts)


def alpaca_messages(row: dict, where: str = "row") -> list:
    """The messages of an Alpaca row (:func:`as_chat_row`)."""
    extra = row.get("input")
    if extra is not None and not isinstance(extra, str):
        raise ValueError(f"{where}: 'input' is text (or absent), got {type(extra).__name__}")
    messages = []
    system = row.get("system")
    if isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    history = row.get("history") or []
    if not isinstance(history, list) or not all(
            isinstance(h, (list, tuple)) and len(h) == 2 and all(isinstance(x, str) for x in h)
            for h in history):
        raise ValueError(f"{where}: 'history' is a list of [question, answer] pairs of text, "
                         f"got {history!r}")
    for question, answer in history:
        messages += [{"role": "user", "content": question},
                     {"role": "assistant", "content": answer}]
    prompt = alpaca_prompt(row["instruction"], extra)
    if not prompt:
        raise ValueError(f"{where}: the instruction and input are both empty")
    return messages + [{"role": "user", "content": prompt},
                       {"role": "assistant", "content": row["output"]}]


def _empty_answer(row, pair) -> bool:
    """Whether a row's answer (its completion, or an assistant message without tool
    calls) is empty text."""
    if pair is not None:
        return not pair[1].strip()
    messages = row.get("messages") if isinstance(row, dict) else None
    return isinstance(messages, list) and any(
        isinstance(m, dict) and m.get("role") == "assistant" and not m.get("tool_calls")
        and not any(m.get(k) for k in _REASONING_FIELDS)
        and isinstance(m.get("content", ""), str) and not (m.get("content") or "").strip()
        for m in messages)


def _prompt_completion(row):
    """``(prompt, completion)`` of a ``{"prompt", "completion"|"response"}`` row, else None."""
    if not isinstance(row, dict) or "messages" in row or not isinstance(row.get("prompt"), str):
        return None
    answer = row.get("completion", row.get("response"))
    return (row["prompt"], answer) if isinstance(answer, str) else None


def _row_template_kwargs(row, where: str) -> dict:
    """What a row gives the chat template besides its messages, as TRL's SFT trainer passes
    it (``apply_chat_template(messages, tools=row["tools"], **row["chat_template_kwargs"])``):
    its ``tools`` (JSON-schema dicts, or the JSON text of them as a data set column holds
    it) and ``chat_template_kwargs`` (``enable_thinking``, ...)."""
    if not isinstance(row, dict):
        return {}
    out = {}
    tools = row.get("tools")
    if isinstance(tools, str):
        import json

        try:
            tools = json.loads(tools) if tools.strip() else None
        except ValueError as e:
            raise ValueError(f"{where}: 'tools' is text but not JSON ({e})") from None
    if tools:
        out["tools"] = tools
    extra = row.get("chat_template_kwargs")
    if extra is not None:
        if not isinstance(extra, dict):
            raise ValueError(f"{where}: 'chat_template_kwargs' must be an object, got "
                             f"{type(extra).__name__}")
        out.update(extra)
    return out


def _row_messages(row, pair, source, where) -> list:
    """The messages of a row (a prompt/completion pair as a user and an assistant message),
    or one error naming the row."""
    if pair is not None:
        system = row.get("system")
        return ([{"role": "system", "content": system}] if isinstance(system, str) and system
                else []) + [{"role": "user", "content": pair[0]},
                            {"role": "assistant", "content": pair[1]}]
    messages = row.get("messages") if isinstance(row, dict) else None
    if not isinstance(messages, list) or not messages:
        keys = f" (its keys: {', '.join(map(str, row))})" if isinstance(row, dict) else ""
        raise ValueError(f"{source}: {where} has no 'messages' list{keys}: each row is "
                         '{"messages": [{"role": ..., "content": ...}, ...]} or {"prompt": '
                         '..., "completion": ...}')
    if not any(m.get("role") == "assistant" for m in messages if isinstance(m, dict)):
        raise ValueError(f"{source}: {where} has no assistant message to learn")
    return messages


def _plain_pair(tokenizer, prompt: str, completion: str):
    """Ids of ``prompt + completion`` (the text encoded whole, as TRL's prompt/completion
    rows and as ``generate`` continues the prompt's ids) then the eos token (when the
    tokenizer has one), which of them are learned, and whether a token spans the prompt's
    end. Round 48 (h5): the two were encoded apart, so a SentencePiece tokenizer's dummy
    prefix put a ``▁`` before every completion (``?\n ▁ Four`` learned where the text reads
    ``?\n Four``).

    Learned: the tokens after the prompt's text and the eos. A token holding both the
    prompt's last character and the completion's first (``Hello wor`` + ``ld``: ``rld``) is
    not learned (round 48 h15: it was, so the model learned to write the prompt's end
    again); TRL starts the loss at ``len(prompt_ids)`` and warns of the mismatch, which is
    this rule wherever the prompt's ids begin the text's (and may learn a prompt's
    character, or skip a completion's token, where they do not)."""
    text = prompt + completion
    ids, owner = tokenizer.encode_with_offsets(text)
    learn = np.zeros(len(ids), dtype=bool)
    held = np.flatnonzero(owner[len(prompt):] >= 0)  # the completion's characters' tokens
    first = _token_at(owner, len(prompt) + int(held[0])) if len(held) else None
    merged = first is not None and prompt != "" and _token_at(owner, len(prompt) - 1) == first
    if first is not None:
        learn[first + merged:] = True
    eos = _eos_id(tokenizer)
    if eos is not None:
        ids, learn = np.append(ids, eos), np.append(learn, True)
    return np.asarray(ids, dtype=np.int64), learn, merged


def _eos_id(tokenizer):
    """The tokenizer's eos token id (its config's ``eos_token``), or None."""
    template = getattr(tokenizer, "chat_template", None)
    name = (template.special_tokens.get("eos_token") if template is not None else None) \
        or _eos_text(getattr(tokenizer, "path", None))
    return tokenizer.token_id(name) if name else None


def _eos_text(path):
    if path is None:
        return None
    config = Path(path).parent / "tokenizer_config.json"
    if not config.is_file():
        return None
    try:
        return _token_text(json.loads(config.read_text()).get("eos_token"))
    except (OSError, json.JSONDecodeError):
        return None


def _unmark(marked: str) -> tuple[str, list[tuple]]:
    """The text without the generation marks, and the (start, end) of each marked part."""
    out, spans, pos, start = [], [], 0, None
    for part in _MARK_SPLIT.split(marked):
        if part == _MARKS[0]:
            start = pos
        elif part == _MARKS[1]:
            if start is not None and pos > start:
                spans.append((start, pos))
            start = None
        else:
            out.append(part)
            pos += len(part)
    return "".join(out), spans


def _token_at(owner: np.ndarray, char: int):
    """The token holding character ``char`` (None for a character no token covers)."""
    if not 0 <= char < len(owner) or owner[char] < 0:
        return None
    return int(owner[char])


class Rows(list):
    """The rows of a file, ``labels`` naming each where a user finds it (``"line 7"`` of a
    ``.jsonl``, ``"row 3"`` of a ``.json`` list): errors and notes about a row say it."""

    labels: list = []


def read_jsonl(path) -> Rows:
    """The rows of a JSONL file, blank lines skipped; lines that are not JSON are one error
    naming each of them (their numbers, the parser's reason), so that one look fixes the
    file (round 41: the first bad line only, then the next on the next run)."""
    rows, labels, bad = Rows(), [], []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
                labels.append(f"line {n}")
            except json.JSONDecodeError as exc:
                bad.append(f"line {n} ({exc.msg})")
    if len(bad) == 1:
        raise ValueError(f"{path}: {bad[0].replace(' (', ' is not JSON (', 1)}")
    if bad:
        raise ValueError(f"{path}: {len(bad)} lines are not JSON: {_listed(bad)}; each line "
                         "is one JSON object (fix or delete them)")
    rows.labels = labels
    return rows


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("s" if n != 1 else "")


def _listed(items, most: int = 8) -> str:
    """``a | b | c`` (the first ``most``, then how many more)."""
    more = len(items) - most
    return " | ".join(items[:most]) + (f" | and {more} more" if more > 0 else "")


def _render_row(template, messages, kwargs, where: str):
    """``template.assistant_spans`` of a row; what the template cannot render is one error
    naming the row and what to change (round 41: a bare ``TypeError: can only concatenate
    list (not "str") to list`` from the template, no row, for content given as a list of
    parts). Returns the pieces trained on, ``[(text, spans, turn)]``: the conversation
    whole (``turn`` None); or, when the template renders an earlier assistant turn otherwise
    once the conversation goes on (:class:`TurnsRerendered`: a Qwen3-style thinking template
    drops the thinking of the turns before the last user message), one piece per assistant
    message ``turn``: the conversation through it, as the model reads it when it writes
    that turn, and its span alone (round 48: such a row was refused, "does not render a
    conversation as a prefix of its continuation")."""
    try:
        try:
            text, spans = template.assistant_spans(messages, **kwargs)
            return [(text, spans, None)]
        except TurnsRerendered:  # each assistant turn with the history it was written after
            return [(*_turn_text(template, messages, i, kwargs), i)
                    for i, m in enumerate(messages) if m.get("role") == "assistant"]
    except Exception as exc:  # jinja's errors, the template's raise_exception, spans
        hint = ""
        if any(isinstance(m, dict) and isinstance(m.get("content"), list) for m in messages):
            hint = ("; its content is a list of parts, and this checkpoint's template "
                    "takes text: give each message's content as one string")
        raise ValueError(f"{where}: the checkpoint's chat template cannot render this "
                         f"conversation ({type(exc).__name__}: {exc}){hint}") from None


def _turn_text(template, messages, i: int, kwargs) -> tuple[str, list[tuple]]:
    """The conversation through assistant message ``i`` and that message's span alone."""
    upto = template.render(messages[:i + 1], **kwargs)
    return upto, [template.turn_span(messages, i, upto, kwargs)]


def _learned(tokenizer, text: str, spans) -> tuple:
    """``text``'s ids and which are learned: the tokens holding each span's characters."""
    ids, owner = tokenizer.encode_with_offsets(text)
    learn = np.zeros(len(ids), dtype=bool)
    for start, end in spans:  # the tokens holding the span's first, last character
        a, b = _token_at(owner, start), _token_at(owner, end - 1)
        if a is not None and b is not None:
            learn[a:b + 1] = True
    return ids, learn


def _thinking_unrendered(messages, text: str) -> bool:
    """Whether an assistant message's thinking (``reasoning_content``, ``thinking`` or
    ``reasoning``) is missing from the text the template rendered."""
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "assistant":
            thought = next((m[k] for k in _REASONING_FIELDS if m.get(k)), None)
            if isinstance(thought, str) and thought.strip() and thought.strip() not in text:
                return True
    return False


def _places(labels, most: int = 8) -> str:
    """``lines 3, 9, 12`` (or ``rows ...``) of labels ``["line 3", ...]``, the first
    ``most`` and how many more."""
    if not labels:
        return "..."
    word = labels[0].split(" ")[0]
    if not all(str(x).startswith(word + " ") for x in labels):
        return _listed(list(labels), most)
    nums = [str(x).split(" ", 1)[1] for x in labels]
    more = len(nums) - most
    return (f"{word}s " if len(nums) > 1 else f"{word} ") + ", ".join(nums[:most]) \
        + (f" and {more} more" if more > 0 else "")


# the roles chat templates render (transformers', OpenAI's, Llama 3.1's ``ipython``)
CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function", "ipython")
_ROLE_HINT = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant",
              "ai": "assistant", "chatgpt": "assistant", "observation": "tool",
              "function_call": "assistant", "function_response": "tool"}


def chat_row_problem(row) -> str | None:
    """What keeps a chat row (as :func:`as_chat_row` gives it) from training, in a few words,
    or None: no messages, a message that is not ``{"role", "content"}``, a role chat
    templates do not render (ERNIE-4.5's template skips a turn of another role without a
    word: a ``"human"`` turn would vanish from the text trained on), or no assistant
    message to learn."""
    if _prompt_completion(row) is not None:
        return None
    messages = row.get("messages") if isinstance(row, dict) else None
    if not isinstance(messages, list) or not messages:
        keys = f" (its keys: {', '.join(map(str, row))})" if isinstance(row, dict) else ""
        return f"no 'messages' list{keys}"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            return f"message {i} is {m!r:.60}, not {{\"role\": ..., \"content\": ...}}"
        role = m["role"]
        if role not in CHAT_ROLES:
            hint = _ROLE_HINT.get(str(role).lower())
            return (f"message {i} has role {role!r}" + (f" (meant {hint!r}?)" if hint else "")
                    + ", not one of " + ", ".join(CHAT_ROLES))
        content = m.get("content")
        if not (isinstance(content, (str, list)) or (content is None and m.get("tool_calls"))):
            return (f"message {i} ({role}) has " + ("no 'content'" if "content" not in m else
                                                    f"content {content!r:.40}")
                    + ": a text (or a list of parts)")
    if not any(m["role"] == "assistant" for m in messages):
        return "no assistant message to learn"
    return None
