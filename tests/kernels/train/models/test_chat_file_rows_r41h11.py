"""A user's own chat file for ``%train ernie`` (round 41, h11): its bad rows are one error
naming each by its line, before any run folder (a row without an assistant turn failed the
job after its folder was made; a role the template does not render trained without that
turn; only the first line that is not JSON was named); the rows a job does not train on
whole (left out by ``--block-size``, a thinking the template does not show) are said in
the job's summary, not only by ``repr``. Oracles: transformers' ``apply_chat_template`` of
the same rows (the text a wrong role leaves, the ids and assistant mask of kept rows)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from skiff.kernels.train.models.hf_checkpoint import load_tokenizer, read_training_rows

from .ernie_reference import make_sentencepiece_checkpoint

# ERNIE-4.5's template's shape: a turn of another role is skipped without a word
ERNIE_LIKE = (
    "{{- bos_token -}}{%- for m in messages -%}"
    "{%- if m['role'] == 'system' -%}{{- m['content'] + '\\n' -}}"
    "{%- elif m['role'] == 'user' -%}{{- 'User: ' + m['content'] + '\\n' -}}"
    "{%- elif m['role'] == 'assistant' -%}{{- 'Assistant: ' -}}{% generation %}"
    "{%- if m.get('reasoning_content') -%}"
    "{{- '<think>\\n' + m['reasoning_content'] + '\\n</think>\\n\\n' -}}{%- endif -%}"
    "{{- m['content'] + '<|end_of_sentence|>' -}}{% endgeneration %}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant: ' -}}{%- endif -%}")
NO_THINKING = ERNIE_LIKE.replace(
    "{%- if m.get('reasoning_content') -%}"
    "{{- '<think>\\n' + m['reasoning_content'] + '\\n</think>\\n\\n' -}}{%- endif -%}", "")


def _chat(i, long=False):
    return {"messages": [{"role": "system", "content": "Answer briefly."},
                         {"role": "user", "content": f"What is {i} plus {i}?" * (6 if long
                                                                                   else 1)},
                         {"role": "assistant", "content": f"{2 * i}.",
                          "thinking": f"{i} and {i} make {2 * i}"}]}


def _write(path, lines):
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n"
                            for x in lines))
    return path


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("r41h11") / "base"
    _, htok = make_sentencepiece_checkpoint(folder, chat_template=ERNIE_LIKE)
    CACHE["htok"] = htok  # transformers' tokenizer of it (the oracle), built once
    return folder


CACHE = {}


def test_bad_rows_are_one_error_naming_each_line_before_a_run_folder(ckpt, runs_dir,
                                                                      tmp_path):
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    human = {"messages": [{"role": "human", "content": "What is a skiff?"},
                          {"role": "assistant", "content": "A small boat."}]}
    data = _write(tmp_path / "mine.jsonl", [
        _chat(1), "", _chat(2),
        {"messages": [{"role": "user", "content": "no answer"}]},       # line 4
        _chat(3), human,                                                # line 6
        {"conversations": [{"from": "hooman", "value": "q"}, {"from": "gpt", "value": "a"}]},
        _chat(4)])
    # why a wrong role is refused: transformers renders the row without that turn
    htok = CACHE["htok"]
    assert "skiff" not in htok.apply_chat_template(human["messages"], tokenize=False)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    with pytest.raises(UsageError) as err:
        shell.run_line_magic("train", f"ernie {data} --from {ckpt} --lora-r 2 --steps 1")
    msg = str(err.value)
    for part in ("3 conversations cannot be trained on", "line 4: no assistant message",
                 "line 6: message 0 has role 'human' (meant 'user'?)",
                 "line 7: turn 0 is from 'hooman'", "the other 4 rows are fine"):
        assert part in msg, msg
    assert "\n" not in msg
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_every_line_that_is_not_json_is_named(tmp_path):
    data = _write(tmp_path / "broken.jsonl", [_chat(1), '{"messages": [', _chat(2), "",
                                              "{'single': 'quotes'}", _chat(3)])
    with pytest.raises(ValueError, match=r"2 lines are not JSON: line 2 \(.*\) \| line 5 "):
        read_training_rows(data)


def test_a_heldout_row_of_a_wrong_role_names_its_line(tmp_path):
    from skiff.kernels.train.models.evaluate import read_heldout

    held = _write(tmp_path / "held.jsonl", [_chat(1), "", {"messages": [
        {"role": "User", "content": "hi"}, {"role": "assistant", "content": "yo"}]}])
    with pytest.raises(ValueError, match=r"held.jsonl: line 3: message 0 has role 'User'"):
        read_heldout(held)


def test_rows_left_out_are_said_and_kept_rows_are_transformers(ckpt, tmp_path):
    from skiff.kernels.train.entry import build_from_config

    rows = [_chat(1), _chat(2, long=True), _chat(3), _chat(4, long=True), _chat(5)]
    data = _write(tmp_path / "mixed.jsonl", rows[:2] + [""] + rows[2:])
    htok = CACHE["htok"]

    def want(row):
        m = [dict(x, reasoning_content=x["thinking"]) if "thinking" in x else x
             for x in row["messages"]]
        enc = htok.apply_chat_template(m, tokenize=True, return_dict=True,
                                       return_assistant_tokens_mask=True)
        return np.array(enc["input_ids"]), np.array(enc["assistant_masks"]) == 1

    short = len(want(rows[0])[0])
    assert len(want(rows[1])[0]) > short + 40  # the long rows' answers lie past the block
    parts = build_from_config({"model": "ernie", "from": str(ckpt), "data": str(data),
                               "block_size": short + 2})
    ds = parts["dataset"]
    ds = getattr(ds, "dataset", ds)
    note = " ".join(parts["notes"])
    assert "2 of 5 conversations left out" in note and "(lines 2, 5)" in note, note
    assert "thinking" not in note  # this template shows it
    assert len(ds) == 3
    for (x, y), row in zip(ds.items, (rows[0], rows[2], rows[4])):
        ids, mask = want(row)
        np.testing.assert_array_equal(x, ids[:-1])
        np.testing.assert_array_equal(y, np.where(mask[1:], ids[1:], -100))


def test_a_thinking_the_template_does_not_show_is_said(ckpt, tmp_path):
    from skiff.kernels.train.models.chat import ChatDataset, ChatTemplate

    tok = load_tokenizer(ckpt)
    tok.chat_template = ChatTemplate(NO_THINKING, tok.chat_template.special_tokens)
    data = _write(tmp_path / "t.jsonl", [_chat(1), {"messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
        _chat(2)])
    ds = ChatDataset(read_training_rows(data)[1], tok, block_size=256)
    assert len(ds) == 3
    assert "does not show the thinking of 2 conversations (lines 1, 3)" in ds.read_note
    assert "thinking" not in (ChatDataset(read_training_rows(data)[1], load_tokenizer(ckpt),
                                          block_size=256).read_note or "")


def test_a_row_the_template_cannot_render_names_its_line(ckpt, tmp_path):
    from skiff.kernels.train.models.chat import ChatDataset

    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                          {"role": "assistant", "content": "yo"}]}
    htok = CACHE["htok"]
    with pytest.raises(TypeError):  # transformers' rendering of it fails the same way
        htok.apply_chat_template(parts["messages"], tokenize=False)
    data = _write(tmp_path / "p.jsonl", [_chat(1), "", parts])
    with pytest.raises(ValueError, match=r"p.jsonl: line 3: the checkpoint's chat template "
                                         r"cannot render .*TypeError.* as one string"):
        ChatDataset(read_training_rows(data)[1], load_tokenizer(ckpt), block_size=256,
                    source=str(data))


@pytest.mark.parametrize("n, share, ok", [(20, 0.01, False), (20, 0.05, True),
                                          (20, 0.98, False), (20, 0.95, True), (1, 0.5, False)])
def test_a_val_split_is_checked_against_the_conversations(tmp_path, n, share, ok):
    from skiff.kernels.train.data import split_off
    from skiff.kernels.train.models.hf_checkpoint import check_val_split

    kind, rows = read_training_rows(_write(tmp_path / "c.jsonl", [_chat(i) for i in range(n)]))
    try:  # the Trainer's own split of as many items: the check agrees with it
        split_off(list(range(n)), share)
        fits = True
    except ValueError:
        fits = False
    assert fits == ok
    if ok:
        check_val_split(kind, rows, share)
        return
    with pytest.raises(ValueError, match=f"--val-split {share:g}.*conversation"):
        check_val_split(kind, rows, share)
    if n > 1:  # the shares it names do split
        lo, hi = (float(x) for x in re.findall(r"from ([\d.]+) .* to ([\d.]+) ",
                                                str(pytest.raises(ValueError, check_val_split,
                                                                  kind, rows, share).value))[0])
        for good in (lo, hi):
            check_val_split(kind, rows, good)
            split_off(list(range(n)), good)


def test_a_val_split_too_small_is_refused_before_a_run_folder(ckpt, runs_dir, tmp_path):
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    data = _write(tmp_path / "c.jsonl", [_chat(i) for i in range(20)])
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    with pytest.raises(UsageError, match=r"--val-split 0.01 of 20 conversations holds out 0; "
                                         r"give a share from 0.05"):
        shell.run_line_magic("train", f"ernie {data} --from {ckpt} --lora-r 2 --steps 1 "
                                      "--val-split 0.01")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


# round 42 (h6): the rows a template cannot render are found with the other row checks,
# before any run folder (`read_training_rows(..., template_from=FOLDER)`, the train kind's
# check with its --from), each named by its line; transformers fails the same rows
STRICT = ERNIE_LIKE.replace(
    "{%- if m['role'] == 'system' -%}",
    "{%- if m['role'] == 'system' and not loop.first -%}"
    "{{- raise_exception('a system message comes first') -}}"
    "{%- elif m['role'] == 'system' -%}")


def test_rows_the_template_cannot_render_are_one_error_before_the_job(ckpt, tmp_path):
    import shutil

    import jinja2

    from skiff.kernels.train.models.chat import ChatDataset

    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                          {"role": "assistant", "content": "yo"}]}
    late = {"messages": [{"role": "user", "content": "hi"},
                         {"role": "system", "content": "be brief"},
                         {"role": "assistant", "content": "yo"}]}
    strict = tmp_path / "strict"
    shutil.copytree(ckpt, strict)
    (strict / "chat_template.jinja").write_text(STRICT)
    htok = CACHE["htok"]
    for row in (parts, late):  # transformers cannot render either row with this template
        with pytest.raises((TypeError, jinja2.TemplateError)):
            htok.apply_chat_template(row["messages"], chat_template=STRICT, tokenize=False)
    data = _write(tmp_path / "p.jsonl", [_chat(1), "", parts, _chat(2), late, _chat(3)])
    kind, rows = read_training_rows(data)  # without a checkpoint: its template is not known
    assert kind == "chat" and len(rows) == 5
    with pytest.raises(ValueError) as err:
        read_training_rows(data, template_from=strict)
    msg = str(err.value)
    for part in ("p.jsonl: the checkpoint's chat template cannot render 2 conversations",
                 "line 3 (TypeError", "line 5 (TemplateError: a system message comes first)",
                 "give each message's content as one string", "the other 3 rows render"):
        assert part in msg, msg
    # the job fails on the first of them (what the check spares a user: a run folder)
    tok = load_tokenizer(strict)
    with pytest.raises(ValueError, match="line 3: the checkpoint's chat template"):
        ChatDataset(rows, tok, block_size=256, source=str(data))
    # an adapter folder trained from: its base's template
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps(
        {"base_model_name_or_path": str(strict), "peft_type": "LORA"}))
    with pytest.raises(ValueError, match="cannot render 2 conversations"):
        read_training_rows(data, template_from=adapter)
    good = _write(tmp_path / "g.jsonl", [_chat(1), late])
    with pytest.raises(ValueError, match=r"cannot render 1 conversation: line 2 .* fix or "
                                         r"delete it\)"):
        read_training_rows(good, template_from=strict)
    assert read_training_rows(good, template_from=ckpt)[0] == "chat"  # it renders there


def test_a_row_the_template_cannot_render_is_refused_before_a_run_folder(ckpt, runs_dir,
                                                                          tmp_path):
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                          {"role": "assistant", "content": "yo"}]}
    data = _write(tmp_path / "p.jsonl", [_chat(1), parts, _chat(2)])
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    with pytest.raises(UsageError, match=r"p.jsonl: the checkpoint's chat template cannot "
                                         r"render 1 conversation: line 2 \(TypeError"):
        shell.run_line_magic("train", f"ernie {data} --from {ckpt} --lora-r 2 --steps 1")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
