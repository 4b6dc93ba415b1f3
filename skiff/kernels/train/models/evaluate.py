"""Evaluating a language model as the common harnesses do: perplexity on held-out text,
multiple-choice questions scored by the log-likelihood of each choice, exact match of
greedy answers.

Every function takes a skiff causal LM (``model(ids) -> logits (B, T, V)``, such as
:class:`~.ernie.ErnieForCausalLM`) and token ids, or text with ``tokenizer=`` (the
checkpoint's, ``model.tokenizer`` by default). Nothing is trained; no graph is kept.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.tensor import no_grad

__all__ = ["perplexity", "choice_logprobs", "multiple_choice", "exact_match", "chat_loss",
           "EvalTable"]


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _logits(model, ids: np.ndarray) -> np.ndarray:
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
    """Share of rows ``{"prompt", "answer"}`` whose greedy answer (decoded, stripped, cut at
    the first newline) equals the expected answer (stripped)."""
    tok = tokenizer or getattr(model, "tokenizer", None)
    if tok is None:
        raise ValueError("exact match needs a tokenizer (the model has none: pass tokenizer=)")
    prompts = [tok.encode(r["prompt"]) for r in rows]
    outs = model.generate_batch(prompts, max_new_tokens=max_new_tokens)
    eos = getattr(model, "generation_config", {}).get(
        "eos_token_id", getattr(getattr(model, "config", None), "eos_token_id", None))
    eos = set(np.atleast_1d(eos).tolist()) if eos is not None else set()
    answers = []
    for p, o in zip(prompts, outs):
        text = tok.decode([t for t in o[len(p):] if int(t) not in eos])
        answers.append(text.strip().split("\n")[0].strip())
    hits = [a == str(r["answer"]).strip() for a, r in zip(answers, rows)]
    return {"exact_match": sum(hits) / max(len(hits), 1), "n": len(hits), "answers": answers}


def chat_loss(model, rows, *, block_size: int = 512, tokenizer=None) -> dict:
    """``{"loss", "perplexity", "tokens"}``: the mean next-token NLL of the assistant's
    tokens of held-out conversations (rows ``{"messages": [...]}``, rendered with the
    checkpoint's chat template), the loss fine-tuning on chat data lowers."""
    from .chat import ChatDataset

    tok = tokenizer or getattr(model, "tokenizer", None)
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
