"""``apply_chat_template(messages, tools=..., documents=...)`` (round 29; was "render() got
multiple values for keyword argument 'tools'"): the tools as JSON-schema dicts or Python
functions, the documents, with a system message and ``enable_thinking``; text and ids equal
transformers' on the same checkpoint."""

from __future__ import annotations

import pytest

from skiff.kernels.train.models import load_tokenizer

from .ernie_reference import make_sentencepiece_checkpoint

TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|end_of_sentence|>\n"
    "{%- for t in tools %}{{ t.function.name if t.function is defined else t.name }};"
    "{%- endfor %}{%- endif %}"
    "{%- if documents %}{%- for d in documents %}[doc {{ loop.index }}] {{ d.title }}: "
    "{{ d.text }}\n{%- endfor %}{%- endif %}"
    "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] }}"
    "<|end_of_sentence|>{{ '\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{%- else %}<think>\n{%- endif %}{%- endif %}")


def get_weather(city: str, days: int = 1) -> str:
    """Get the weather forecast.

    Args:
        city: The city name.
        days: How many days ahead.
    """
    return "sunny"


def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


SCHEMA = {"type": "function", "function": {"name": "lookup", "description": "Look up a word",
                                           "parameters": {"type": "object", "properties": {
                                               "word": {"type": "string"}},
                                               "required": ["word"]}}}
MESSAGES = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "你好, weather in Paris?"}]
DOCS = [{"title": "Paris", "text": "Paris is in France."}, {"title": "Nice", "text": "Sunny."}]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tools")
    _, htok = make_sentencepiece_checkpoint(folder, chat_template=TEMPLATE)
    return load_tokenizer(folder), htok


@pytest.mark.parametrize("kw", [dict(tools=[get_weather]),
                                dict(tools=[SCHEMA, add], enable_thinking=False),
                                dict(tools=[add], documents=DOCS, enable_thinking=True),
                                dict(documents=DOCS), dict(tools=None), dict(tools=[])])
def test_tools_and_documents_as_transformers(tokenizers, kw):
    tok, htok = tokenizers
    want = htok.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False, **kw)
    got = tok.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False, **kw)
    assert got == want
    want_ids = htok.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=True,
                                        return_dict=True, **kw)["input_ids"]
    got_ids = tok.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=True,
                                      return_dict=True, **kw)["input_ids"]
    assert [int(i) for i in got_ids] == list(want_ids)


def test_a_bad_tool_is_one_clear_error(tokenizers):
    tok, _ = tokenizers
    with pytest.raises(TypeError, match="JSON-schema dicts or functions"):
        tok.apply_chat_template(MESSAGES, tools=["get_weather"], tokenize=False)
