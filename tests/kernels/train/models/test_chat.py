"""Chat templates rendered by skiff exactly as transformers' ``apply_chat_template`` renders
them (a tokenizer the test builds and saves with transformers, two templates: an ERNIE-style
one with a thinking part and an ``enable_thinking`` switch, and one written with block tags
on their own lines, where ``trim_blocks``/``lstrip_blocks`` matter); the thinking part of an
answer split from the answer.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models.chat import ChatTemplate, split_thinking
from skiff.kernels.train.models.hf_checkpoint import load_tokenizer

from .ernie_reference import add_tokenizer, transformers

THINKING = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{{- message['content'] + '\\n\\n' -}}"
    "{%- elif message['role'] == 'user' -%}{{- 'User: ' + message['content'] + '\\n' -}}"
    "{%- elif message['role'] == 'assistant' -%}{{- 'Assistant: ' -}}"
    "{%- if message.get('reasoning_content') -%}"
    "{{- '<think>\\n' + message['reasoning_content'] + '\\n</think>\\n\\n' -}}{%- endif -%}"
    "{{- message['content'] + eos_token -}}"
    "{%- else -%}{{- raise_exception('unknown role ' + message['role']) -}}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant: ' -}}"
    "{%- if enable_thinking is defined and not enable_thinking -%}"
    "{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}{%- endif -%}")

BLOCKS = """{{ bos_token }}
{% for message in messages %}
    {% if loop.index0 > 4 %}{% break %}{% endif %}
    <|{{ message.role }}|>
    {{ message.content | trim }}{{ eos_token if message.role == 'assistant' }}
{% endfor %}
{% if add_generation_prompt %}
<|assistant|>
{% endif %}"""

CHATS = [
    [{"role": "user", "content": "What is a skiff?"}],
    [{"role": "system", "content": "Answer briefly."},
     {"role": "user", "content": "What is 2 + 2?"},
     {"role": "assistant", "content": "Four.", "reasoning_content": "2 + 2 = 4."},
     {"role": "user", "content": "And 3 + 3?"}],
    [{"role": "user", "content": " spaces  "}, {"role": "assistant", "content": "ok"},
     {"role": "user", "content": "again"}, {"role": "assistant", "content": "ok"},
     {"role": "user", "content": "3"}, {"role": "assistant", "content": "cut by break"}],
]


@pytest.mark.parametrize("template", [THINKING, BLOCKS], ids=["thinking", "blocks"])
def test_rendered_exactly_as_transformers(tmp_path, template):
    add_tokenizer(tmp_path, "a skiff is a small boat " * 20, vocab_size=60)
    from tokenizers import Tokenizer

    ref = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_file(str(tmp_path / "tokenizer.json")),
        bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>")
    ref.chat_template = template
    ref.save_pretrained(tmp_path / "saved")
    tok = load_tokenizer(tmp_path / "saved")
    assert tok.chat_template is not None
    for chat in CHATS:
        for gen in (False, True):
            for extra in ({}, {"enable_thinking": False}):
                want = ref.apply_chat_template(chat, tokenize=False, add_generation_prompt=gen,
                                               **extra)
                got = tok.apply_chat_template(chat, add_generation_prompt=gen, **extra)
                assert got == want, (chat, gen, extra)
    ids = tok.apply_chat_template(CHATS[0], add_generation_prompt=True, tokenize=True,
                                  return_dict=False)
    text = ref.apply_chat_template(CHATS[0], tokenize=False, add_generation_prompt=True)
    assert ids == ref.encode(text, add_special_tokens=False)


def test_template_errors_and_sources(tmp_path):
    t = ChatTemplate(THINKING, {"bos_token": "<s>", "eos_token": "</s>"})
    with pytest.raises(Exception, match="unknown role tool"):
        t.render([{"role": "tool", "content": "x"}])
    with pytest.raises(ValueError, match="message 0 must be a dict with a 'role'"):
        t.render([{"content": "x"}])
    (tmp_path / "tokenizer_config.json").write_text(
        '{"eos_token": {"content": "</s>"}, "chat_template": [{"name": "default", '
        '"template": "{{ messages[0].content }}{{ eos_token }}"}]}')
    named = ChatTemplate.from_folder(tmp_path)
    assert named.render([{"role": "user", "content": "hi"}]) == "hi</s>"
    assert ChatTemplate.from_folder(tmp_path / "nothing") is None


def test_split_thinking():
    assert split_thinking("<think>\nreason\n</think>\n\nanswer") == ("reason", "answer")
    assert split_thinking("reason</think>answer") == ("reason", "answer")
    assert split_thinking("just an answer") == ("", "just an answer")
    assert split_thinking("<think>still thinking") == ("still thinking", "")


GENERATION = THINKING.replace(
    "{%- if message.get('reasoning_content') -%}", "{%- generation -%}"
    "{%- if message.get('reasoning_content') -%}").replace(
    "{{- message['content'] + eos_token -}}",
    "{{- message['content'] + eos_token -}}{%- endgeneration -%}")

WORDS = ("User: Assistant: What is a skiff? A skiff is a small boat. Answer briefly. "
         "What is 2 + 2? Four. And 3 + 3? Six. <think> </think> reason ")


def _tokenizer_pair(folder, template, vocab_size=96):
    from tokenizers import Tokenizer

    add_tokenizer(folder, WORDS * 10, vocab_size=vocab_size)
    ref = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_file(str(folder / "tokenizer.json")),
        bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>")
    ref.chat_template = template
    ref.save_pretrained(folder)
    return ref, load_tokenizer(folder)


def test_chat_data_learns_the_assistant_tokens_transformers_marks(tmp_path):
    """Targets are the tokens transformers' return_assistant_tokens_mask marks (through the
    template's generation tags), everything else -100; a JSONL without messages, or not
    JSON, is one clear error."""
    from skiff.kernels.train.models.chat import ChatDataset

    ref, tok = _tokenizer_pair(tmp_path, GENERATION)
    rows = [{"messages": c} for c in CHATS[1:]] + [{"messages": CHATS[0] + [
        {"role": "assistant", "content": "A skiff is a small boat."}]}]
    ds = ChatDataset(rows, tok, block_size=512)
    assert len(ds) == len(rows)
    for i, row in enumerate(rows):
        out = ref.apply_chat_template(row["messages"], tokenize=True, return_dict=True,
                                      return_assistant_tokens_mask=True)
        ids, mask = np.array(out["input_ids"]), np.array(out["assistant_masks"], bool)
        tokens, targets = ds[i]
        assert np.array_equal(tokens, ids[:-1])
        assert np.array_equal(targets, np.where(mask[1:], ids[1:], -100)), i
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}, '
                   '{"role": "assistant", "content": "ok"}]}\n{"text": "no messages"}\n')
    with pytest.raises(ValueError, match="line 2 has no 'messages' list"):
        ChatDataset.from_jsonl(bad, tok, 64)
    bad.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        ChatDataset.from_jsonl(bad, tok, 64)


def test_chat_fine_tuning_loss_equals_transformers_and_falls(tmp_path):
    """The packed, masked loss of a batch of conversations equals transformers' mean
    cross-entropy over the same assistant tokens; a few Trainer steps lower it."""
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.hf_checkpoint import text_dataset
    from skiff.kernels.train.trainer import Trainer

    from .ernie_reference import make_checkpoint, torch

    _, model_ref = make_checkpoint(tmp_path, "moe-shared")
    _tokenizer_pair(tmp_path, THINKING, vocab_size=80)
    rows = [{"messages": c} for c in CHATS[1:]] * 3
    (tmp_path / "chat.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    model = from_pretrained(tmp_path)
    ds = text_dataset(model, str(tmp_path / "chat.jsonl"), block_size=128)
    batch = ds.collate([ds[0], ds[1]])
    loss = model.loss(batch).item()
    total, count = 0.0, 0
    for tokens, targets in (ds[0], ds[1]):
        with torch.no_grad():
            logits = model_ref(torch.tensor(tokens[None])).logits[0]
        t = torch.tensor(targets)
        total += torch.nn.functional.cross_entropy(logits, t, ignore_index=-100,
                                                   reduction="sum").item()
        count += int((targets != -100).sum())
    assert abs(loss - total / count) <= 1e-5 * abs(loss)
    result = Trainer(model, lr=3e-3, batch_size=2, schedule="constant", shuffle=False) \
        .train(ds, steps=9)
    losses = [h["loss"] for h in result.history]
    assert np.mean(losses[-3:]) < np.mean(losses[:3])
