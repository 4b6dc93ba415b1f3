"""``--eval``'s exact match on a thinking chat model (round 44, h6).

A held-out conversation with an ``answer``, on a checkpoint whose template opens ``<think>``
in its generation prompt: the greedy reply is the thinking, ``</think>``, then the answer.
``exact_match`` compared the reply's first line (the thinking) with the answer, so a thinking
model scored 0 however right it was. Now the answer is what follows the thinking, as the
models' cards parse it (the text after ``</think>``). Oracle: transformers' model of the
same checkpoint, taught one reply in torch, its greedy ``generate`` decoded and split there.
"""

from __future__ import annotations

import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.evaluate import HeldOut, exact_match

from .ernie_reference import make_sentencepiece_checkpoint, torch


def test_exact_match_reads_the_answer_after_the_thinking(tmp_path):
    ref, tok = make_sentencepiece_checkpoint(tmp_path / "ckpt", seed=6)
    msgs = [{"role": "system", "content": "You add."},
            {"role": "user", "content": "two plus two"}]
    prompt = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    assert prompt.endswith("<think>")  # the premise: the template opens the thinking
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([p_ids + tok("sum it</think>\n\n4\n", add_special_tokens=False)
                        ["input_ids"] + [tok.eos_token_id]])
    labels = ids.clone()
    labels[0, :len(p_ids)] = -100
    torch.manual_seed(0)
    opt = torch.optim.Adam(ref.parameters(), lr=3e-2)
    ref.train()
    for _ in range(30):  # the reply learnt by heart
        loss = ref(ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    ref.config.eos_token_id = ref.generation_config.eos_token_id = tok.eos_token_id
    ref.eval().save_pretrained(tmp_path / "ckpt")
    with torch.no_grad():
        out = ref.generate(torch.tensor([p_ids]), max_new_tokens=12, do_sample=False)
    text = tok.decode(out[0, len(p_ids):], skip_special_tokens=True)
    thinking, _, after = text.partition("</think>")
    want = after.strip().split("\n")[0].strip()
    assert thinking.strip() and want == "4", text  # the premise: it thinks, then answers

    model = from_pretrained(tmp_path / "ckpt")
    got = exact_match(model, [{"prompt": prompt, "answer": "4"}], max_new_tokens=12)
    assert got["answers"] == [want] and got["exact_match"] == 1.0
    row = {"messages": msgs + [{"role": "assistant", "content": "4"}], "answer": "4"}
    assert HeldOut([row], model.tokenizer, max_new_tokens=12)(model)[
        "eval_exact_match"] == pytest.approx(1.0)
    unclosed = exact_match(model, [{"prompt": prompt, "answer": "sum it"}], max_new_tokens=2)
    assert unclosed["answers"] == [""]  # still thinking at the end: no answer
