"""``apply_chat_template`` as transformers 5 (round 28): its default result (transformers
tokenizes; skiff's text now also reads as that BatchEncoding), ``continue_final_message``
and ``return_assistant_tokens_mask`` (both were passed to the template and ignored), each
against ``AutoTokenizer`` of the same folder."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained, load_tokenizer

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers
from .test_ernie_user_flow_r27 import TEMPLATE

CONVS = [
    [{"role": "user", "content": "What is two plus two?"},
     {"role": "assistant", "content": "Four."}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello world"},
     {"role": "assistant", "content": "Hello skiff!"}, {"role": "user", "content": "你好"},
     {"role": "assistant", "content": "你好，世界。 "}],
]


@pytest.fixture(scope="module", params=["generation-tag", "plain"])
def toks(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    template = TEMPLATE if request.param == "generation-tag" else \
        TEMPLATE.replace("{% generation %}", "").replace("{% endgeneration %}", "")
    ref, _ = make_sentencepiece_checkpoint(folder, chat_template=template)
    return folder, ref, transformers.AutoTokenizer.from_pretrained(folder), load_tokenizer(folder)


def test_default_is_text_and_transformers_encoding(toks):
    folder, ref, htok, tok = toks
    for conv in CONVS:
        for gen in (False, True):
            got = tok.apply_chat_template(conv, add_generation_prompt=gen)
            want = htok.apply_chat_template(conv, add_generation_prompt=gen)  # tokenized
            assert got == htok.apply_chat_template(conv, add_generation_prompt=gen,
                                                   tokenize=False)
            assert sorted(got.keys()) == sorted(want.keys())
            assert got["input_ids"] == want["input_ids"] == list(got.input_ids)
            assert got["attention_mask"] == want["attention_mask"]
            assert got[:5] == str(got)[:5]  # still text
    batch = tok.apply_chat_template(CONVS)
    assert [b["input_ids"] for b in batch] == htok.apply_chat_template(CONVS)["input_ids"]
    model = from_pretrained(folder)
    inputs = tok.apply_chat_template(CONVS[0][:1], add_generation_prompt=True)
    hin = htok.apply_chat_template(CONVS[0][:1], add_generation_prompt=True,
                                   return_tensors="pt")
    with torch.no_grad():
        want = ref.generate(**hin, max_new_tokens=5, do_sample=False).numpy()
    np.testing.assert_array_equal(model.generate(**inputs, max_new_tokens=5), want)


@pytest.mark.parametrize("conv", CONVS + [CONVS[0][:1]])
def test_continue_final_message(toks, conv):
    _, _, htok, tok = toks
    kw = dict(continue_final_message=True, tokenize=False)
    want = htok.apply_chat_template(conv, **kw)
    assert tok.apply_chat_template(conv, **kw) == want
    assert tok.apply_chat_template(conv, continue_final_message=True, tokenize=True,
                                   return_dict=False) == htok.apply_chat_template(
        conv, continue_final_message=True, tokenize=True, return_dict=False)
    for bad in (dict(add_generation_prompt=True), dict(return_assistant_tokens_mask=True)):
        with pytest.raises(ValueError, match="not compatible"):
            htok.apply_chat_template(conv, continue_final_message=True, **bad)
        with pytest.raises(ValueError, match="not compatible"):
            tok.apply_chat_template(conv, continue_final_message=True, **bad)


@pytest.mark.parametrize("kw", [{}, dict(add_generation_prompt=True),
                                dict(padding=True, return_tensors="pt"),
                                dict(truncation=True, max_length=20)])
def test_assistant_tokens_mask(toks, kw):
    _, _, htok, tok = toks
    for convs in (CONVS[0], CONVS[1], CONVS):
        want = htok.apply_chat_template(convs, tokenize=True, return_dict=True,
                                        return_assistant_tokens_mask=True, **kw)
        got = tok.apply_chat_template(convs, tokenize=True, return_dict=True,
                                      return_assistant_tokens_mask=True, **kw)
        assert sorted(got.keys()) == sorted(want.keys())
        for key in want:
            a, b = got[key], want[key]
            if hasattr(b, "numpy"):
                assert tuple(a.shape) == tuple(b.shape)
                a, b = a.numpy().tolist(), b.numpy().tolist()
            assert a == b, key
        masks = np.concatenate([np.ravel(m) for m in (
            want["assistant_masks"] if convs is CONVS and not kw.get("return_tensors")
            else [np.asarray(want["assistant_masks"])])])
        if "max_length" not in kw:  # (20 tokens cut the assistant's turn away)
            assert masks.any() == ("{% generation %}" in tok.chat_template.source)
