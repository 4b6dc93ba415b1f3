"""Tool-calling chat rows for training (round 35, h6): TRL's SFT rows ``{"messages": [...],
"tools": [...]}`` (an assistant turn with ``tool_calls``, a ``tool`` turn with the result)
and ``chat_template_kwargs`` (``enable_thinking``): TRL renders ``apply_chat_template(
messages, tools=row["tools"], **row["chat_template_kwargs"])``; skiff's ``ChatDataset``
dropped the tools (the system turn that lists them was missing from the training tokens).
Now the ids and labels equal transformers' ``return_assistant_tokens_mask`` on the same
call, from a list of schemas and from the JSON text a data set column holds; the rendered
prompt with tools and ``enable_thinking=False`` equals transformers' too."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import load_tokenizer
from skiff.kernels.train.models.chat import ChatDataset

from .ernie_reference import make_sentencepiece_checkpoint, transformers

T = (r"""{%- if tools %}<|im_start|>system
{%- if messages[0].role == 'system' %}{{ messages[0].content }}{% endif %}
# Tools
<tools>{% for t in tools %}
{{ t | tojson }}{% endfor %}
</tools><|end_of_sentence|>
{%- elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|end_of_sentence|>
{%- endif %}
{%- for m in messages %}
{%- if m.role == 'user' %}<|im_start|>user
{{ m.content }}<|end_of_sentence|>
{%- elif m.role == 'assistant' %}<|im_start|>assistant
{% generation %}{%- if m.reasoning_content %}<think>
{{ m.reasoning_content.strip() }}
</think>

{% endif %}{{ m.content or '' }}
{%- if m.tool_calls %}{% for tc in m.tool_calls %}"""
     r"""{% if tc.function %}{% set tc = tc.function %}{% endif %}
<tool_call>
{"name": "{{ tc.name }}", "arguments": """
     r"""{% if tc.arguments is string %}{{ tc.arguments }}"""
     r"""{% else %}{{ tc.arguments | tojson }}{% endif %}}
</tool_call>{% endfor %}{% endif %}<|end_of_sentence|>{% endgeneration %}
{%- elif m.role == 'tool' %}<|im_start|>user
<tool_response>
{{ m.content }}
</tool_response><|end_of_sentence|>
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{%- if enable_thinking is defined and enable_thinking is false %}
<think>

</think>

{%- else %}
<think>
{%- endif %}{%- endif %}""")

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Zürich?"},
    {"role": "assistant", "content": "", "reasoning_content": "need a tool",
     "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                      "arguments": {"city": "Zürich"}}}]},
    {"role": "tool", "name": "get_weather", "content": '{"t": 3}'},
    {"role": "assistant", "content": "3 °C."}]


@pytest.fixture(scope="module")
def toks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tools35") / "base"
    make_sentencepiece_checkpoint(folder, chat_template=T)
    return transformers.AutoTokenizer.from_pretrained(folder), load_tokenizer(folder)


def _want(htok, **kw):
    enc = htok.apply_chat_template(MESSAGES, tokenize=True, return_dict=True,
                                   return_assistant_tokens_mask=True, **kw)
    ids = np.array(enc["input_ids"])
    return ids[:-1], np.where(np.array(enc["assistant_masks"])[1:] == 1, ids[1:], -100)


@pytest.mark.parametrize("row_tools", ["list", "json"])
def test_rows_with_tools_as_transformers(toks, row_tools):
    htok, tok = toks
    tools = TOOLS if row_tools == "list" else json.dumps(TOOLS)
    data = ChatDataset([{"messages": MESSAGES, "tools": tools}], tok, block_size=1024)
    ids, labels = data.items[0]
    want_ids, want_labels = _want(htok, tools=TOOLS)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(labels, want_labels)
    # not vacuous: without the tools the tokens differ (the system turn lists them)
    plain = ChatDataset([{"messages": MESSAGES}], tok, block_size=1024).items[0][0]
    assert len(plain) < len(ids)


def test_chat_template_kwargs_as_transformers(toks):
    htok, tok = toks
    row = {"messages": MESSAGES[:2] + [{"role": "assistant", "content": "Cold."}],
           "tools": TOOLS, "chat_template_kwargs": {"enable_thinking": False}}
    ids, labels = ChatDataset([row], tok, block_size=1024).items[0]
    enc = htok.apply_chat_template(row["messages"], tools=TOOLS, enable_thinking=False,
                                   tokenize=True, return_dict=True,
                                   return_assistant_tokens_mask=True)
    np.testing.assert_array_equal(ids, np.array(enc["input_ids"])[:-1])
    prompt = dict(tools=TOOLS, add_generation_prompt=True, enable_thinking=False,
                  tokenize=False)
    assert tok.apply_chat_template(MESSAGES[:2], **prompt) == \
        htok.apply_chat_template(MESSAGES[:2], **prompt)


def test_bad_tools_text_is_one_error(toks):
    _, tok = toks
    with pytest.raises(ValueError, match="row 1: 'tools' is text but not JSON"):
        ChatDataset([{"messages": MESSAGES, "tools": "[{oops"}], tok, block_size=1024)
