"""``python -m skiff generate JOB "text"``: the model a ``train gpt-mini`` job trained
continues a text (before: "DIR: no such folder, got 'x'" for the job's name, and for its run
folder "architecture None is not supported"; a terminal could train gpt-mini but never sample
from it).

Round 34 (h8): ``chat JOB`` of a gpt-* job (no chat template) named the way on as
``generate JOB "text"``, a command neither front runs as written (a terminal needs ``python
-m skiff``, a notebook ``%generate``). The oracle: the command the error gives, run as it is
(the text put in), continues the text as the job's weights do by hand.

Round 40 (h8): the round-34 test (``test_chat_gpt_job_hint_r34h8.py``) trained the same
gpt-mini job again in a process of its own; both run here on one job, every command through
the terminal's ``main`` in this process (15.2 -> 4.7 CPU s: docs/widgets.md, Round 40 (h8))."""

from __future__ import annotations

import json
import os
import re
import shlex

from skiff.cli import main


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    seen = capsys.readouterr()
    return code, seen.out, seen.err


def test_a_train_jobs_gpt_continues_a_text_by_name_or_run_folder(runs_dir, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("the model learns from notes. " * 200)
    code, out, err = _run(capsys, "train", "gpt-mini", str(tmp_path / "notes.txt"), "--steps",
                          "2", "--name", "notes", "--device", "cpu", "--json")
    assert code == 0, err
    run_dir = json.loads(out)["job"]["run_dir"]
    code, out, err = _run(capsys, "generate", "notes", "the model", "--max-new-tokens", "12",
                          "--json")
    assert code == 0, err
    result = json.loads(out)["result"]
    assert result["tokens"] == 12 and result["model"] == "gpt-mini"
    assert len(result["text"].encode("utf-8", "replace")) >= 1 and result["stop"] == "length"

    # the oracle: the job's weights, greedy, continued by hand
    from skiff.kernels.train.entry import load_trained_model

    config = json.loads(open(os.path.join(run_dir, "config.json")).read())["config"]
    want = load_trained_model(run_dir, config).generate_text("the model", 12, temperature=0)
    assert "the model" + result["text"] == want

    # chat on it: one line naming the way on, a command that runs as written (its run folder)
    code, out, err = _run(capsys, "chat", "notes", "hi")
    assert code == 2 and "gpt-mini has no chat template" in err
    found = re.search(r'(python -m skiff generate \S+ "text") \(%generate \S+ "text" in a '
                      r'notebook', err)
    assert found, err
    words = shlex.split(found.group(1).replace('"text"', '"the model"'))
    assert words[:3] == ["python", "-m", "skiff"] and words[4] == run_dir
    code, out, err = _run(capsys, *words[3:], "--max-new-tokens", "12", "--json")
    assert code == 0, err
    assert "the model" + json.loads(out)["result"]["text"] == want

    (tmp_path / "t.csv").write_text("a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(20)))
    code, out, err = _run(capsys, "train", "mlp", str(tmp_path / "t.csv"), "--steps", "2",
                          "--name", "tab", "--device", "cpu")
    assert code == 0, err
    code, out, err = _run(capsys, "generate", "tab", "hi")
    assert code == 2 and "train job of 'mlp', which writes no text" in err
    assert len(err.strip().splitlines()) == 1
