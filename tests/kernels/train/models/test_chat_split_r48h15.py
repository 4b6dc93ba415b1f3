"""Open models as a user, round 48 (h15): the SFT data a careful user expects.

* ``--val-split`` of a chat file holds out the last conversations whole: the turns of a
  conversation trained one at a time (a Qwen3-style thinking template) were items split
  apart, so one conversation's turns could train and validate both. Oracle: the rows split
  as ``datasets``' ``train_test_split(shuffle=False)`` splits them, each side's turns
  rendered by transformers' ``apply_chat_template``.
* A ``{"prompt", "completion"}`` pair whose boundary token holds both texts' characters
  (``Hello wor`` + ``ld``: ``rld``) is not learned: the loss starts at the first token after
  the prompt's text, which on these pairs is TRL's ``len(prompt_ids)`` start. Oracle:
  transformers' tokenizer of ``prompt + completion + eos`` and its offsets."""

from __future__ import annotations

import json
import shutil

import pytest

from .ernie_reference import transformers, write_sentencepiece
from .test_chat_turns_r48h5 import ASK, QWEN3_LIKE, _theirs

# a template with tools, tool calls and {% generation %} marks (transformers' assistant mask)
TOOLS = (
    "{%- if tools %}{{ '<|im_start|>system\nTools: ' + (tools | tojson) + "
    "'<|end_of_sentence|>\n' }}{%- endif %}{%- for m in messages %}"
    "{%- if m.role == 'assistant' %}{{ '<|im_start|>assistant\n' }}{% generation %}"
    "{%- if m.content %}{{ m.content }}{%- endif %}{%- for c in m.tool_calls or [] %}"
    "{{ '<tool_call>' + (c.function | tojson) + '</tool_call>' }}{%- endfor %}"
    "{{ '<|end_of_sentence|>' }}{% endgeneration %}{{ '\n' }}"
    "{%- else %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|end_of_sentence|>\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """``(plain, chat, tools)``: one SentencePiece tokenizer trained here, without a chat
    template, with the Qwen3-like thinking template and with :data:`TOOLS`."""
    plain = tmp_path_factory.mktemp("plain")
    write_sentencepiece(plain, chat_template=None)
    out = [plain]
    for template in (QWEN3_LIKE, TOOLS):
        folder = tmp_path_factory.mktemp("chat")
        for f in plain.iterdir():
            shutil.copy(f, folder / f.name)
        config = json.loads((folder / "tokenizer_config.json").read_text())
        (folder / "tokenizer_config.json").write_text(json.dumps({**config,
                                                                  "chat_template": template}))
        out.append(folder)
    return out


def _talk(word: str) -> list[dict]:
    """A two-turn conversation with thinking, its texts naming ``word``."""
    return [{"role": "user", "content": f"Say {word}."},
            {"role": "assistant", "content": word, "reasoning_content": f"just {word}"},
            *ASK[2:]]


def test_val_split_holds_out_whole_conversations(folders):
    from skiff.kernels.train.data import split_off
    from skiff.kernels.train.models.chat import ChatDataset
    from skiff.kernels.train.models.hf_checkpoint import load_tokenizer

    folder = folders[1]
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    convs = [_talk("one"), ASK[2:], _talk("three"), ASK[:2]]  # 2 + 1 + 2 + 1 turns
    data = ChatDataset([{"messages": m} for m in convs], load_tokenizer(folder),
                       block_size=256)
    assert len(data) == 6  # premise: two conversations trained one turn at a time
    # a quarter of 4 conversations is the last one; a quarter of the 6 items (round(1.5)
    # = 2) was the last item of conversation 3 and conversation 4, conversation 3's first
    # turn training
    train, val = split_off(data, 0.25)  # as the Trainer cuts val_split

    def turns(messages):
        return [_theirs(tok, messages, i) for i, m in enumerate(messages)
                if m["role"] == "assistant"]

    def got(part):
        return [(list(map(int, x)), list(map(int, y))) for x, y in (part[i] for i in
                                                                       range(len(part)))]

    want_train = [t for m in convs[:3] for t in turns(m)]
    want_val = turns(convs[3])
    assert got(val) == [(ids[:-1], labels[1:]) for ids, labels in want_val]
    assert got(train) == [(ids[:-1], labels[1:]) for ids, labels in want_train]
    assert val.split_note == ("val_split 0.25 holds out the last 1 of 4 conversations, "
                              "whole: 1 sequence to validate, 5 to train")


PAIRS = [("Hello wor", "ld and more"),  # 'rld' holds the prompt's 'r'
         ("What is two plus two?\n", "Four."),
         ("The quick bro", "wn fox")]  # 'own' holds the prompt's 'o'


def test_a_token_across_the_prompts_end_is_not_learned(folders):
    from skiff.kernels.train.models.chat import ChatDataset
    from skiff.kernels.train.models.hf_checkpoint import load_tokenizer

    folder = folders[0]
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    want, merged = [], []
    for n, (prompt, completion) in enumerate(PAIRS, 1):
        enc = tok(prompt + completion, add_special_tokens=False, return_offsets_mapping=True)
        ids = enc.input_ids + [tok.eos_token_id]
        after = [a >= len(prompt) for a, _ in enc.offset_mapping] + [True]
        head = tok(prompt, add_special_tokens=False).input_ids
        # TRL's start, len(prompt_ids), is the first token after the prompt's text here
        assert after == [i >= len(head) for i in range(len(ids))]
        if ids[:len(head)] != head:  # TRL's warning: a token spans the prompt's end
            merged.append(f"row {n}")
        want.append((ids[:-1], [t if a else -100 for t, a in zip(ids, after)][1:]))
    assert merged == ["row 1", "row 3"]  # premise: two pairs merge across the boundary
    data = ChatDataset([{"prompt": p, "completion": c} for p, c in PAIRS],
                       load_tokenizer(folder), block_size=64)
    assert [(list(map(int, x)), list(map(int, y))) for x, y in data.items] == want
    assert "2 prompt/completion pairs share a token across the prompt's end (rows 1, 3)" \
        in data.read_note


SYSTEM = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"},
          {"role": "assistant", "content": "Hi there."}]
CALL = [{"role": "user", "content": "What is two plus two?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
        {"role": "tool", "content": "4"}, {"role": "assistant", "content": "Four."}]
ADD = [{"type": "function", "function": {"name": "add", "description": "Add", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}]


def test_system_tool_empty_and_repeated_rows_as_transformers_masks_them(folders):
    """A system message, a tool call and its result (``tools`` given), an empty completion,
    a row repeated (also across ``--val-split``): the sequences and labels of transformers'
    ``apply_chat_template(..., return_assistant_tokens_mask=True)``; the empty answer and
    the repeat said (they were not), and the held-out repeat said by the split."""
    from skiff.kernels.train.data import split_off
    from skiff.kernels.train.models.chat import ChatDataset
    from skiff.kernels.train.models.hf_checkpoint import load_tokenizer

    folder = folders[2]
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    rows = [{"messages": SYSTEM}, {"messages": CALL, "tools": ADD},
            {"prompt": "Say nothing.", "completion": ""}, {"messages": SYSTEM}]
    want = []
    for row in rows:
        messages = row.get("messages") or [{"role": "user", "content": row["prompt"]},
                                           {"role": "assistant", "content": row["completion"]}]
        enc = tok.apply_chat_template(messages, tools=row.get("tools"), tokenize=True,
                                      return_dict=True, return_assistant_tokens_mask=True)
        ids, mask = enc["input_ids"], enc["assistant_masks"]
        want.append((ids[:-1], [t if m else -100 for t, m in zip(ids, mask)][1:]))
    data = ChatDataset(rows, load_tokenizer(folder), block_size=512)
    assert [(list(map(int, x)), list(map(int, y))) for x, y in data.items] == want
    assert "1 conversation with an empty answer (row 3)" in data.read_note
    assert "1 conversation repeating an earlier one (row 4)" in data.read_note
    _, val = split_off(data, 0.25)
    assert val.split_note.endswith("; 1 held-out conversation (row 4) also in the training "
                                   "rows, so not held out from training: remove the repeats")


def test_eval_rows_cut_or_left_out_are_said(folders):
    """``--eval``'s held-out conversations past ``--block-size``: said (``HeldOut.read_note``,
    built once before training) where the eval loss silently covered fewer rows. Oracle:
    transformers' rendering puts the long row's first assistant token past the block."""
    from skiff.kernels.train.models.evaluate import HeldOut
    from skiff.kernels.train.models.hf_checkpoint import load_tokenizer

    folder = folders[2]
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    long = [{"role": "user", "content": "Hello world " * 40}, *SYSTEM[2:]]
    prompt = tok.apply_chat_template(long[:1], add_generation_prompt=True, tokenize=True,
                                     return_dict=False)
    assert len(prompt) > 65  # premise: no assistant token within the block of 64 + 1
    held = HeldOut([{"messages": SYSTEM}, {"messages": long}], load_tokenizer(folder),
                   block_size=64, source="held.jsonl")
    assert held.read_note.startswith("--eval held.jsonl: 1 of 2 conversations left out: no "
                                     "assistant token within the first 65 tokens (row 2)")
    ids = tok.apply_chat_template(SYSTEM, tokenize=True, return_dict=False)
    assert [list(map(int, x)) for x, _ in held.chat_data.items] == [ids[:-1]]


def test_a_csv_rows_notes_name_its_lines(folders, tmp_path):
    """A ``.csv`` with prompt/completion columns, a quoted field holding a newline: a row
    left out by the block is named by the line of the file it starts on (it was "row 2", its
    place among the rows). Oracle: the file's own lines, as ``csv.writer`` wrote them."""
    import csv

    from skiff.kernels.train.models.chat import ChatDataset
    from skiff.kernels.train.models.hf_checkpoint import load_tokenizer, read_training_rows

    long = "The quick brown fox " * 8
    with open(tmp_path / "pairs.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([("prompt", "completion"), ("Hello\nworld", "Hi."),
                                  (long, "Four.")])
    lines = (tmp_path / "pairs.csv").read_text().splitlines()
    at = next(i for i, ln in enumerate(lines, 1) if ln.startswith(long[:10]))
    assert at == 4  # premise: the quoted newline makes the second row's line 4
    kind, rows = read_training_rows(tmp_path / "pairs.csv")
    data = ChatDataset(rows, load_tokenizer(folders[0]), block_size=16)
    assert data.read_note.startswith("1 of 2 conversations left out: no assistant token "
                                     f"within the first 17 tokens (line {at})")
