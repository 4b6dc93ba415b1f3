"""Round 34 (h8): ``chat JOB`` of a gpt-* job (no chat template) named the way on as
``generate JOB "text"``, a command neither front runs as written (a terminal needs ``python
-m skiff``, a notebook ``%generate``). The oracle: the command the error gives, run as it is
(the text put in), continues the text."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys


def _skiff(*args, env):
    return subprocess.run([sys.executable, "-m", "skiff", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_the_hint_of_chat_on_a_gpt_job_runs(tmp_path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", SKIFF_RUNS=str(tmp_path / "runs"))
    (tmp_path / "notes.txt").write_text("the model learns from notes. " * 200)
    proc = _skiff("train", "gpt-mini", str(tmp_path / "notes.txt"), "--steps", "2", "--name",
                  "notes", "--device", "cpu", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    proc = _skiff("chat", "notes", "hi", env=env)
    assert proc.returncode == 2
    found = re.search(r'(python -m skiff generate \S+ "text") \(%generate \S+ "text" in a '
                      r'notebook', proc.stderr)
    assert found, proc.stderr
    words = shlex.split(found.group(1).replace('"text"', '"the model"'))
    assert words[:3] == ["python", "-m", "skiff"]
    again = _skiff(*words[3:], "--max-new-tokens", "4", "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["result"]["tokens"] == 4
