"""Answers from a checkpoint: a prompt in, the generated text out, streamed as it is written.

:func:`reply` is the library call behind ``%chat`` / ``%generate`` and ``python -m skiff
chat|generate``: it renders the prompt with the checkpoint's chat template (``chat=True``;
the thinking switch goes to the template as ``enable_thinking``) or takes it as plain text,
generates with :meth:`ErnieForCausalLM.generate`, and returns a :class:`ChatReply`: the
answer, the thinking (``<think>...</think>``) apart from it, the token counts and the speed.
``on_text(thinking, answer)`` sees the text so far while it is written.

:func:`run` is the job entry (``run(config, reporter)``): it loads the checkpoint (kept
loaded for the next call in this process), streams the partial text into the job's events
(``info`` fields ``thinking`` and ``text``, at most ~10 a second) with the token count as
progress, and returns the reply, whose ``to_json`` is the job's result.

>>> r = reply(model, "What is 2 + 2?", max_new_tokens=64)      # doctest: +SKIP
>>> r.text, r.thinking, r.tokens_per_s                           # doctest: +SKIP
"""

from __future__ import annotations

import html
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .chat import opens_thinking, split_thinking

__all__ = ["ChatReply", "conversation", "reply", "run", "load_cached"]


@dataclass
class ChatReply:
    """What a model answered. ``text`` is the answer without the thinking, ``thinking``
    what stood between the thinking tags, ``raw`` the decoded new tokens as generated
    (eos left out), ``tokens`` how many were generated, ``stop`` why it ended (``eos``,
    ``stop string``, ``length``). ``messages`` (a chat's): the conversation with this answer
    last (``{"role": "assistant", "content": text}``, the thinking left out, as ERNIE's and
    Qwen's cards say to keep earlier turns), what the next turn's ``history`` takes (as
    transformers' chat pipeline returns the messages with its answer appended)."""

    text: str
    thinking: str
    raw: str
    tokens: int
    prompt_tokens: int
    seconds: float
    tokens_per_s: float
    stop: str
    model: str = ""
    messages: list | None = None

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p, cycle):
        p.text(self.text if not self.thinking else f"[thinking] {self.thinking}\n\n{self.text}")

    def _repr_html_(self) -> str:
        return reply_html(self.thinking, self.text, footer=(
            f"{self.tokens} tokens · {self.tokens_per_s:.1f} tokens/s · {self.stop}"))


def reply_html(thinking: str, answer: str, *, footer: str = "", writing: bool = False) -> str:
    """An answer as HTML: the thinking collapsed in a ``<details>`` block, then the answer."""
    parts = []
    if thinking:
        parts.append("<details class='skiff-thinking'><summary style='color:#888'>thinking"
                     f"{' …' if writing and not answer else ''}</summary><div style='color:"
                     f"#666;white-space:pre-wrap'>{html.escape(thinking)}</div></details>")
    cursor = "▌" if writing else ""
    parts.append(f"<div class='skiff-answer' style='white-space:pre-wrap'>"
                 f"{html.escape(answer)}{cursor}</div>")
    if footer:
        parts.append(f"<div style='color:#888;font-size:85%'>{html.escape(footer)}</div>")
    return "".join(parts)


def prompt_ids(model, prompt: str, *, chat: bool = True, system: str | None = None,
               thinking: bool | None = None, tokenizer=None, history=None) -> np.ndarray:
    """The token ids the model reads for ``prompt``: the chat template's rendering of a
    user message (with ``system`` first, the generation prompt last) or the plain text."""
    tok = tokenizer or getattr(model, "tokenizer", None)
    return tok.encode(prompt_text(model, prompt, chat=chat, system=system, thinking=thinking,
                                  tokenizer=tok, history=history))


def prompt_text(model, prompt: str, *, chat: bool = True, system: str | None = None,
                thinking: bool | None = None, tokenizer=None, history=None) -> str:
    """The text :func:`prompt_ids` encodes; ``history``: the earlier turns (messages, see
    :func:`conversation`) before the user's ``prompt``."""
    tok = tokenizer or getattr(model, "tokenizer", None)
    if tok is None:
        raise ValueError(f"the checkpoint {getattr(model, 'source_folder', '')!r} has no "
                         "tokenizer (tokenizer.json or tokenizer.model)")
    if isinstance(prompt, (list, tuple)) and chat:  # a conversation (round 47 h10)
        messages = asked_messages(conversation(history, system), prompt)
    elif not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("give a prompt: the text to answer" if not isinstance(
            prompt, (list, tuple)) else "a conversation goes into the chat template, which "
            "plain text leaves out: give chat=True (--chat), or a text prompt")
    elif not chat:
        if history:
            raise ValueError("history goes into the chat template, which plain text leaves "
                             "out: give chat=True (--chat), or no history")
        return prompt
    else:
        messages = conversation(history, system) + [{"role": "user", "content": prompt}]
    kwargs = {} if thinking is None else {"enable_thinking": bool(thinking)}
    return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                   **kwargs)


def reply(model, prompt: str, *, max_new_tokens: int = 256, chat: bool = True,
          system: str | None = None, thinking: bool | None = None, do_sample: bool = False,
          temperature: float | None = None, top_k: int | None = None,
          top_p: float | None = None, repetition_penalty: float | None = None,
          stop_strings=None, seed: int | None = None,
          on_text=None, should_stop=None, tokenizer=None, history=None,
          no_repeat_ngram_size: int | None = None, num_beams: int | None = None) -> ChatReply:
    """Generate an answer to ``prompt`` (module docstring); greedy unless ``do_sample``.
    ``on_text(thinking, answer, tokens)`` is called after each token; ``should_stop()``
    ending true stops generation early (raising what it raises). ``history``: the earlier
    turns (a list of ``{"role", "content"}`` messages, or a previous reply: its
    ``messages``); the reply's ``messages`` carry the conversation on.
    ``no_repeat_ngram_size``: transformers' option of that name. ``num_beams`` > 1:
    transformers' beam search (beam sampling with ``do_sample``), which streams nothing
    (transformers refuses a streamer with beams): ``on_text`` sees the answer once, whole,
    and ``should_stop`` is asked between the beams' steps."""
    tok = tokenizer or getattr(model, "tokenizer", None)
    history = conversation(history, system) if chat else history
    rendered = prompt_text(model, prompt, chat=chat, thinking=thinking, tokenizer=tok,
                           history=history)
    ids = tok.encode(rendered)
    limit = model.config.max_position_embeddings
    if len(ids) + max_new_tokens > limit:
        raise ValueError(f"the prompt is {len(ids)} tokens; with {max_new_tokens} new tokens "
                         f"it exceeds the model's context of {limit} positions")
    eos = model._generation_value("eos_token_id", "config")
    eos = set() if eos is None else set(np.atleast_1d(eos).tolist())
    inside = bool(chat) and opens_thinking(rendered)  # the template left <think> open
    new: list[int] = []

    def streamer(step_ids):
        new.append(int(np.asarray(step_ids).reshape(-1)[0]))
        if should_stop is not None:
            should_stop()
        if on_text is not None:  # the text the reply will give, so far
            cut = _decode(tok, new, eos, stop_strings, ids)
            raw = _decode(tok, new, eos, None) if stop_strings else cut
            think, answer = _split(_shown(tok, new, eos, stop_strings, raw, cut), inside)
            on_text(_visible(tok, think), _visible(tok, answer), len(new))

    more = {} if no_repeat_ngram_size is None else {
        "no_repeat_ngram_size": int(no_repeat_ngram_size)}
    beams = int(num_beams or 1) > 1
    if beams:  # no streamer (transformers' refusal); a cancel is asked at each step
        more["num_beams"] = int(num_beams)
        if should_stop is not None:
            def asked(input_ids, scores=None):
                should_stop()
                return False

            more["stopping_criteria"] = [asked]
    if do_sample and seed is not None:  # transformers' draws after torch.manual_seed(seed)
        more["generator"], seed = _batch_generator(seed), None
    start = time.perf_counter()
    out = model.generate(ids[None], max_new_tokens, do_sample=do_sample,
                         temperature=temperature, top_k=top_k, top_p=top_p,
                         repetition_penalty=repetition_penalty, seed=seed,
                         stop_strings=stop_strings, tokenizer=tok,
                         streamer=None if beams else streamer, **more)
    seconds = time.perf_counter() - start
    gen = [int(t) for t in np.asarray(out)[0, len(ids):]]
    if beams and on_text is not None:  # the one best beam (no padding after it), whole
        cut = _decode(tok, gen, eos, stop_strings, ids)
        think, answer = _split(_shown(tok, gen, eos, stop_strings,
                                      _decode(tok, gen, eos, None), cut), inside)
        on_text(_visible(tok, think), _visible(tok, answer), len(gen))
    return _reply(model, tok, gen, ids, eos, stop_strings, inside, seconds,
                  asked_messages(history, prompt) if chat else None, limit=max_new_tokens)


def _reply(model, tok, gen, ids, eos, stop_strings, inside, seconds, asked,
           limit=None) -> ChatReply:
    """The reply of the generated tokens ``gen`` after the prompt's ``ids``: the text cut at
    a stop string, why it ended, its thinking apart, and (``asked``: the conversation's
    messages up to the prompt, or None outside a chat) the messages with the answer.
    ``limit``: the new tokens allowed (fewer made, no eos: a stop string ended it, even
    where the cut leaves the text as decoded)."""
    raw = _decode(tok, gen, eos, None)
    text = _decode(tok, gen, eos, stop_strings, ids)
    if gen and gen[-1] in eos:
        why = "eos"
    elif stop_strings and (text != raw or (limit is not None and len(gen) < limit)):
        why = "stop string"
    else:
        why = "length"
    think, answer = _split(_shown(tok, gen, eos, stop_strings, raw, text), inside)
    messages = None if asked is None else \
        asked + [{"role": "assistant", "content": _visible(tok, answer)}]
    return ChatReply(text=_visible(tok, answer), thinking=_visible(tok, think), raw=raw,
                     tokens=len(gen), prompt_tokens=int(len(ids)), seconds=round(seconds, 4),
                     tokens_per_s=round(len(gen) / seconds, 2) if seconds > 0 else 0.0,
                     stop=why, model=str(getattr(model, "source_folder", "") or ""),
                     messages=messages)


# ---- answers to a batch of prompts in one generation (round 44 h18, round 45 h6) -----------
# ``--prompts FILE`` answered one prompt after another; a transformers user hands its
# pipeline (or ``generate``) the list as one left-padded batch. Greedy and sampled answers go
# through ``generate_batch``: one packed prefill of every prompt and batched decode steps,
# each row ending at its own eos or stop string. A sampled batch with a seed draws as
# transformers' ``torch.manual_seed(seed)`` then ``generate`` on the left-padded batch
# (``torch.multinomial`` over the batch's rows, a torch generator seeded so: the same tokens;
# without torch, numpy's generator of that seed). Beams (``num_beams``) search the
# left-padded batch with its attention mask, as transformers' ``generate`` does.
def batch_replies(model, prompts: list[str], *, max_new_tokens: int = 256, chat: bool = True,
                  system: str | None = None, thinking: bool | None = None,
                  repetition_penalty: float | None = None, stop_strings=None,
                  history=None, no_repeat_ngram_size: int | None = None,
                  on_step=None, do_sample: bool = False, temperature: float | None = None,
                  top_k: int | None = None, top_p: float | None = None,
                  seed: int | None = None, num_beams: int | None = None,
                  ) -> tuple[list[ChatReply], float]:
    """Each prompt's :class:`ChatReply` (as :func:`.chat_reply.reply` gives it), made in one
    batch, and the batch's seconds. ``on_step(tokens)``: called after each decode step with
    the tokens made so far (a cancel raises from it; with beams, asked at each step).
    ``do_sample`` / ``temperature`` / ``top_k`` / ``top_p`` / ``seed``: sampling (the
    draws: the section's comment); ``num_beams`` > 1: beam search over the batch."""
    tok = getattr(model, "tokenizer", None)
    history = conversation(history, system) if chat else history
    rendered = [prompt_text(model, p, chat=chat, thinking=thinking, tokenizer=tok,
                            history=history) for p in prompts]
    ids = [np.asarray(tok.encode(r), dtype=np.int64).reshape(-1) for r in rendered]
    limit = model.config.max_position_embeddings
    over = [n for n, i in enumerate(ids, 1) if len(i) + max_new_tokens > limit]
    if over:  # each one named (round 45 h6: "the longest prompt" said not which)
        said = ", ".join(f"{n} ({len(ids[n - 1])} tokens)" for n in over[:5]) + (
            f" and {len(over) - 5} more" if len(over) > 5 else "")
        raise ValueError(f"prompt{'s' if len(over) > 1 else ''} {said} of {len(ids)}: with "
                         f"{max_new_tokens} new tokens, over the model's context of {limit} "
                         "positions (shorten them or ask fewer new tokens)")
    eos = model._generation_value("eos_token_id", "config")
    eos = set() if eos is None else set(np.atleast_1d(eos).tolist())
    made = [0]

    def streamer(rows, step_ids):
        made[0] += int(np.asarray(step_ids).size)
        if on_step is not None:
            on_step(made[0])

    more = {} if no_repeat_ngram_size is None else {
        "no_repeat_ngram_size": int(no_repeat_ngram_size)}
    sampling = dict(do_sample=bool(do_sample), temperature=temperature, top_k=top_k,
                    top_p=top_p, repetition_penalty=repetition_penalty,
                    stop_strings=stop_strings, tokenizer=tok)
    if do_sample and seed is not None:
        sampling["generator"] = _batch_generator(seed)
    start = time.perf_counter()
    if int(num_beams or 1) > 1:
        outs = _beam_batch(model, ids, int(num_beams), max_new_tokens, eos, on_step,
                           {**sampling, **more})
    else:
        outs = model.generate_batch(ids, max_new_tokens, streamer=streamer, **sampling,
                                    **more)
    seconds = time.perf_counter() - start
    replies = []
    for prompt, text_in, p_ids, out in zip(prompts, rendered, ids, outs):
        gen = [int(t) for t in np.asarray(out).reshape(-1)[len(p_ids):]]
        inside = bool(chat) and opens_thinking(text_in)
        replies.append(_reply(model, tok, gen, p_ids, eos, stop_strings, inside, seconds,
                              asked_messages(history, prompt) if chat else None,
                              limit=max_new_tokens))
    return replies, seconds


def _batch_generator(seed: int):
    """The generator a seeded answer (one prompt's, or a batch's) draws from: torch's,
    seeded as ``torch.manual_seed`` seeds transformers' draws, when torch is installed; else
    numpy's of that seed."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a test peer here
        return np.random.default_rng(int(seed))
    return torch.Generator().manual_seed(int(seed))


def _beam_batch(model, ids, num_beams, max_new_tokens, eos, on_step, options) -> list:
    """Beam search over the prompts ``ids`` as one left-padded batch (transformers'
    ``generate(padded, attention_mask=mask, num_beams=N)``): each row's prompt then its
    new tokens up to its first eos (the padding after a finished row left out)."""
    pad = model._generation_value("pad_token_id", "config")
    pad = int(pad) if pad is not None else (min(eos) if eos else 0)
    width = max(len(i) for i in ids)
    padded = np.full((len(ids), width), pad, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for b, row in enumerate(ids):
        padded[b, width - len(row):], mask[b, width - len(row):] = row, 1
    if on_step is not None:
        def asked(input_ids, scores=None):
            on_step(0)
            return False

        options["stopping_criteria"] = [asked]
    out = np.asarray(model.generate(padded, max_new_tokens, attention_mask=mask,
                                    num_beams=num_beams, **options))
    rows = []
    for row, p_ids in zip(out, ids):
        gen = [int(t) for t in row[width:]]
        cut = next((i + 1 for i, t in enumerate(gen) if t in eos), len(gen))
        gen = gen[:cut]
        while gen and cut == len(row) - width and pad not in eos and gen[-1] == pad:
            gen.pop()  # a row a stop string ended, padded after (no eos to cut at)
        rows.append(np.concatenate([p_ids, np.asarray(gen, dtype=np.int64)]))
    return rows


_ROLES = ("system", "user", "assistant", "tool")


def asked_messages(history: list, prompt) -> list[dict]:
    """The messages a prompt asks after ``history`` (:func:`conversation`'s list): a text is
    the user's message; a conversation (a list of ``{"role", "content"}`` messages ending
    with the user's, a ``--prompts`` JSONL row's ``"messages"``: each row of a batch its own
    turns, as a transformers user hands its pipeline a list of chats) follows the history
    (one system message in all)."""
    if isinstance(prompt, str):
        return history + [{"role": "user", "content": prompt}]
    turns = conversation(list(prompt))
    if not turns or turns[-1]["role"] != "user":
        raise ValueError("a conversation to answer ends with the user's message, got "
                         f"{turns[-1]['role'] if turns else 'no message'!r} last")
    out = history + turns
    if sum(m["role"] == "system" for m in out) > 1:
        raise ValueError("give the system message once: the conversation has one, and a "
                         "system text (or history) was given too")
    return out


def conversation(history=None, system: str | None = None) -> list[dict]:
    """The earlier turns as chat messages (a new list): ``history`` a list of
    ``{"role", "content"}`` dicts, a previous :class:`ChatReply` or its JSON (a
    ``chat --json`` document or result: its ``messages``), or None; ``system`` goes first
    (refused when the history has a system message of its own). One clear error for a
    malformed turn."""
    if isinstance(history, ChatReply):
        history = history.messages
    elif isinstance(history, dict):
        doc = history.get("result", history)
        history = doc.get("messages") if isinstance(doc, dict) else None
        if history is None:
            raise ValueError("history: a dict without messages (give a list of "
                             "{'role', 'content'} messages, or a chat reply's JSON)")
    if history is None:
        history = []
    if isinstance(history, (str, bytes)) or not hasattr(history, "__iter__"):
        raise ValueError(f"history: a list of {{'role', 'content'}} messages, got "
                         f"{type(history).__name__}")
    out = []
    for i, m in enumerate(history):
        if not isinstance(m, dict) or m.get("role") not in _ROLES or not isinstance(
                m.get("content"), str):
            raise ValueError(f"history: message {i} is not a {{'role', 'content'}} message "
                             f"with a role of {', '.join(_ROLES)} and a text content: {m!r}")
        out.append(dict(m))
    if system:
        if any(m["role"] == "system" for m in out):
            raise ValueError("give the system message once: the history has one, and a "
                             "system text was given too")
        out.insert(0, {"role": "system", "content": system})
    return out


def _visible(tok, text: str) -> str:
    """``text`` without the tokenizer's special tokens (a template's end-of-turn marker the
    model wrote before its eos, ...), as transformers' chat pipeline decodes an answer
    (``skip_special_tokens=True``); the thinking tags were split off before. ``raw`` keeps
    them."""
    for special in sorted(getattr(tok, "all_special_tokens", None) or (), key=len,
                          reverse=True):
        if special and special not in ("<think>", "</think>"):
            text = text.replace(special, "")
    return text


def _split(text: str, inside: bool) -> tuple[str, str]:
    """``(thinking, answer)`` of a decoded answer. Without thinking tags (and no thinking
    block the prompt left open, no ``<response>`` wrap) the answer is the text as decoded,
    its leading / trailing spaces and newlines kept: transformers' chat pipeline returns
    ``decode(new ids, skip_special_tokens=True)`` as the assistant's content, unstripped
    (round 46 h10; it was stripped). A thinking model's answer keeps
    :func:`.chat.split_thinking`'s strip around the tags (its card's parse)."""
    if inside or "<think>" in text or "</think>" in text \
            or text.lstrip().startswith("<response>"):
        return split_thinking(text, inside=inside)
    return "", text


def _shown(tok, gen, eos: set, stop_strings, raw: str, cut: str) -> str:
    """The answer's text of the generated ``gen`` (``raw``: their decode, ``cut``: it cut
    before a stop string by :func:`_decode`), without the special tokens. Not cut: the
    decode of the ids without the special ones (round 45 h6). Cut: that decode cut where it
    holds the stop string: one met inside a special token's text (transformers' stop strings
    match the tokens' strings, special ones too, and stop there) left a fragment of it
    (``'...<|'``); the decode a transformers user makes (``skip_special_tokens=True``) holds
    no stop string then, and is the answer whole (round 47 h10)."""
    if cut == raw:
        return _decode_unspecial(tok, gen, eos)
    if not cut:  # a stop string begun in the prompt: no text
        return cut
    return stop_cut(_decode_unspecial(tok, gen, eos),
                    [stop_strings] if isinstance(stop_strings, str) else stop_strings)


def _decode_unspecial(tok, ids, eos: set) -> str:
    """Text of generated ``ids`` (eos left out) decoded without the special tokens (the
    thinking tags kept), as transformers' ``decode(..., skip_special_tokens=True)``: byte
    pieces on either side of a special token are decoded together (two bytes of no UTF-8
    character are two U+FFFD, as the byte-fallback decoder gives), where decoding them with
    it and deleting its text afterwards (:func:`_visible`) leaves one byte's text apart."""
    if ids and ids[-1] in eos:
        ids = ids[:-1]
    skipped = getattr(tok, "_skipped_ids", None)
    skip = set(skipped() if skipped is not None else getattr(tok, "all_special_ids", ()))
    for tag in ("<think>", "</think>"):
        i = tok.token_id(tag) if hasattr(tok, "token_id") else None
        skip.discard(i)
    return tok.decode([int(i) for i in ids if int(i) not in skip])


def _decode(tok, ids, eos: set, stop_strings, prompt=()) -> str:
    """Text of generated ``ids`` without the eos token, cut before the first stop string.
    A stop string that begins in the ``prompt`` ids and ends in the new text (transformers'
    ``stop_strings`` stop there, and so does ``generate``) leaves no text."""
    if ids and ids[-1] in eos:
        ids = ids[:-1]
    stops = [stop_strings] if isinstance(stop_strings, str) else list(stop_strings or [])
    if stops and len(prompt) and ids:
        # the prompt's last tokens and the first new ones decoded together, as the stop
        # criterion sees them (a SentencePiece piece's leading space is kept there)
        w = max(len(s) for s in stops) + 8
        tail = [int(t) for t in prompt[-w:]]
        before = tok.decode(tail)
        both = tok.decode(tail + list(ids[:4 * w]))
        if both.startswith(before) and _stop_at(both, stops, len(before)) < len(before):
            return ""
    return stop_cut(tok.decode(ids), stops)


def stop_cut(text: str, stops, before: str = "") -> str:
    """``text`` ended before the first of the ``stops`` it holds. ``before`` is the text
    that came ahead of it (the prompt): a stop string that begins there and ends in
    ``text`` counts too (as transformers' ``stop_strings``; one wholly in ``before`` does
    not), and leaves ``""``."""
    return text[:max(0, _stop_at(before + text, stops, len(before)) - len(before))]


def _stop_at(joined: str, stops, start: int) -> int:
    """Where the first match of ``stops`` in ``joined`` that ends past ``start`` begins
    (``len(joined)``: none)."""
    cut = len(joined)
    for s in stops:
        at = joined.find(s, max(0, start - len(s) + 1))
        if 0 <= at < cut:
            cut = at
    return cut


# ---- the job -------------------------------------------------------------------------------
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def load_cached(folder: str, device: str = "cpu", dtype=None):
    """The checkpoint at ``folder``, loaded once per process (the last one asked for is
    kept; a folder whose files changed since is loaded again)."""
    from .hf_checkpoint import from_pretrained

    path = Path(folder).expanduser().resolve()
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in path.iterdir()
                         if p.is_file())) if path.is_dir() else None
    key = (str(path), str(device), str(dtype))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        model = from_pretrained(path, dtype=dtype, device=device)
        _CACHE.clear()
        _CACHE[key] = (stamp, model)
        return model


def run(config: dict, reporter, model=None):
    """Job entry: config ``model`` (a checkpoint folder), ``prompt`` (or ``prompts``: a
    batch, answered as one batch (:func:`batch_replies`); the result ``{"replies":
    [{"prompt", ...reply}], "tokens", "seconds", "tokens_per_s", "model"}``), ``chat``,
    ``system``,
    ``thinking``, ``max_new_tokens``, ``temperature`` (0: greedy), ``top_k``, ``top_p``,
    ``repetition_penalty``, ``no_repeat_ngram_size``, ``num_beams`` (> 1: beam search, the
    answer whole at the end), ``stop`` (strings), ``seed``,
    ``history`` (earlier messages), ``device``; ``model`` a loaded
    model instead of the folder (a notebook's)."""
    from skiff.kernels.backend.report import JobCancelled

    if model is None:
        reporter.log(f"loading {config['model']}")
        model = load_cached(config["model"], config.get("device") or "cpu")
    if int(config.get("num_beams") or 1) > 1:
        reporter.log(f"beam search over {int(config['num_beams'])} beams: the answer comes "
                     "whole at the end (beams are not streamed)")
    total = int(config.get("max_new_tokens", 256))
    temperature = float(config.get("temperature") or 0.0)
    last = [0.0]
    done = {"text": "", "thinking": "", "tokens": 0}  # so far: kept when stopped

    def on_text(think, answer, n):
        done.update(text=answer, thinking=think, tokens=n)
        now = time.monotonic()
        reporter.progress(n, total, unit="token")
        if now - last[0] >= 0.1:
            last[0] = now
            reporter.info(thinking=think, text=answer, tokens=n)

    def should_stop():
        if reporter.should_stop():  # the text so far is the job's result (worker's
            exc = JobCancelled("cancelled by request")  # keep_partial)
            exc.partial = {**done, "stop": "cancelled", "model": str(config.get("model"))}
            raise exc

    prompts = config.get("prompts") or [config["prompt"]]

    def answer(prompt):
        return reply(model, prompt, max_new_tokens=total,
                     chat=bool(config.get("chat", True)), system=config.get("system"),
                     thinking=config.get("thinking"), do_sample=temperature > 0,
                     temperature=temperature if temperature > 0 else None,
                     top_k=config.get("top_k"), top_p=config.get("top_p"),
                     repetition_penalty=config.get("repetition_penalty"),  # None: the
                     # checkpoint's generation_config.json, else 1 (top_k, top_p alike)
                     stop_strings=config.get("stop") or None, seed=config.get("seed"),
                     on_text=on_text, should_stop=should_stop,
                     history=config.get("history"),
                     no_repeat_ngram_size=config.get("no_repeat_ngram_size"),
                     num_beams=config.get("num_beams"))

    beams = int(config.get("num_beams") or 1)
    if config.get("prompts") and len(prompts) > 1:  # one batch (round 44 h18, 45 h6)
        how = (f"beam search over {beams} beams" if beams > 1
               else "sampled" if temperature > 0 else "greedy")
        reporter.log(f"{len(prompts)} prompts answered as one batch ({how})")
        n_total = total * len(prompts)

        def on_step(n):
            should_stop()
            if n:
                reporter.progress(n, n_total, unit="token")

        batch, seconds = batch_replies(
            model, prompts, max_new_tokens=total, chat=bool(config.get("chat", True)),
            system=config.get("system"), thinking=config.get("thinking"),
            repetition_penalty=config.get("repetition_penalty"),
            stop_strings=config.get("stop") or None, history=config.get("history"),
            no_repeat_ngram_size=config.get("no_repeat_ngram_size"), on_step=on_step,
            do_sample=temperature > 0, temperature=temperature if temperature > 0 else None,
            top_k=config.get("top_k"), top_p=config.get("top_p"), seed=config.get("seed"),
            num_beams=beams)
        replies = [{"prompt": p, **r.to_json()} for p, r in zip(prompts, batch)]
    elif config.get("prompts"):  # a --prompts FILE of one prompt: one reply, streamed
        replies = []
        for i, prompt in enumerate(prompts):
            reporter.log(f"prompt {i + 1} of {len(prompts)}")
            one = answer(prompt)
            replies.append({"prompt": prompt, **one.to_json()})
        seconds = sum(r["seconds"] for r in replies)
    if config.get("prompts"):
        tokens = sum(r["tokens"] for r in replies)
        speed = round(tokens / seconds, 2) if seconds > 0 else 0.0
        reporter.metric("tokens_per_s", speed)
        reporter.log(f"{len(replies)} prompts, {tokens} tokens in {seconds:.2f} s "
                     f"({speed:.1f} tokens/s)")
        return {"replies": replies, "tokens": tokens, "seconds": round(seconds, 4),
                "tokens_per_s": speed, "model": str(config.get("model"))}
    result = answer(prompts[0])
    reporter.info(thinking=result.thinking, text=result.text, tokens=result.tokens)
    reporter.progress(result.tokens, result.tokens, unit="token")
    reporter.metric("tokens_per_s", result.tokens_per_s)
    reporter.log(f"{result.tokens} tokens in {result.seconds:.2f} s "
                 f"({result.tokens_per_s:.1f} tokens/s), stopped by {result.stop}")
    return result


def is_folder(path) -> bool:
    return isinstance(path, (str, os.PathLike)) and (Path(path).expanduser()
                                                     / "config.json").is_file()
