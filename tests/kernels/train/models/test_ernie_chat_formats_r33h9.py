"""Chat files in the layouts users bring (round 33; each was "row 1 has keys conversations"
/ "has keys prompt, completion"): ShareGPT's ``{"conversations": [{"from": "human" | "gpt" |
"system", "value": ...}]}`` (Axolotl, LLaMA-Factory) and TRL's conversational
prompt-completion ``{"prompt": [messages], "completion": [messages]}`` (the loss on the
completion only, TRL's ``completion_only_loss``). The tokens and labels equal transformers'
``apply_chat_template(..., return_assistant_tokens_mask=True)`` on the same conversation
(for TRL's rows: its assistant mask after the prompt's tokens), from ``ChatDataset``, from a
``.jsonl`` through ``text_dataset`` and as held-out rows (``chat_loss``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.chat import ChatDataset
from skiff.kernels.train.models.evaluate import HeldOut, chat_loss, read_heldout
from skiff.kernels.train.models.hf_checkpoint import read_training_rows, text_dataset

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers

TEMPLATE = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' }}"
            "{%- if m['role'] == 'assistant' %}{% generation %}"
            "{{ m['content'] + '<|end_of_sentence|>' }}{% endgeneration %}"
            "{%- else %}{{ m['content'] + '<|end_of_sentence|>' }}{%- endif %}{{ '\n' }}"
            "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")

CHATS = [[("system", "Answer briefly."), ("user", "What is two plus two?"),
          ("assistant", "Four.")],
         [("user", "Hello world"), ("assistant", "Hello skiff!"), ("user", "你好"),
          ("assistant", "你好，世界。")]]
SHAREGPT_NAME = {"system": "system", "user": "human", "assistant": "gpt"}


def _messages(chat):
    return [{"role": r, "content": c} for r, c in chat]


def _sharegpt(chat):
    return {"conversations": [{"from": SHAREGPT_NAME[r], "value": c} for r, c in chat]}


def _trl(chat, k):  # the first k turns are the prompt
    msgs = _messages(chat)
    return {"prompt": msgs[:k], "completion": msgs[k:]}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formats") / "base"
    make_sentencepiece_checkpoint(folder, chat_template=TEMPLATE)
    return folder, transformers.AutoTokenizer.from_pretrained(folder), from_pretrained(folder)


def _want(htok, messages, prompt_turns=0):
    """transformers' ids and assistant-mask labels; with ``prompt_turns`` the labels of the
    first turns' tokens -100 (TRL: the loss on the completion)."""
    enc = htok.apply_chat_template(messages, tokenize=True, return_dict=True,
                                   return_assistant_tokens_mask=True)
    ids = np.array(enc["input_ids"])
    mask = np.array(enc["assistant_masks"]) == 1
    if prompt_turns:
        n = len(htok.apply_chat_template(messages[:prompt_turns], tokenize=True,
                                         return_dict=True)["input_ids"])
        mask[:n] = False
    return ids, np.where(mask, ids, -100)


def _check(ds, wants):
    assert len(ds) == len(wants)
    for (x, y), (ids, labels) in zip(ds.items, wants):
        np.testing.assert_array_equal(x, ids[:-1])
        np.testing.assert_array_equal(y, labels[1:])


def test_sharegpt_rows_as_transformers(setup, tmp_path):
    folder, htok, model = setup
    wants = [_want(htok, _messages(c)) for c in CHATS]
    _check(ChatDataset([_sharegpt(c) for c in CHATS], model.tokenizer, 128), wants)
    path = tmp_path / "sharegpt.jsonl"
    path.write_text("".join(json.dumps(_sharegpt(c)) + "\n" for c in CHATS))
    assert read_training_rows(path)[0] == "chat"
    _check(text_dataset(model, str(path), 128), wants)
    # "conversations" holding role/content messages, and "messages" holding from/value turns
    _check(ChatDataset([{"conversations": _messages(c)} for c in CHATS]
                       + [{"messages": _sharegpt(c)["conversations"]} for c in CHATS],
                       model.tokenizer, 128), wants + wants)


def test_trl_prompt_completion_rows_as_transformers(setup, tmp_path):
    folder, htok, model = setup
    # the second chat's prompt holds an assistant turn: not trained on
    rows = [_trl(CHATS[0], 2), _trl(CHATS[1], 3)]
    wants = [_want(htok, _messages(CHATS[0]), 2), _want(htok, _messages(CHATS[1]), 3)]
    assert (wants[1][1] != -100).sum() < (_want(htok, _messages(CHATS[1]))[1] != -100).sum()
    _check(ChatDataset(rows, model.tokenizer, 128), wants)
    path = tmp_path / "trl.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _check(text_dataset(model, str(path), 128), wants)


def test_heldout_rows_in_these_layouts(setup, tmp_path):
    folder, htok, model = setup
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    path = tmp_path / "held.jsonl"
    path.write_text(json.dumps(_sharegpt(CHATS[0])) + "\n" + json.dumps(_trl(CHATS[1], 3))
                    + "\n")
    rows = read_heldout(path)
    held = HeldOut(rows, model.tokenizer)
    got = chat_loss(model, held.chats)
    total = count = 0.0
    for ids, labels in (_want(htok, _messages(CHATS[0])), _want(htok, _messages(CHATS[1]), 3)):
        with torch.no_grad():
            logits = ref(torch.tensor(ids[None])).logits[0, :-1]
        nll = torch.nn.functional.cross_entropy(logits, torch.tensor(labels[1:]),
                                                ignore_index=-100, reduction="sum")
        total += float(nll)
        count += int((labels[1:] != -100).sum())
    loss = got["loss"] if isinstance(got, dict) else got
    np.testing.assert_allclose(loss, total / count, rtol=1e-4)


def test_unknown_sharegpt_speaker_is_one_error(setup):
    _, _, model = setup
    row = {"conversations": [{"from": "narrator", "value": "x"},
                             {"from": "gpt", "value": "y"}]}
    with pytest.raises(ValueError, match="row 1: turn 0 is from 'narrator'"):
        ChatDataset([row], model.tokenizer, 64)
