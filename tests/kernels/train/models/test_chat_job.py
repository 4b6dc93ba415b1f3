"""Answers from a cell and from the terminal: ``%chat DIR "prompt"``, ``%%chat DIR`` and
``python -m skiff generate DIR --prompt ... --json`` give the text ``model.generate`` gives
on the same prompt (a tiny checkpoint with a SentencePiece tokenizer), streamed into the
job's events while it is written; the thinking kept apart from the answer."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.chat import opens_thinking, split_thinking
from skiff.kernels.train.models.chat_reply import reply, reply_html

from .ernie_reference import make_sentencepiece_checkpoint


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chat") / "ckpt"
    make_sentencepiece_checkpoint(folder, seed=6)
    return folder, from_pretrained(folder)


def _expected(model, prompt, n, chat=True):
    """What model.generate answers, decoded and split by hand."""
    tok = model.tokenizer
    inside = False  # the template's generation prompt leaves <think> open: thinking first
    if chat:
        ids = np.asarray(tok.apply_chat_template([{"role": "user", "content": prompt}],
                                                 add_generation_prompt=True, tokenize=True,
                                                 return_dict=False))
        inside = opens_thinking(tok.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True))
    else:
        ids = tok.encode(prompt)
    out = model.generate(ids[None], max_new_tokens=n)[0, len(ids):].tolist()
    eos = model.generation_config.get("eos_token_id", model.config.eos_token_id)
    if out and out[-1] == eos:
        out = out[:-1]
    return split_thinking(tok.decode(out), inside=inside), len(ids)


def test_reply_is_what_generate_gives(ckpt):
    folder, model = ckpt
    (thinking, answer), n_prompt = _expected(model, "What is two plus two?", 12)
    seen = []
    r = reply(model, "What is two plus two?", max_new_tokens=12,
              on_text=lambda t, a, n: seen.append((t, a, n)))
    assert (r.thinking, r.text) == (thinking, answer)
    assert r.prompt_tokens == n_prompt and r.tokens == len(seen) > 0
    assert seen[-1][:2] == (thinking, answer)  # the stream ends with the answer
    with pytest.raises(ValueError, match="exceeds the model's context"):
        reply(model, "hello " * 10, max_new_tokens=model.config.max_position_embeddings)


def test_chat_magic_and_cli_give_the_same_text(ckpt):
    from IPython.core.interactiveshell import InteractiveShell

    from skiff.cli import main

    folder, model = ckpt
    prompt = "Hello world, hello skiff!"
    (thinking, answer), _ = _expected(model, prompt, 10)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic("chat", f'{folder} "{prompt}" --max-new-tokens 10 --wait')
    assert job.status == "done", job.error
    assert (job.result["thinking"], job.result["text"]) == (thinking, answer)
    assert job.result["tokens"] == 10 and job.result["tokens_per_s"] > 0
    streamed = [e for e in job.events() if e["type"] == "info" and "text" in e]
    assert len(streamed) >= 2 and streamed[-1]["text"] == answer  # as it came
    assert any(e["type"] == "progress" and e.get("unit") == "token" for e in job.events())
    cell = shell.run_cell_magic("chat", f"{folder} --max-new-tokens 10 --wait", prompt + "\n")
    assert cell.result["text"] == answer

    # a model held in a notebook variable answers too
    shell.user_ns["m"] = model
    held = shell.run_line_magic("chat", f'm "{prompt}" --max-new-tokens 10 --wait')
    assert held.result["text"] == answer and held.value.text == answer

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["generate", str(folder), "--prompt", prompt, "--chat",
                     "--max-new-tokens", "10", "--json"])
    assert code == 0
    doc = json.loads(out.getvalue())["result"]
    assert (doc["thinking"], doc["text"]) == (thinking, answer)
    assert doc["tokens"] == 10 and doc["tokens_per_s"] > 0

    # generate continues plain text by default
    (_, plain), _ = _expected(model, "The quick brown", 6, chat=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["generate", str(folder), "The quick brown", "--max-new-tokens", "6",
                     "--json"]) == 0
    assert json.loads(out.getvalue())["result"]["text"] == plain


def test_bad_lines_are_one_clear_error(ckpt, tmp_path):
    from skiff.cli import main

    folder, _ = ckpt
    for argv, words in [(["chat", str(tmp_path / "nope"), "hi"], "no such folder"),
                        (["chat", str(folder)], "give a prompt: chat DIR"),
                        # the prompt given without a checkpoint (round 22: "give a prompt")
                        (["chat", "hello there"], "'hello there' is no checkpoint folder: the "
                                                  "checkpoint comes first"),
                        (["chat", str(folder), "hi", "--top-k", "3"], "--temperature"),
                        (["chat", str(folder), "hi", "--top-p", "1.5", "--temperature", "1"],
                         "--top-p")]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(argv) == 2
        assert words in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1


def test_thinking_shown_collapsed_while_written():
    from skiff.jobs.state import JobState
    from skiff.kinds import KINDS

    state = JobState()
    state.apply({"type": "info", "thinking": "2 + 2 is 4", "text": "Fo", "tokens": 7})
    live = KINDS["chat"].live_html(None, state)
    assert "<details" in live and "2 + 2 is 4" in live.split("</details>")[0]
    assert "Fo" in live.split("</details>")[1]
    html = reply_html("", "<b>x</b>")
    assert "<details" not in html and "&lt;b&gt;" in html


def test_chat_form_renders_the_magic_line(ckpt):
    from skiff.widgets.panels import chat_form

    folder, _ = ckpt
    form = chat_form()
    line = form.command.render({"model": str(folder), "prompt": "hi there",
                                "max_new_tokens": 5}, style="magic")
    assert line.startswith(f"%chat {folder}") and "hi there" in line


def test_chat_loss_equals_torch_on_the_assistant_tokens(ckpt, tmp_path):
    """The held-out loss the notebook reports: NLL of the assistant's tokens only, against
    torch on the transformers model (the template marks what the assistant wrote)."""
    import torch
    import transformers

    from skiff.kernels.train.models.evaluate import EvalTable, chat_loss

    folder = tmp_path / "plain"  # a template whose prompt is a prefix of the conversation
    make_sentencepiece_checkpoint(folder, seed=2, chat_template=(
        "{%- for m in messages %}{{ m['role'] + ': ' + m['content'] }}"
        "{%- if m['role'] == 'assistant' %}{{ eos_token }}{%- endif %}\n{%- endfor %}"
        "{%- if add_generation_prompt %}assistant:{%- endif %}"))
    model = from_pretrained(folder)
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    rows = [{"messages": [{"role": "user", "content": "What is two plus two?"},
                          {"role": "assistant", "content": "Four."}]},
            {"messages": [{"role": "user", "content": "Hello world"},
                          {"role": "assistant", "content": "Hello skiff!"}]}]
    total, count = 0.0, 0
    for row in rows:
        prompt = tok.apply_chat_template(row["messages"][:1], add_generation_prompt=True,
                                         tokenize=True, return_dict=False)
        full = tok.apply_chat_template(row["messages"], tokenize=True, return_dict=False)
        assert list(full[:len(prompt)]) == list(prompt)
        with torch.no_grad():
            logp = torch.log_softmax(ref(torch.tensor([full])).logits[0].double(), -1)
        at = range(len(prompt) - 1, len(full) - 1)
        total -= sum(float(logp[i, full[i + 1]]) for i in at)
        count += len(at)
    got = chat_loss(model, rows)
    assert got["tokens"] == count
    assert abs(got["loss"] - total / count) < 1e-5 * abs(total / count)
    table = EvalTable({"a": got, "b": {"loss": 1.0}})
    assert "loss" in repr(table) and "<table" in table._repr_html_()
