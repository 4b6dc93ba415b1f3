"""Evaluating a language model as the common harnesses do: perplexity on held-out text,
multiple-choice questions scored by the log-likelihood of each choice, exact match of
greedy answers.

Every function takes a skiff causal LM (``model(ids) -> logits (B, T, V)``, such as
:class:`~.ernie.ErnieForCausalLM`) and token ids, or text with ``tokenizer=`` (the
checkpoint's, ``model.tokenizer`` by default). Nothing is trained; no graph is kept.

:class:`HeldOut` puts them together for a held-out file (``%train ... --eval FILE``; the
formats training reads: JSONL/JSON rows, CSV/TSV, text):
the Trainer calls it every ``--eval-every`` steps and reports what it returns as metrics.
"""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["perplexity", "choice_logprobs", "multiple_choice", "exact_match", "chat_loss",
           "EvalTable", "HeldOut", "read_heldout", "check_heldout_rows"]


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _logits(model, ids: np.ndarray) -> np.ndarray:
    from ..core.tensor import no_grad  # here: the grammar reads held-out files without it

    was = model.training
    model.eval()
    try:
        with no_grad():
            out = model(np.asarray(ids, dtype=np.int64)[None])
    finally:
        model.train(was)
    return np.asarray(out.numpy())[0]


def _ids(model, text_or_ids, tokenizer):
    if isinstance(text_or_ids, str):
        tok = tokenizer or getattr(model, "tokenizer", None)
        if tok is None:
            raise ValueError("text needs a tokenizer (the model has none: pass tokenizer=)")
        return tok.encode(text_or_ids)
    return np.asarray(text_or_ids, dtype=np.int64).reshape(-1)


def perplexity(model, text_or_ids, *, block_size: int = 256, tokenizer=None) -> dict:
    """``{"loss": mean next-token NLL, "perplexity": exp(loss), "tokens": count}`` over the
    text cut into consecutive blocks of ``block_size`` + 1 tokens (each block predicts its
    last ``block_size`` tokens from what precedes them within the block)."""
    ids = _ids(model, text_or_ids, tokenizer)
    if len(ids) < 2:
        raise ValueError(f"perplexity needs at least 2 tokens, got {len(ids)}")
    total, count = 0.0, 0
    for start in range(0, len(ids) - 1, block_size):
        block = ids[start:start + block_size + 1]
        if len(block) < 2:
            break
        logp = _log_softmax(_logits(model, block[:-1]))
        total -= float(logp[np.arange(len(block) - 1), block[1:]].sum())
        count += len(block) - 1
    loss = total / count
    return {"loss": loss, "perplexity": math.exp(loss), "tokens": count}


def choice_logprobs(model, prompt, choices, *, tokenizer=None) -> np.ndarray:
    """Summed log-probability of each choice's tokens following ``prompt`` (text or ids)."""
    p = _ids(model, prompt, tokenizer)
    scores = []
    for choice in choices:
        c = _ids(model, choice, tokenizer)
        if len(c) == 0:
            raise ValueError(f"choice {choice!r} has no tokens")
        seq = np.concatenate([p, c])
        logp = _log_softmax(_logits(model, seq[:-1]))
        at = np.arange(len(p) - 1, len(seq) - 1)
        scores.append(float(logp[at, seq[len(p):]].sum()))
    return np.asarray(scores)


def multiple_choice(model, rows, *, tokenizer=None) -> dict:
    """Accuracy over rows ``{"prompt", "choices": [...], "answer": index}``: the choice of
    the highest log-likelihood is the model's answer."""
    right = 0
    picks = []
    for n, row in enumerate(rows, 1):
        if not {"prompt", "choices", "answer"} <= set(row):
            raise ValueError(f"row {n} needs 'prompt', 'choices' and 'answer', got "
                             f"{sorted(row)}")
        pick = int(np.argmax(choice_logprobs(model, row["prompt"], row["choices"],
                                             tokenizer=tokenizer)))
        picks.append(pick)
        right += pick == int(row["answer"])
    return {"accuracy": right / max(len(picks), 1), "n": len(picks), "picks": picks}


def exact_match(model, rows, *, max_new_tokens: int = 32, tokenizer=None) -> dict:
    """Share of rows ``{"prompt", "answer"}`` whose greedy answer (decoded without special
    tokens, stripped, cut at the first newline) equals the expected answer (stripped). A
    thinking model's answer is what follows its thinking (``</think>``; the prompt of a
    thinking template opens ``<think>``: unclosed, there is no answer), as its card parses
    it (round 44: the thinking's first line was compared)."""
    from .chat import opens_thinking, split_thinking

    tok = tokenizer or getattr(model, "tokenizer", None)
    if tok is None:
        raise ValueError("exact match needs a tokenizer (the model has none: pass tokenizer=)")
    prompts = [tok.encode(r["prompt"]) for r in rows]
    outs = model.generate_batch(prompts, max_new_tokens=max_new_tokens)
    eos = getattr(model, "generation_config", {}).get(
        "eos_token_id", getattr(getattr(model, "config", None), "eos_token_id", None))
    eos = set(np.atleast_1d(eos).tolist()) if eos is not None else set()
    answers = []
    for row, p, o in zip(rows, prompts, outs):
        kept = [t for t in o[len(p):] if int(t) not in eos]
        text = tok.decode(kept, skip_special_tokens=True) if hasattr(tok, "batch_decode") \
            else tok.decode(kept)  # (a tokenizer of its own: as it decodes)
        inside = opens_thinking(str(row["prompt"]))
        if inside or "</think>" in text or "<think>" in text:
            text = split_thinking(text, inside=inside)[1]
        answers.append(text.strip().split("\n")[0].strip())
    hits = [a == str(r["answer"]).strip() for a, r in zip(answers, rows)]
    return {"exact_match": sum(hits) / max(len(hits), 1), "n": len(hits), "answers": answers}


def chat_loss(model, rows, *, block_size: int = 512, tokenizer=None, data=None) -> dict:
    """``{"loss", "perplexity", "tokens"}``: the mean next-token NLL of the assistant's
    tokens of held-out conversations (rows ``{"messages": [...]}``, rendered with the
    checkpoint's chat template), the loss fine-tuning on chat data lowers. ``data``: the
    rows' :class:`~.chat.ChatDataset` already built (``rows`` then unused)."""
    from .chat import ChatDataset

    tok = tokenizer or getattr(model, "tokenizer", None)
    if data is None:
        data = ChatDataset(rows, tok, block_size, source="held-out conversations")
    total, count = 0.0, 0
    for ids, targets in data.items:
        logp = _log_softmax(_logits(model, ids))
        keep = targets >= 0
        total -= float(logp[np.arange(len(ids))[keep], targets[keep]].sum())
        count += int(keep.sum())
    loss = total / count
    return {"loss": loss, "perplexity": math.exp(loss), "tokens": count}


class EvalTable:
    """Evaluation results side by side (``{column: {metric: value}}``, e.g. before and
    after fine-tuning), shown as a table in a notebook and as text in a terminal."""

    def __init__(self, columns: dict[str, dict]):
        self.columns = {str(k): dict(v) for k, v in columns.items()}
        self.metrics = list(dict.fromkeys(m for v in self.columns.values() for m in v
                                          if isinstance(v[m], (int, float))))

    @classmethod
    def from_history(cls, rows: list[dict]) -> EvalTable:
        """The held-out evaluations of a run (rows ``{"step", metric: value}``), one column
        per step."""
        return cls({f"step {r['step']}": {k: v for k, v in r.items() if k != "step"}
                    for r in rows})

    def value(self, column: str, metric: str):
        return self.columns[column].get(metric)

    def _cell(self, v) -> str:
        if v is None:
            return "-"
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    def __repr__(self) -> str:
        names = list(self.columns)
        width = max([len(m) for m in self.metrics] + [6])
        lines = [" " * width + "".join(f"{n:>14}" for n in names)]
        for m in self.metrics:
            lines.append(f"{m:<{width}}" + "".join(
                f"{self._cell(self.columns[n].get(m)):>14}" for n in names))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        head = "".join(f"<th>{html.escape(n)}</th>" for n in self.columns)
        rows = "".join(
            f"<tr><td>{html.escape(m)}</td>" + "".join(
                f"<td>{self._cell(self.columns[n].get(m))}</td>" for n in self.columns)
            + "</tr>" for m in self.metrics)
        return (f"<table class='skiff-eval'><tr><th>metric</th>{head}</tr>{rows}</table>")


# held-out evaluation during training ----------------------------------------------------------
def check_heldout_rows(rows, source: str = "held-out data") -> list[dict]:
    """Check held-out rows before anything runs (one clear error naming the row): each is a
    conversation ``{"messages": [...]}`` (scored on the assistant's tokens) or ``{"text":
    ...}``; ``"answer"`` (text) adds exact match, ``"choices"`` with ``"answer"`` (an index)
    multiple choice; ``"prompt"`` is what the model answers (default: the conversation up
    to its last assistant message, or the text)."""
    if not rows:
        raise ValueError(f"{source}: no rows (a held-out file needs at least one)")
    from .chat import as_chat_row  # ShareGPT, TRL's conversational prompt/completion

    labels = getattr(rows, "labels", None) or [f"row {n}" for n in range(1, len(rows) + 1)]
    rows = [as_chat_row(r, f"{source}: {w}") for w, r in zip(labels, rows)]
    for label, row in zip(labels, rows):
        where = f"{source}: {label}"
        if not isinstance(row, dict):
            raise ValueError(f"{where} is a {type(row).__name__}, not a JSON object")
        messages, text = row.get("messages"), row.get("text")
        if messages is None and _pair(row):
            pass  # a prompt/completion pair: a user message and the assistant's answer
        elif messages is None and text is None and _asked_only(row):
            pass  # a question alone (``prompt`` with ``choices`` and ``answer``, the
            # harnesses' multiple-choice rows): scored by its choice, no loss tokens
        elif messages is None and text is None:
            raise ValueError(f"{where} has neither 'messages' nor 'text' nor 'prompt' with "
                             f"'completion' (got keys {sorted(row)}): each row is a "
                             "conversation, a prompt/completion pair or a text")
        elif messages is not None:
            if not isinstance(messages, list) or not messages or not all(
                    isinstance(m, dict) and "role" in m and "content" in m for m in messages):
                raise ValueError(f"{where}: 'messages' must be a list of "
                                 '{"role": ..., "content": ...} objects')
            if not any(m["role"] == "assistant" for m in messages):
                raise ValueError(f"{where} has no assistant message to score")
            from .chat import chat_row_problem

            problem = chat_row_problem(row)  # a role the template would skip (round 41)
            if problem:
                raise ValueError(f"{where}: {problem}")
        elif not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}: 'text' must be a non-empty string, got {text!r}")
        if "prompt" in row and not isinstance(row["prompt"], str):
            raise ValueError(f"{where}: 'prompt' must be a string, got {row['prompt']!r}")
        choices = row.get("choices")
        if choices is not None:
            if not isinstance(choices, list) or len(choices) < 2 or not all(
                    isinstance(c, str) and c for c in choices):
                raise ValueError(f"{where}: 'choices' must be a list of at least 2 strings, "
                                 f"got {choices!r}")
            answer = row.get("answer")
            if isinstance(answer, bool) or not isinstance(answer, int) or \
                    not 0 <= answer < len(choices):
                raise ValueError(f"{where}: 'answer' must be the index of the right choice "
                                 f"(0..{len(choices) - 1}), got {answer!r}")
        elif "answer" in row and not isinstance(row["answer"], (str, int, float)):
            raise ValueError(f"{where}: 'answer' must be the expected text, got "
                             f"{row['answer']!r}")
    return list(rows)


def _asked_only(row) -> bool:
    """A row that is only a multiple-choice question (round 45 h6): a ``prompt`` string,
    ``choices`` and an ``answer``, no conversation, completion or text (lm-eval's and MMLU's
    rows). It adds to the choice accuracy, not the loss. A ``{"prompt", "answer"}`` row
    stays refused: more likely a pair misnamed (``completion``) than an exact-match
    question with nothing to score a loss on."""
    return isinstance(row.get("prompt"), str) and bool(row["prompt"]) and "answer" in row \
        and row.get("choices") is not None and row.get("messages") is None \
        and row.get("text") is None


def _pair(row) -> bool:
    from .chat import _prompt_completion

    return _prompt_completion(row) is not None


def read_heldout(path: str | os.PathLike) -> list[dict]:
    """The checked rows of a held-out file, in the formats training reads
    (:func:`~.hf_checkpoint.read_training_rows`): a ``.jsonl`` or ``.json`` list of
    ``{"messages"}``, ``{"prompt", "completion"|"response"}`` or ``{"text"}`` rows (kinds may
    mix; ``answer``/``choices`` add exact match and multiple choice), a ``.csv``/``.tsv``
    with prompt and response columns or a text column, or a text file (one text). One clear
    error for a missing file, a line that is not JSON, a format training does not read, or
    a row :func:`check_heldout_rows` refuses."""
    from pathlib import Path

    from .hf_checkpoint import ROW_FILES, _read_rows, read_training_rows

    path = os.path.expanduser(os.fspath(path))
    if not os.path.isfile(path):
        raise ValueError(f"--eval {path!r}: no such file (held-out rows: a .jsonl, .json, "
                         ".csv, .tsv or text file)")
    if Path(path).suffix.lower() in ROW_FILES:
        rows = _read_rows(Path(path))
    else:
        try:
            kind, rows = read_training_rows(path)
        except ValueError as exc:  # said for training: the same formats
            raise ValueError(str(exc).replace("for training", "for evaluation")) from None
        if kind == "text":
            rows = [{"text": t} for t in rows]
        elif kind == "plain":
            rows = [{"text": rows}]
    return check_heldout_rows(rows, source=path)


def adds_router_loss(model) -> bool:
    """Whether ``model``'s training loss adds the router's balancing term (an MoE config
    with ``output_router_logits``), as transformers' loss and ``eval_loss`` do."""
    cfg = getattr(model, "config", None)
    return bool(getattr(cfg, "is_moe", False) and getattr(cfg, "output_router_logits", False))


class HeldOut:
    """A held-out set evaluated as the harnesses do; ``held_out(model)`` returns metrics:

    * ``eval_loss``, ``eval_perplexity``: the mean next-token NLL over every scored token
      (a conversation's assistant tokens, :func:`chat_loss`; every token of a text,
      :func:`perplexity` in ``block_size`` blocks) and its exp; ``eval_nll`` in place of
      ``eval_loss`` for an MoE model whose loss adds the router's balancing term
      (:func:`adds_router_loss`: transformers' ``eval_loss`` adds it, this is the NLL);
    * ``eval_exact_match``: rows with an ``answer`` text (:func:`exact_match`);
    * ``eval_choice_accuracy``: rows with ``choices`` (:func:`multiple_choice`).

    The tokenizer (and the chat template, for conversations) is checked here, so a file the
    model cannot read fails before training starts.
    """

    def __init__(self, rows, tokenizer, *, block_size: int = 256, max_new_tokens: int = 32,
                 source: str = "held-out data"):
        rows = check_heldout_rows(list(rows), source)
        if tokenizer is None:
            raise ValueError(f"{source}: held-out evaluation needs the checkpoint's tokenizer "
                             "(the model has none)")
        self.tokenizer, self.source = tokenizer, source
        self.block_size, self.max_new_tokens = int(block_size), int(max_new_tokens)
        self.chats = [r for r in rows if r.get("messages") is not None or _pair(r)]
        self.texts = [r["text"] for r in rows if r.get("messages") is None and not _pair(r)
                      and r.get("text") is not None]
        if any(r.get("messages") is not None for r in rows) and \
                getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(f"{source}: conversations need the checkpoint's chat template "
                             "(it has none)")
        # the conversations' sequences, built once: what they lose to the block is said
        # (round 48 h15: a held-out row cut or left out changed eval_loss without a word)
        self.chat_data, self.read_note = None, None
        if self.chats:
            from .chat import ChatDataset

            self.chat_data = ChatDataset(self.chats, tokenizer, self.block_size,
                                         source="held-out conversations")
            if self.chat_data.read_note:
                self.read_note = f"--eval {source}: {self.chat_data.read_note}"
        asked = [dict(r, prompt=self.prompt_of(r)) for r in rows if "answer" in r]
        self.choice_rows = [r for r in asked if "choices" in r]
        self.answer_rows = [r for r in asked if "choices" not in r]
        self.n = len(rows)

    @classmethod
    def from_file(cls, path, tokenizer, **kwargs) -> HeldOut:
        """The held-out rows of a file in any format :func:`read_heldout` reads."""
        return cls(read_heldout(path), tokenizer, source=str(path), **kwargs)

    from_jsonl = from_file  # (its first name, when only JSONL was read)

    def prompt_of(self, row: dict) -> str:
        """What the model answers: a pair's prompt as a user message (with the generation
        prompt, when the checkpoint has a template), ``prompt``, else the conversation up
        to its last assistant message with the generation prompt, else the text."""
        if _pair(row) and getattr(self.tokenizer, "chat_template", None) is not None:
            system = row.get("system")
            messages = [{"role": "system", "content": system}] if isinstance(system, str) \
                and system else []
            return self.tokenizer.apply_chat_template(
                messages + [{"role": "user", "content": row["prompt"]}],
                add_generation_prompt=True)
        if "prompt" in row:
            return row["prompt"]
        messages = row.get("messages")
        if messages is None:
            return row["text"]
        last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        return self.tokenizer.apply_chat_template(messages[:last], add_generation_prompt=True)

    def __call__(self, model) -> dict:
        tok = self.tokenizer
        total = count = 0.0
        if self.chats:
            got = chat_loss(model, self.chats, block_size=self.block_size, tokenizer=tok,
                            data=self.chat_data)
            total, count = got["loss"] * got["tokens"], got["tokens"]
        for text in self.texts:
            if len(tok.encode(text)) < 2:
                continue
            got = perplexity(model, text, block_size=self.block_size, tokenizer=tok)
            total += got["loss"] * got["tokens"]
            count += got["tokens"]
        out = {}
        if count:
            # an MoE whose loss adds the router's balancing term: transformers' Trainer's
            # eval_loss adds it too, and this is the NLL alone, so it is named so (round 42
            # h17: the two were read as one figure)
            name = "eval_nll" if adds_router_loss(model) else "eval_loss"
            out[name] = total / count
            out["eval_perplexity"] = math.exp(min(out[name], 700.0))
        if self.answer_rows:
            out["eval_exact_match"] = exact_match(
                model, self.answer_rows, max_new_tokens=self.max_new_tokens,
                tokenizer=tok)["exact_match"]
        if self.choice_rows:
            out["eval_choice_accuracy"] = multiple_choice(model, self.choice_rows,
                                                          tokenizer=tok)["accuracy"]
        return out

    def __repr__(self) -> str:
        return (f"HeldOut({self.n} rows from {self.source}: {len(self.answer_rows)} with an "
                f"answer, {len(self.choice_rows)} with choices)")
