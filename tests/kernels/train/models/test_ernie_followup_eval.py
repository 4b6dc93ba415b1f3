"""``--eval FILE`` reads the formats training reads (follow-up of the round 25 probe): the
same held-out pairs as JSONL conversations, JSONL or ``.json`` prompt/completion (or
response) rows, a CSV or a TSV give the same held-out loss, equal to torch's NLL of the
assistant's tokens on the transformers model (those its ``return_assistant_tokens_mask``
marks); texts as a text file, ``{"text"}`` rows or a CSV text column give torch's NLL of
their tokens; other files are one line, from the CLI before any run folder. Before, only
JSONL of ``{"messages"}``/``{"text"}`` rows was read."""

from __future__ import annotations

import contextlib
import csv
import io
import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.evaluate import HeldOut, read_heldout

from .ernie_reference import LINES, add_tokenizer, make_checkpoint, torch, transformers

TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['role'] == "
            "'assistant' %}{% generation %}{{ m['content'] }}</s>{% endgeneration %}{% else %}"
            "{{ m['content'] }}</s>{% endif %}{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
PAIRS = [("What is two plus two?", "Four."), ("Hello world, hello", "skiff! The quick fox."),
         ("ERNIE models answer", "questions.")]
TEXTS = ["The quick brown fox jumps over the lazy dog. Hello world, hello skiff!",
         "ERNIE models answer questions. What is two plus two?"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ck")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    add_tokenizer(folder, "\n".join(LINES + ["<|im_start|>"]), ref.config.vocab_size)
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "</s>", "bos_token": "<s>",
        "pad_token": "<pad>", "unk_token": "<unk>", "chat_template": TEMPLATE}))
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    return ref, tok, from_pretrained(folder), folder


def _torch_nll(ref, ids, scored):
    """Summed NLL of the tokens ``ids[t]`` for ``t`` in ``scored`` and how many."""
    with torch.no_grad():
        logp = torch.log_softmax(ref(torch.tensor([ids])).logits[0].double(), -1).numpy()
    return -sum(logp[t - 1, ids[t]] for t in scored), len(scored)


def _write(path, rows):
    suffix = path.suffix
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    elif suffix == ".json":
        path.write_text(json.dumps(rows, ensure_ascii=False))
    else:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, delimiter="\t" if suffix == ".tsv" else ",")
            writer.writerow(list(rows[0]))
            writer.writerows([list(r.values()) for r in rows])
    return path


PAIR_FILES = {
    "messages.jsonl": lambda p, a: {"messages": [{"role": "user", "content": p},
                                                 {"role": "assistant", "content": a}]},
    "pairs.jsonl": lambda p, a: {"prompt": p, "completion": a},
    "pairs.json": lambda p, a: {"prompt": p, "response": a},
    "pairs.csv": lambda p, a: {"prompt": p, "response": a},
    "pairs.tsv": lambda p, a: {"question": p, "answer": a},
}


def test_pairs_in_every_format_equal_torch(setup, tmp_path):
    ref, tok, model, _ = setup
    total = count = 0.0
    for p, a in PAIRS:
        out = tok.apply_chat_template([{"role": "user", "content": p},
                                       {"role": "assistant", "content": a}], tokenize=True,
                                      return_dict=True, return_assistant_tokens_mask=True)
        ids, mask = out["input_ids"], out["assistant_masks"]
        nll, n = _torch_nll(ref, ids, [t for t in range(1, len(ids)) if mask[t]])
        total, count = total + nll, count + n
    want = total / count
    # exact match: transformers' greedy answer to the first prompt (through the template)
    prompt = tok.apply_chat_template([{"role": "user", "content": PAIRS[0][0]}],
                                     add_generation_prompt=True, return_tensors="pt")
    with torch.no_grad():
        out = ref.generate(**prompt, max_new_tokens=32, do_sample=False)
    answer = tok.decode(out[0, prompt["input_ids"].shape[1]:], skip_special_tokens=True)
    answers = [answer.strip().split("\n")[0].strip(), "no", "no"]
    for name, row in PAIR_FILES.items():
        path = _write(tmp_path / name, [row(p, a) for p, a in PAIRS])
        got = HeldOut.from_file(path, model.tokenizer)(model)
        assert abs(got["eval_loss"] - want) < 1e-5 * want, name
        assert got["eval_perplexity"] == pytest.approx(np.exp(want), rel=1e-5)
        if name.endswith("jsonl"):
            rows = [dict(row(p, a), answer=x) for (p, a), x in zip(PAIRS, answers)]
            path = _write(tmp_path / name, rows)
            assert HeldOut.from_file(path, model.tokenizer)(model)["eval_exact_match"] == \
                pytest.approx(1 / 3), name


def test_texts_in_every_format_equal_torch(setup, tmp_path):
    ref, tok, model, _ = setup
    encoded = [tok(t)["input_ids"] for t in TEXTS]
    sums = [_torch_nll(ref, ids, range(1, len(ids))) for ids in encoded]
    both = sum(s for s, _ in sums) / sum(n for _, n in sums)
    files = {"texts.jsonl": [{"text": t} for t in TEXTS], "texts.csv": [
        {"id": str(i), "text": t} for i, t in enumerate(TEXTS)]}
    for name, rows in files.items():
        got = HeldOut.from_file(_write(tmp_path / name, rows), model.tokenizer)(model)
        assert abs(got["eval_loss"] - both) < 1e-5 * both, name
    (tmp_path / "one.txt").write_text(TEXTS[0])
    got = HeldOut.from_file(tmp_path / "one.txt", model.tokenizer)(model)
    assert abs(got["eval_loss"] - sums[0][0] / sums[0][1]) < 1e-5 * both


def test_other_files_are_one_line(setup, tmp_path):
    _, _, _, folder = setup
    (tmp_path / "held.parquet").write_bytes(b"PAR1\x00\x01")
    # Alpaca rows are read since round 34 (h6); one without its "output" is not
    (tmp_path / "alpaca.json").write_text(json.dumps([{"instruction": "a", "answer": "b"}]))
    (tmp_path / "cols.csv").write_text("a,b\n1,2\n")
    cases = {"held.parquet": "does not read .parquet files for evaluation",
             "alpaca.json": "row 1 has neither 'messages' nor 'text'",
             "cols.csv": "columns a, b"}
    for name, words in cases.items():
        with pytest.raises(ValueError, match=words):
            read_heldout(tmp_path / name)
    from skiff.cli import main

    data = _write(tmp_path / "train.jsonl", [{"prompt": p, "completion": a} for p, a in PAIRS])
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["train", "ernie", "--data", str(data), "--from", str(folder), "--eval",
                     str(tmp_path / "held.parquet"), "--steps", "1"])
    assert code == 2 and len(err.getvalue().strip().splitlines()) == 1
    assert "--eval" in err.getvalue() and ".parquet" in err.getvalue()


def test_train_evaluates_a_csv(setup, tmp_path):
    """``train ernie --eval held.csv`` through the CLI: step 0's held-out loss is the base
    model's, as ``HeldOut`` computes it on the checkpoint."""
    _, _, model, folder = setup
    from skiff.cli import main

    data = _write(tmp_path / "train.jsonl", [{"prompt": p, "completion": a} for p, a in PAIRS])
    held = _write(tmp_path / "held.csv", [{"prompt": p, "response": a} for p, a in PAIRS])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["train", "ernie", "--data", str(data), "--from", str(folder), "--eval",
                     str(held), "--eval-every", "1", "--steps", "1", "--json"])
    assert code == 0, out.getvalue()
    rows = json.loads(out.getvalue())["result"]["evaluation"]
    assert [r["step"] for r in rows] == [0, 1]
    want = HeldOut.from_file(held, model.tokenizer)(model)["eval_loss"]
    assert rows[0]["eval_loss"] == pytest.approx(want, rel=1e-6)
