"""A conversation carried on turn by turn, and ``--no-repeat-ngram-size`` (round 44, h6).

``%chat`` / ``python -m skiff chat`` answered one message: a second turn could not see the
first (no way to give the earlier messages), and transformers' ``no_repeat_ngram_size``, a
common option of small models' generation, was "unrecognized arguments". Now ``--history``
takes the earlier turns (a JSON file of messages, or the first turn's ``--json`` output,
whose ``messages`` end with its answer; in a notebook a variable holding a list, a reply or
the first turn's ``%chat`` job),
and ``--no-repeat-ngram-size N`` goes to ``generate``. Oracle: transformers' model of the
same checkpoint, its tokenizer's ``apply_chat_template`` of the whole conversation and its
greedy ``generate`` (the answer decoded without special tokens, as its chat pipeline).
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from .ernie_reference import make_sentencepiece_checkpoint, torch

PLAIN = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] }}"
         "<|end_of_sentence|>{{ '\n' }}{%- endfor %}"
         "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("r44h6-history") / "ckpt"
    ref, tok = make_sentencepiece_checkpoint(folder, seed=6, chat_template=PLAIN)
    return folder, ref.eval(), tok


def _theirs(ref, tok, messages, n, **kw):
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                  return_dict=False, return_tensors="pt")
    with torch.no_grad():
        out = ref.generate(ids, max_new_tokens=n, do_sample=False, **kw)[0, ids.shape[1]:]
    return tok.decode(out, skip_special_tokens=True)


def _cli(*args):
    from skiff.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(list(args)) == 0
    return json.loads(out.getvalue())


def test_second_turn_reads_the_first(ckpt, tmp_path):
    folder, ref, tok = ckpt
    q1, q2 = "What is two plus two?", "And three plus three?"
    first = _theirs(ref, tok, [{"role": "user", "content": q1}], 8)
    doc = _cli("chat", str(folder), q1, "--max-new-tokens", "8", "--json")
    assert doc["result"]["text"] == first
    turns = [{"role": "user", "content": q1}, {"role": "assistant", "content": first}]
    assert doc["result"]["messages"] == turns
    (tmp_path / "turn1.json").write_text(json.dumps(doc))
    want = _theirs(ref, tok, turns + [{"role": "user", "content": q2}], 12,
                   no_repeat_ngram_size=2)
    assert want != _theirs(ref, tok, turns + [{"role": "user", "content": q2}], 12)  # premise
    two = _cli("chat", str(folder), q2, "--history", str(tmp_path / "turn1.json"),
               "--no-repeat-ngram-size", "2", "--max-new-tokens", "12", "--json")["result"]
    assert two["text"] == want
    assert two["messages"] == turns + [{"role": "user", "content": q2},
                                       {"role": "assistant", "content": want}]

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()  # a notebook: the history a variable holds
    shell.run_line_magic("load_ext", "skiff")
    shell.user_ns["turn1"] = shell.run_line_magic("chat", f'{folder} "{q1}" '
                                                          "--max-new-tokens 8 --wait")
    job = shell.run_line_magic("chat", f'{folder} "{q2}" --history turn1 '
                                       "--no-repeat-ngram-size 2 --max-new-tokens 12 --wait")
    assert job.status == "done", job.error
    assert job.result["text"] == want

    with pytest.raises(ValueError, match="no such file"):
        from skiff.kinds.chat import KIND

        KIND.to_config({"model": str(folder), "prompt": "hi",
                        "history": str(tmp_path / "none.json")})
