"""Chat templates rendered by skiff exactly as transformers' ``apply_chat_template`` renders
them (a tokenizer the test builds and saves with transformers, two templates: an ERNIE-style
one with a thinking part and an ``enable_thinking`` switch, and one written with block tags
on their own lines, where ``trim_blocks``/``lstrip_blocks`` matter); the thinking part of an
answer split from the answer.
"""

from __future__ import annotations

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
    ids = tok.apply_chat_template(CHATS[0], add_generation_prompt=True, tokenize=True)
    text = ref.apply_chat_template(CHATS[0], tokenize=False, add_generation_prompt=True)
    assert ids.tolist() == ref.encode(text, add_special_tokens=False)


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
