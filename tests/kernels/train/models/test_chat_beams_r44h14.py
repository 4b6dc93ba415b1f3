"""``--num-beams N`` on ``chat`` / ``generate`` (round 44, h14).

transformers' beam search (``generate(..., num_beams=N)``) is a common choice for a small
model's answers; skiff's ``model.generate`` took it since round 26, but ``%chat`` /
``python -m skiff chat|generate`` said "unrecognized arguments: --num-beams". Beams cannot
be streamed (transformers refuses a streamer with them), so the answer comes whole at the
end, and the job's log says so. Oracle: transformers' model of the same checkpoint, its
``apply_chat_template`` and ``generate(num_beams=N)``, decoded without special tokens (as
its chat pipeline)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from .ernie_reference import make_sentencepiece_checkpoint, torch

PLAIN = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] }}"
         "<|end_of_sentence|>{{ '\n' }}{%- endfor %}"
         "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
Q = "Hello world"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("r44h14-beams") / "ckpt"
    ref, tok = make_sentencepiece_checkpoint(folder, seed=6, chat_template=PLAIN)
    return folder, ref.eval(), tok


def _theirs(ref, tok, ids, n, **kw):
    with torch.no_grad():
        out = ref.generate(ids, max_new_tokens=n, **kw)[0, ids.shape[1]:]
    return tok.decode(out, skip_special_tokens=True)


def _cli(*args):
    from skiff.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(list(args)) == 0, err.getvalue()[-400:]
    return json.loads(out.getvalue())


def test_chat_and_generate_take_num_beams(ckpt):
    folder, ref, tok = ckpt
    ids = tok.apply_chat_template([{"role": "user", "content": Q}], add_generation_prompt=True,
                                  tokenize=True, return_dict=False, return_tensors="pt")
    want = _theirs(ref, tok, ids, 10, num_beams=3, do_sample=False)
    assert want != _theirs(ref, tok, ids, 10, do_sample=False)  # premise: beams differ
    doc = _cli("chat", str(folder), Q, "--num-beams", "3", "--max-new-tokens", "10", "--json")
    assert doc["result"]["text"] == want
    assert doc["result"]["messages"][-1] == {"role": "assistant", "content": want}

    plain = tok("Hello world", return_tensors="pt").input_ids
    want = _theirs(ref, tok, plain, 10, num_beams=2, do_sample=False,
                   no_repeat_ngram_size=2)
    assert want != _theirs(ref, tok, plain, 10, do_sample=False, no_repeat_ngram_size=2)
    got = _cli("generate", str(folder), "Hello world", "--num-beams", "2",
               "--no-repeat-ngram-size", "2", "--max-new-tokens", "10", "--json")["result"]
    assert got["text"] == want

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()  # a notebook: the job's log says why no stream
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic("chat", f'{folder} "{Q}" --num-beams 3 --max-new-tokens 10 '
                                       "--wait")
    assert job.status == "done", job.error
    assert job.result["text"] == doc["result"]["text"]
    assert "beams are not streamed" in str(job.logs), str(job.logs)


def test_a_batch_of_prompts_from_a_file(ckpt, tmp_path):
    """``generate DIR --prompts FILE --json`` (round 44 h14: "unrecognized arguments"; a
    transformers user hands its pipeline a list): one reply per prompt, each equal to
    transformers' greedy answer of that prompt alone; a JSONL file for ``chat``."""
    folder, ref, tok = ckpt
    asked = ["Hello world", "The quick brown fox", "What is two plus two?"]
    (tmp_path / "p.txt").write_text("\n".join(asked[:2]) + "\n\n")
    got = _cli("generate", str(folder), "--prompts", str(tmp_path / "p.txt"),
               "--max-new-tokens", "6", "--json")["result"]
    assert [r["prompt"] for r in got["replies"]] == asked[:2]
    for one, q in zip(got["replies"], asked[:2]):
        assert one["text"] == _theirs(ref, tok, tok(q, return_tensors="pt").input_ids, 6,
                                      do_sample=False)
    assert got["tokens"] == sum(r["tokens"] for r in got["replies"])
    (tmp_path / "p.jsonl").write_text(json.dumps(asked[2]) + "\n"
                                      + json.dumps({"prompt": asked[0]}) + "\n")
    got = _cli("chat", str(folder), "--prompts", str(tmp_path / "p.jsonl"),
               "--max-new-tokens", "6", "--json")["result"]["replies"]
    for one, q in zip(got, [asked[2], asked[0]]):
        ids = tok.apply_chat_template([{"role": "user", "content": q}],
                                      add_generation_prompt=True, tokenize=True,
                                      return_dict=False, return_tensors="pt")
        assert one["text"] == _theirs(ref, tok, ids, 6, do_sample=False)

    from skiff.kinds.chat import KIND

    (tmp_path / "bad.jsonl").write_text('"fine"\n{"text": "no prompt"}\n')
    with pytest.raises(ValueError, match="line 2"):
        KIND.to_config({"model": str(folder), "prompts": str(tmp_path / "bad.jsonl")})
    with pytest.raises(ValueError, match="not both"):
        KIND.to_config({"model": str(folder), "prompt": "hi",
                        "prompts": str(tmp_path / "p.txt")})
