"""A prompt past the model's context refused before any job (round 45, h16): ``chat DIR
"long prompt"`` failed inside the job, after its run folder was made. Now the checkpoint's
``config.json`` and tokenizer (no weights) measure each prompt as the job renders it; the
count the line names is transformers' (its tokenizer's chat template), and the boundary
is exact: ``limit - n`` new tokens pass, one more is refused."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil

import pytest

from skiff.kinds.chat import GENERATE_KIND, KIND

from .ernie_reference import make_sentencepiece_checkpoint

LIMIT = 96
LONG = "hello world " * 12


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fits45") / "ckpt"
    _, tok = make_sentencepiece_checkpoint(folder, seed=3)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(dict(cfg, max_position_embeddings=LIMIT)))
    return folder, tok


def _chat_tokens(tok, prompt):
    return len(tok.apply_chat_template([{"role": "user", "content": prompt}],
                                       add_generation_prompt=True, tokenize=True,
                                       return_dict=False))


def test_prompt_past_context_refused_at_submit_with_both_lengths(ckpt, runs_dir):
    from skiff.cli import main

    folder, tok = ckpt
    n = _chat_tokens(tok, LONG)  # transformers' count of the rendered prompt
    assert 0 < n < LIMIT
    fits = KIND.to_config({"model": str(folder), "prompt": LONG,
                           "max_new_tokens": LIMIT - n})
    assert fits["max_new_tokens"] == LIMIT - n  # exactly the context: taken
    with pytest.raises(ValueError) as err:
        KIND.to_config({"model": str(folder), "prompt": LONG, "max_new_tokens": LIMIT - n + 1})
    line = str(err.value)
    assert "\n" not in line and "'hello world hello world" in line
    assert f"is {n} tokens" in line and f"{LIMIT - n + 1} new tokens" in line
    assert f"context of {LIMIT} positions" in line and f"at most {LIMIT - n} new" in line
    # the default count (256) past a small context: said so, before any job
    plain = len(tok.encode("hi"))
    with pytest.raises(ValueError, match=rf"is {plain} tokens; with 256 new tokens "
                                         r"\(the default\)"):
        GENERATE_KIND.to_config({"model": str(folder), "prompt": "hi"})
    out, errs = io.StringIO(), io.StringIO()  # the CLI: one line, no run folder
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(errs):
        code = main(["chat", str(folder), LONG, "--max-new-tokens", str(LIMIT - n + 1)])
    assert code != 0 and f"is {n} tokens" in errs.getvalue()
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_prompts_file_and_history_measured_as_the_job_renders(ckpt, tmp_path):
    folder, tok = ckpt
    batch = tmp_path / "p.txt"
    batch.write_text(f"hi\n{LONG}\n")
    n = len(tok.encode(LONG.rstrip("\n")))  # generate: the plain text
    with pytest.raises(ValueError) as err:
        GENERATE_KIND.to_config({"model": str(folder), "prompts": str(batch),
                                 "max_new_tokens": LIMIT - n + 1})
    assert re.match(rf"prompt 2 'hello world[^']*' \({n} tokens\) of 2: with", str(err.value))
    GENERATE_KIND.to_config({"model": str(folder), "prompts": str(batch),
                             "max_new_tokens": LIMIT - n})
    history = tmp_path / "h.json"  # earlier turns count: transformers' rendering of them all
    turns = [{"role": "user", "content": "hello world"},
             {"role": "assistant", "content": "hello hello world"}]
    history.write_text(json.dumps(turns))
    whole = len(tok.apply_chat_template(turns + [{"role": "user", "content": "hi"}],
                                        add_generation_prompt=True, tokenize=True,
                                        return_dict=False))
    KIND.to_config({"model": str(folder), "prompt": "hi", "history": str(history),
                    "max_new_tokens": LIMIT - whole})
    with pytest.raises(ValueError, match=rf"is {whole} tokens as the chat template"):
        KIND.to_config({"model": str(folder), "prompt": "hi", "history": str(history),
                        "max_new_tokens": LIMIT - whole + 1})


def test_checkpoint_without_tokenizer_refused_at_submit(ckpt, tmp_path):
    folder, _ = ckpt
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(folder / name, bare / name)
    with pytest.raises(ValueError, match="has no tokenizer"):
        KIND.to_config({"model": str(bare), "prompt": "hi", "max_new_tokens": 4})
    shutil.copy(folder / "tokenizer.model", bare / "tokenizer.model")  # no chat template:
    with pytest.raises(ValueError, match="has no chat template"):  # chat refused, as the job
        KIND.to_config({"model": str(bare), "prompt": "hi", "max_new_tokens": 4})
    assert GENERATE_KIND.to_config({"model": str(bare), "prompt": "hi",  # plain text: taken
                                    "max_new_tokens": 4})["chat"] is False


def test_notebook_model_prompt_past_context_refused_before_the_job(ckpt):
    """``%chat m "..."`` with a model held in a notebook variable: measured with its own
    tokenizer and context before the job (before: the job's thread failed)."""
    from skiff.kernels.train.models import from_pretrained

    folder, tok = ckpt
    model = from_pretrained(folder)
    n = _chat_tokens(tok, LONG)
    req = KIND.prepare({"model": "m", "prompt": LONG, "max_new_tokens": LIMIT - n},
                       user_ns={"m": model})
    assert req.config["max_new_tokens"] == LIMIT - n
    with pytest.raises(ValueError, match=rf"is {n} tokens as the chat template renders it; "
                                         rf"with {LIMIT - n + 1} new tokens"):
        KIND.prepare({"model": "m", "prompt": LONG, "max_new_tokens": LIMIT - n + 1},
                     user_ns={"m": model})


def test_adapter_folder_measured_with_its_base(ckpt, tmp_path):
    """A peft adapter folder (no config.json: its base's context and tokenizer); before, no
    length was checked for it at submit, not even ``--max-new-tokens`` alone."""
    folder, tok = ckpt
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps(
        {"base_model_name_or_path": str(folder), "peft_type": "LORA", "r": 2}))
    n = _chat_tokens(tok, LONG)
    with pytest.raises(ValueError, match=rf"is {n} tokens .* context of {LIMIT} positions"):
        KIND.to_config({"model": str(adapter), "prompt": LONG, "max_new_tokens": LIMIT - n + 1})
    assert KIND.to_config({"model": str(adapter), "prompt": LONG,
                           "max_new_tokens": LIMIT - n})["max_new_tokens"] == LIMIT - n
