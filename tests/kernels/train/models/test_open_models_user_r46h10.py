"""Open models as a user, round 46 (h10): an answer's leading / trailing spaces and
newlines kept, as transformers' chat pipeline returns them.

``python -m skiff generate|chat --json`` and ``%chat`` stripped the answer's text; a
transformers user's pipeline (``pipeline("text-generation")`` on messages or on text,
``return_full_text=False``) returns ``tokenizer.decode(new ids, skip_special_tokens=True)``
as it is (its ``postprocess``: the assistant message's content is that decode, no strip),
and its returned messages carry that content into the next turn. Oracle: transformers'
model of the same checkpoint, greedy ``generate``, each answer cut at its first eos and
decoded without special tokens. The checkpoint's whitespace pieces (``▁``, ``<0x0A>``,
``<0x20>``) have their (tied) embedding rows scaled by 3 so that greedy answers begin and
end with spaces (a random model's answers seldom do)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from .ernie_reference import make_sentencepiece_checkpoint, torch

PLAIN = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] }}"
         "<|end_of_sentence|>{{ '\n' }}{%- endfor %}"
         "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
TEXTS = ["quick brown", "jumps over lazy"]  # plain-text answers: leading / trailing spaces
ASKED = "dog two plus sea"  # a chat answer beginning with spaces


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    root = tmp_path_factory.mktemp("r46h10")
    ref, tok = make_sentencepiece_checkpoint(root / "ckpt", seed=6, chat_template=PLAIN)
    with torch.no_grad():
        ref.get_input_embeddings().weight[tok.convert_tokens_to_ids(
            ["▁", "<0x0A>", "<0x20>"])] *= 3.0
    ref.save_pretrained(root / "ckpt")
    return root, ref.eval(), tok


def _theirs(ref, tok, text, n):
    ids = tok(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        new = ref.generate(ids, max_new_tokens=n, do_sample=False)[0, ids.shape[1]:].tolist()
    eos = ref.generation_config.eos_token_id
    cut = next((i + 1 for i, t in enumerate(new) if t == eos), len(new))
    return tok.decode(new[:cut], skip_special_tokens=True)


def _cli(*args):
    from skiff.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(list(args)) == 0, err.getvalue()[-400:]
    return json.loads(out.getvalue())


def test_answers_keep_their_spaces_as_transformers_decodes_them(ckpt):
    root, ref, tok = ckpt
    want = [_theirs(ref, tok, t, 8) for t in TEXTS]
    assert want[0] != want[0].lstrip() and want[1] != want[1].rstrip()  # premise
    (root / "p.txt").write_text("\n".join(TEXTS) + "\n")
    doc = _cli("generate", str(root / "ckpt"), "--prompts", str(root / "p.txt"),
               "--max-new-tokens", "8", "--json")
    assert [r["text"] for r in doc["result"]["replies"]] == want

    # a chat turn: the answer, and the messages the next turn renders, as the pipeline's
    msgs = [{"role": "user", "content": ASKED}]
    answer = _theirs(ref, tok, tok.apply_chat_template(msgs, add_generation_prompt=True,
                                                       tokenize=False), 8)
    assert answer != answer.strip()  # premise
    got = _cli("chat", str(root / "ckpt"), ASKED, "--max-new-tokens", "8", "--json")
    assert got["result"]["text"] == answer
    assert got["result"]["messages"] == msgs + [{"role": "assistant", "content": answer}]


def test_packed_decode_attends_over_each_rows_own_positions(ckpt, monkeypatch):
    """Decode steps of a packed batch (``generate_batch``): each row's scores were computed
    over the longest row's positions (the rest masked); now over its own. The tokens stay
    transformers' (each prompt alone, greedy); the widths the softmax sees are the rows'
    own lengths (the longest row's before: the check fails without the change)."""
    from skiff.kernels.train.models import ernie_infer, from_pretrained
    from skiff.kernels.train.models.ernie_infer import fast_path

    root, ref, tok = ckpt
    prompts = [tok.encode(t, add_special_tokens=False) for t in
               ("hello", " ".join(TEXTS * 6))]
    assert len(prompts[1]) > 4 * len(prompts[0])  # premise: mostly padding for row 0
    model = from_pretrained(root / "ckpt")
    assert fast_path(model) is not None
    widths, inside = [], []
    soft, step = ernie_infer._softmax_times, ernie_infer.decode_step

    def stepping(*args, **kw):
        inside.append(1)
        try:
            return step(*args, **kw)
        finally:
            inside.pop()

    def softmax(att, v, bf):
        if inside:  # the decode steps' scores (the prefill's are per prompt already)
            widths.append(att.shape[-1])
        return soft(att, v, bf)

    monkeypatch.setattr(ernie_infer, "decode_step", stepping)
    monkeypatch.setattr(ernie_infer, "_softmax_times", softmax)
    outs = model.generate_batch(prompts, max_new_tokens=5, eos_token_id=None)
    for p, o in zip(prompts, outs):
        with torch.no_grad():
            want = ref.generate(torch.tensor([p]), max_new_tokens=5, do_sample=False,
                                eos_token_id=None, pad_token_id=0)[0, len(p):].tolist()
        assert [int(t) for t in o[len(p):]] == want
    assert widths and min(widths) <= len(prompts[0]) + 5, widths  # row 0's own positions
