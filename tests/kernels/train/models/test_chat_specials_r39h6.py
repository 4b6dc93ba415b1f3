"""``%chat`` / ``reply`` answers without the tokenizer's special tokens (round 39, h6): a
model that writes its template's end-of-turn marker (``<|end_of_sentence|>``) before the
eos showed it in the answer; transformers' chat pipeline (``pipeline("text-generation")
(messages)``) decodes with ``skip_special_tokens=True``. The answer now equals the
pipeline's, ``raw`` keeps the tokens as generated, and a stop string that is a special
token still stops (its text cut)."""

from __future__ import annotations

import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.chat_reply import reply

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers

PLAIN = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] }}"
         "<|end_of_sentence|>{{ '\n' }}{%- endfor %}"
         "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("specials39")
    ref, tok = make_sentencepiece_checkpoint(d, chat_template=PLAIN)
    marker = tok.convert_tokens_to_ids("<|end_of_sentence|>")
    with torch.no_grad():  # the marker made likely (a tied head: its row, scaled)
        ref.model.embed_tokens.weight[marker] *= 2.0
    ref.save_pretrained(d)
    return d


def test_chat_answer_has_no_special_tokens_as_the_pipeline(folder):
    messages = [{"role": "user", "content": "Say hello."}]
    pipe = transformers.pipeline("text-generation", model=str(folder))
    want = pipe(messages, max_new_tokens=12, do_sample=False)[0]["generated_text"][-1]
    model = from_pretrained(folder)
    got = reply(model, "Say hello.", max_new_tokens=12)
    head, marker, tail = got.raw.partition("<|end_of_sentence|>")
    assert marker and head and tail  # the model wrote the marker between other text
    assert got.text == want["content"]
    assert "<|end_of_sentence|>" not in got.text
    stopped = reply(model, "Say hello.", max_new_tokens=12, stop_strings=["<|end_of_sentence|>"])
    assert stopped.stop == "stop string"
    assert stopped.text == head
