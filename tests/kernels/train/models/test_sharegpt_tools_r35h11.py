"""LLaMA-Factory's ShareGPT tool rows (round 35, h11): ``{"conversations": [{"from":
"human", ...}, {"from": "function_call", "value": "{\\"name\\": ..., \\"arguments\\": ...}"},
{"from": "observation", ...}, {"from": "gpt", ...}], "system": ..., "tools": "[{\\"name\\":
...}]"}`` (its data/README's sharegpt layout, ``glaive_toolcall_en_demo.json``) was one error
(an unknown speaker ``function_call``). Now the function call is an assistant message with
``tool_calls``, the observation a ``tool`` message, the row's system text the first message
and its bare tool schemas wrapped as ``{"type": "function", "function": ...}``: ids and labels
equal transformers' ``apply_chat_template(..., return_assistant_tokens_mask=True)`` on those
messages."""

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
{% generation %}{{ m.content or '' }}
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
{% endif %}""")

SCHEMAS = [{"name": "search_recipes", "description": "Find recipes.",
            "parameters": {"type": "object", "properties": {
                "ingredients": {"type": "array", "items": {"type": "string"}}},
                "required": ["ingredients"]}},
           {"name": "get_time", "description": "The time.",
            "parameters": {"type": "object", "properties": {}}}]
CALL = {"name": "search_recipes", "arguments": {"ingredients": ["chicken", "brócoli"]}}
ROW = {"conversations": [
    {"from": "human", "value": "What can I cook with chicken and brócoli?"},
    {"from": "function_call", "value": json.dumps(CALL)},
    {"from": "observation", "value": '{"recipes": ["stir fry"]}'},
    {"from": "gpt", "value": "A chicken stir fry."}],
    "system": "You are a cook.", "tools": json.dumps(SCHEMAS)}
MESSAGES = [
    {"role": "system", "content": "You are a cook."},
    {"role": "user", "content": "What can I cook with chicken and brócoli?"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": CALL}]},
    {"role": "tool", "content": '{"recipes": ["stir fry"]}'},
    {"role": "assistant", "content": "A chicken stir fry."}]
TOOLS = [{"type": "function", "function": s} for s in SCHEMAS]


@pytest.fixture(scope="module")
def toks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sharegpt_tools35") / "base"
    make_sentencepiece_checkpoint(folder, chat_template=T)
    return transformers.AutoTokenizer.from_pretrained(folder), load_tokenizer(folder)


def _want(htok, messages, tools):
    enc = htok.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True,
                                   return_assistant_tokens_mask=True)
    ids = np.array(enc["input_ids"])
    return ids[:-1], np.where(np.array(enc["assistant_masks"])[1:] == 1, ids[1:], -100)


def _check(htok, tok, row, messages, tools, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n")
    ids, labels = ChatDataset.from_jsonl(path, tok, block_size=2048).items[0]
    want_ids, want_labels = _want(htok, messages, tools)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(labels, want_labels)
    return ids, labels


def test_llamafactory_tool_row_as_transformers(toks, tmp_path):
    htok, tok = toks
    ids, labels = _check(htok, tok, ROW, MESSAGES, TOOLS, tmp_path)
    # not vacuous: the call's tokens are learned, the observation's are not
    text = htok.decode(labels[labels >= 0])
    assert "search_recipes" in text and "stir fry" in text and "recipes\": [" not in text
    assert "Find recipes." in htok.decode(ids)  # the tools' system turn is there


def test_parallel_calls_and_own_system_turn(toks, tmp_path):
    htok, tok = toks
    calls = [CALL, {"name": "get_time", "arguments": {}}]
    row = {"conversations": [{"from": "system", "value": "Turn system."}]
           + ROW["conversations"][:1]
           + [{"from": "function_call", "value": json.dumps(calls)},
              {"from": "observation", "value": "[1]"},
              {"from": "observation", "value": "12:00"},
              {"from": "gpt", "value": "Done."}],
           "system": "Row system.", "tools": SCHEMAS}  # tools as a list too
    messages = [{"role": "system", "content": "Turn system."}, MESSAGES[1],
                {"role": "assistant", "content": "",
                 "tool_calls": [{"type": "function", "function": c} for c in calls]},
                {"role": "tool", "content": "[1]"}, {"role": "tool", "content": "12:00"},
                {"role": "assistant", "content": "Done."}]
    _check(htok, tok, row, messages, TOOLS, tmp_path)


def test_bad_function_call_is_one_error(toks):
    _, tok = toks
    row = dict(ROW, conversations=[ROW["conversations"][0],
                                   {"from": "function_call", "value": "{oops"}])
    with pytest.raises(ValueError, match=r"row 1: turn 1 \(function_call\) is not JSON"):
        ChatDataset([row], tok, block_size=1024)
    row = dict(ROW, conversations=[ROW["conversations"][0],
                                   {"from": "function_call", "value": '{"name": "x"}'}])
    with pytest.raises(ValueError, match=r"turn 1 \(function_call\) holds .*\"arguments\""):
        ChatDataset([row], tok, block_size=1024)
    row = dict(ROW, conversations=[{"from": "robot", "value": "x"}])
    with pytest.raises(ValueError, match="from 'robot'; ShareGPT turns are from .*function_call"):
        ChatDataset([row], tok, block_size=1024)
