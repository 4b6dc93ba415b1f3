"""Open models as a user, round 45 (h6): ``--prompts FILE`` sampled and with beams as one
left-padded batch, an answer decoded as transformers skips special tokens, a stop string
the cut hides, question rows alone in ``--eval``, the prompts over the context named.

Round 44 answered greedy ``--prompts`` batches in one packed batch, but a sampled batch
(``--temperature``) and a beam search (``--num-beams``) answered each prompt in turn: a
transformers user's batch (``torch.manual_seed(seed)``, then ``generate`` on the left-padded
prompts with their attention mask) drew other tokens, and beams ran once per prompt. Now
both go as one batch, and one prompt's ``--seed`` draws as transformers' after
``torch.manual_seed(seed)`` (it drew from numpy's generator). Oracle: transformers' model
of the same checkpoint, its chat template, ``generate`` on the left-padded batch, each row
cut at its first eos and decoded without special tokens (as its chat pipeline)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers

PLAIN = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] }}"
         "<|end_of_sentence|>{{ '\n' }}{%- endfor %}"
         "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
ASKED = ["Hello world", "The quick brown fox jumps over the lazy dog", "Two plus two?"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    root = tmp_path_factory.mktemp("r45h6-prompts")
    ref, tok = make_sentencepiece_checkpoint(root / "ckpt", seed=6, chat_template=PLAIN)
    (root / "p.txt").write_text("\n".join(ASKED) + "\n")
    rows = [tok.apply_chat_template([{"role": "user", "content": q}],
                                    add_generation_prompt=True, tokenize=True,
                                    return_dict=False) for q in ASKED]
    rows = [list(r["input_ids"] if isinstance(r, dict) else r) for r in rows]
    width = max(map(len, rows))
    assert len({len(r) for r in rows}) == 3  # premise: the batch needs padding
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    return root, ref.eval(), tok, ids, mask


def _theirs(ref, tok, ids, mask, n, seed=None, **kw):
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        out = ref.generate(ids, attention_mask=mask, max_new_tokens=n, **kw)
    eos = ref.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos])
    texts = []
    for row in out[:, ids.shape[1]:].tolist():
        cut = next((i + 1 for i, t in enumerate(row) if t in eos), len(row))
        texts.append(tok.decode(row[:cut], skip_special_tokens=True))
    return texts


def _cli(*args):
    from skiff.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(list(args)) == 0, err.getvalue()[-400:]
    return json.loads(out.getvalue())


def test_sampled_prompts_draw_as_transformers_left_padded_batch(ckpt):
    root, ref, tok, ids, mask = ckpt
    want = _theirs(ref, tok, ids, mask, 12, seed=5, do_sample=True, temperature=0.9,
                   top_k=20, top_p=1.0)
    # premise: the batch's draws are not each prompt's own draws of that seed
    alone = [_theirs(ref, tok, ids[i:i + 1, (mask[i] == 0).sum():], None, 12, seed=5,
                     do_sample=True, temperature=0.9, top_k=20, top_p=1.0)[0]
             for i in range(len(ASKED))]
    assert alone != want
    doc = _cli("chat", str(root / "ckpt"), "--prompts", str(root / "p.txt"),
               "--temperature", "0.9", "--top-k", "20", "--seed", "5",
               "--max-new-tokens", "12", "--json")
    got = [r["text"] for r in doc["result"]["replies"]]
    assert got == want and all(want), (got, want)
    assert [r["prompt"] for r in doc["result"]["replies"]] == ASKED
    # one prompt with --seed: transformers' draws of that prompt alone after the seed
    one = _cli("chat", str(root / "ckpt"), ASKED[1], "--temperature", "0.9", "--top-k", "20",
               "--seed", "5", "--max-new-tokens", "12", "--json")
    assert one["result"]["text"] == alone[1] and alone[1], (one["result"]["text"], alone)


def test_beams_over_prompts_search_the_left_padded_batch(ckpt):
    from skiff.jobs import submit

    root, ref, tok, ids, mask = ckpt
    want = _theirs(ref, tok, ids, mask, 10, num_beams=3, do_sample=False)
    assert want != _theirs(ref, tok, ids, mask, 10, do_sample=False)  # premise
    job, _ = submit("chat", f"{root / 'ckpt'} --prompts {root / 'p.txt'} --num-beams 3 "
                            "--max-new-tokens 10")
    assert job.wait(120) and job.status == "done", job.error
    assert [r["text"] for r in job.result["replies"]] == want
    logs = str(job.logs)
    assert "3 prompts answered as one batch (beam search over 3 beams)" in logs, logs
    assert "prompt 1 of 3" not in logs


def test_answer_text_decodes_without_special_tokens_as_transformers(ckpt):
    """A byte piece, a special token, a byte piece (a sampled answer of the batch above
    made them): transformers' ``decode(skip_special_tokens=True)`` decodes the two bytes
    together (``"��"``, no UTF-8 character); skiff decoded the special token's text and
    deleted it afterwards, leaving ``"�b"``."""
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.chat_reply import _reply

    root, ref, tok, ids, mask = ckpt
    gen = tok.convert_tokens_to_ids(["ith", "<0xA2>", "<|end_of_sentence|>", "<0x62>"])
    want = tok.decode(gen, skip_special_tokens=True)
    assert want != tok.decode(gen).replace("<|end_of_sentence|>", "")  # premise
    model = from_pretrained(root / "ckpt")
    got = _reply(model, model.tokenizer, gen, ids[0].tolist(), {2}, None, False, 1.0, None)
    assert got.text == want and got.tokens == 4


def test_a_stop_string_that_ends_the_answer_is_said(ckpt):
    """A stop string transformers' ``StopStringCriteria`` meets in the first new token's
    piece (``"▁sm"``: its leading space, which decoding the answer alone drops): the
    answer stopped there, and the reply said ``stop: "length"`` (its text was not cut)."""
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.chat_reply import _reply

    root, ref, tok, ids, mask = ckpt
    prompt = ids[0][mask[0] == 1].tolist()
    gen = tok.convert_tokens_to_ids(["▁sm"])
    crit = transformers.StopStringCriteria(tok, [" "])
    assert bool(crit(torch.tensor([prompt + gen]), None)[0])  # transformers stops here
    model = from_pretrained(root / "ckpt")
    got = _reply(model, model.tokenizer, gen, prompt, {2}, [" "], False, 1.0, None, limit=4)
    assert got.stop == "stop string" and got.tokens == 1
    full = _reply(model, model.tokenizer, gen * 4, prompt, {2}, [" "], False, 1.0, None,
                  limit=4)
    assert full.stop == "stop string"  # cut in the text: as before


def test_question_rows_alone_score_multiple_choice_as_transformers(ckpt, tmp_path):
    """``--eval FILE`` rows ``{"prompt", "choices", "answer": INDEX}`` (lm-eval's / MMLU's
    multiple-choice rows, no conversation or text to score a loss on) were refused ("has
    neither 'messages' nor 'text' ..."); they are scored by choice accuracy (a
    ``{"prompt", "answer"}`` row stays refused: test_ernie_eval.py). Oracle:
    transformers' log-likelihood of each choice's tokens after the prompt, summed."""
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.evaluate import HeldOut, read_heldout

    root, ref, tok, ids, mask = ckpt
    rows = [{"prompt": "Two plus two is", "choices": [" four", " five", " a dog"],
             "answer": a} for a in range(3)]
    rows += [{"prompt": "The sea is", "choices": [" calm", " loud"], "answer": 1}]
    (tmp_path / "held.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def loglik(prompt, choice):
        p = tok(prompt, add_special_tokens=False).input_ids
        c = tok(prompt + choice, add_special_tokens=False).input_ids
        with torch.no_grad():
            lp = ref(torch.tensor([c])).logits.log_softmax(-1)[0]
        return sum(float(lp[i - 1, c[i]]) for i in range(len(p), len(c)))

    right = [max(range(len(r["choices"])), key=lambda i: loglik(r["prompt"], r["choices"][i]))
             == r["answer"] for r in rows if "choices" in r]
    model = from_pretrained(root / "ckpt")
    got = HeldOut(read_heldout(tmp_path / "held.jsonl"), model.tokenizer)(model)
    assert got["eval_choice_accuracy"] == pytest.approx(sum(right) / len(right))
    assert 0 < sum(right) < len(right)  # premise: a score that can be wrong both ways
    assert set(got) == {"eval_choice_accuracy"}  # no loss tokens, no exact match


def test_prompts_over_the_context_are_named(ckpt):
    """``--prompts FILE`` with a prompt too long for the model's context said "the longest
    prompt is N tokens", not which line: now each prompt over it is named, with its length
    (transformers' tokenizer's count of the rendered prompt)."""
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.chat_reply import batch_replies

    root, ref, tok, ids, mask = ckpt
    lengths = mask.sum(1).tolist()
    model = from_pretrained(root / "ckpt")
    model.config.max_position_embeddings = sorted(lengths)[1] + 5  # the longest is over
    longest = lengths.index(max(lengths)) + 1
    with pytest.raises(ValueError, match=rf"prompt {longest} \({max(lengths)} tokens\) of 3: "
                                         r"with 5 new tokens, over the model's context"):
        batch_replies(model, ASKED, max_new_tokens=5)
