"""Open models as a user, round 47 (h10): a stop string met inside a special token's text.

transformers' ``stop_strings`` (``StopStringCriteria``) match the tokens' vocabulary
strings, special tokens included: ``--stop end`` stops generation at a generated
``<|end_of_sentence|>`` (the template's end-of-turn marker, not the eos), and skiff stops
at the same token. The answer's text was cut inside that token's text (``'...<|'``, a
fragment no decode gives); a transformers user decodes the tokens with
``skip_special_tokens=True`` (their chat pipeline's answer), where the stop string is not:
the whole text. Oracle: transformers' greedy ``generate(..., stop_strings=[...],
tokenizer=tok)`` of the same checkpoint, decoded without special tokens. The checkpoint's
``<|end_of_sentence|>`` embedding row (tied to the head) is doubled so a greedy answer
writes it early."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from .ernie_reference import make_sentencepiece_checkpoint, torch

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    root = tmp_path_factory.mktemp("r47h10")
    ref, tok = make_sentencepiece_checkpoint(root / "ckpt", seed=6)
    with torch.no_grad():
        ref.get_input_embeddings().weight[tok.convert_tokens_to_ids("<|end_of_sentence|>")] *= 2
    ref.save_pretrained(root / "ckpt")
    return root / "ckpt", ref.eval(), tok


def _theirs(ref, tok, text, n, stop):
    ids = tok(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        new = ref.generate(ids, max_new_tokens=n, do_sample=False, stop_strings=[stop],
                           tokenizer=tok)[0, ids.shape[1]:].tolist()
    return new, tok.decode(new, skip_special_tokens=True)


def _cli(*args):
    from skiff.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(list(args)) == 0, err.getvalue()[-400:]
    return json.loads(out.getvalue())["result"]


def test_a_stop_string_inside_a_special_token_leaves_no_fragment(ckpt):
    """``reply`` (``generate``'s plain text) and ``chat --json`` (the thinking the template
    left open): the text transformers' tokens decode to, no fragment of the special token."""
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.chat_reply import reply

    folder, ref, tok = ckpt
    special = tok.convert_tokens_to_ids("<|end_of_sentence|>")
    new, want = _theirs(ref, tok, PROMPT, 10, "end")
    assert len(new) < 10 and new[-1] == special and "end" not in want  # premise
    seen = []  # what a notebook's on_text shows while it is written: ends as the reply
    got = reply(from_pretrained(folder), PROMPT, max_new_tokens=10, chat=False,
                stop_strings=["end"], on_text=lambda t, a, n: seen.append(a))
    assert (got.text, got.tokens, got.stop, seen[-1]) == (want, len(new), "stop string", want)

    # a chat turn of the thinking template (its prompt leaves <think> open): the thinking
    msgs = [{"role": "user", "content": PROMPT}]
    text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    new, want = _theirs(ref, tok, text, 10, "of")
    assert len(new) < 10 and new[-1] == special and "of" not in want  # premise
    got = _cli("chat", str(folder), PROMPT, "--max-new-tokens", "10", "--stop", "of",
               "--json")
    assert (got["thinking"], got["text"], got["tokens"]) == (want.strip(), "", len(new))


CHATS = [  # a --prompts JSONL's rows: each its own conversation, of different lengths
    {"messages": [{"role": "system", "content": "Answer briefly."},
                  {"role": "user", "content": "What is two plus two?"},
                  {"role": "assistant", "content": "Four."},
                  {"role": "user", "content": "And the quick brown fox?"}]},
    "hello world",
    {"messages": [{"role": "user", "content": "ERNIE models"}]},
]


def test_prompts_file_of_conversations_answers_as_transformers_batch(ckpt, tmp_path,
                                                                     monkeypatch):
    """``--prompts`` JSONL rows ``{"messages": [...]}`` (a transformers user's list of chats,
    each ending with the user's turn) were refused ("a string or {"prompt": text} row"):
    now each row is its own conversation in the one left-padded batch. Oracle: transformers'
    greedy ``generate`` on the left-padded ``apply_chat_template`` of each row."""
    folder, ref, tok = ckpt
    convs = [c["messages"] if isinstance(c, dict) else [{"role": "user", "content": c}]
             for c in CHATS]
    texts = [tok.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
             for c in convs]
    monkeypatch.setattr(tok, "padding_side", "left")
    enc = tok(texts, add_special_tokens=False, return_tensors="pt", padding=True)
    assert len(set(enc.attention_mask.sum(1).tolist())) == 3  # premise: three lengths
    with torch.no_grad():
        out = ref.generate(**enc, max_new_tokens=6, do_sample=False, pad_token_id=0)
    eos = ref.generation_config.eos_token_id
    want = []
    for row in out[:, enc.input_ids.shape[1]:].tolist():
        cut = next((i + 1 for i, t in enumerate(row) if t == eos), len(row))
        want.append(tok.decode(row[:cut] if row[cut - 1] != eos else row[:cut - 1]))
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(c) for c in CHATS) + "\n")
    got = _cli("chat", str(folder), "--prompts", str(tmp_path / "p.jsonl"),
               "--max-new-tokens", "6", "--json")["replies"]
    assert [r["raw"] for r in got] == want
    assert [r["messages"][:-1] for r in got] == convs  # each row's turns carried on

    (tmp_path / "bad.jsonl").write_text(json.dumps(CHATS[0]) + "\n" + json.dumps(
        {"messages": convs[0][:3]}) + "\n")
    from skiff.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(["chat", str(folder), "--prompts", str(tmp_path / "bad.jsonl")]) != 0
    assert "line 2: a conversation to answer ends with the user's message" in err.getvalue()
