"""``python -m skiff generate JOB "text"``: the model a ``train gpt-mini`` job trained
continues a text (before: "DIR: no such folder, got 'x'" for the job's name, and for its run
folder "architecture None is not supported"; a terminal could train gpt-mini but never sample
from it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def _skiff(*args, env):
    return subprocess.run([sys.executable, "-m", "skiff", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_a_train_jobs_gpt_continues_a_text_by_name_or_run_folder(tmp_path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", SKIFF_RUNS=str(tmp_path / "runs"))
    (tmp_path / "notes.txt").write_text("the model learns from notes. " * 200)
    proc = _skiff("train", "gpt-mini", str(tmp_path / "notes.txt"), "--steps", "2", "--name",
                  "notes", "--device", "cpu", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    run_dir = json.loads(proc.stdout)["job"]["run_dir"]
    proc = _skiff("generate", "notes", "the model", "--max-new-tokens", "12", "--json",
                  env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert result["tokens"] == 12 and result["model"] == "gpt-mini"
    assert len(result["text"].encode("utf-8", "replace")) >= 1 and result["stop"] == "length"

    # the oracle: the job's weights, greedy, continued by hand
    from skiff.kernels.train.entry import load_trained_model

    config = json.loads(open(os.path.join(run_dir, "config.json")).read())["config"]
    want = load_trained_model(run_dir, config).generate_text("the model", 12, temperature=0)
    again = _skiff("generate", run_dir, "the model", "--max-new-tokens", "12", "--json",
                   env=env)
    assert again.returncode == 0, again.stderr
    assert "the model" + json.loads(again.stdout)["result"]["text"] == want

    proc = _skiff("chat", "notes", "hi", env=env)
    assert proc.returncode == 2 and "gpt-mini has no chat template" in proc.stderr
    (tmp_path / "t.csv").write_text("a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(20)))
    proc = _skiff("train", "mlp", str(tmp_path / "t.csv"), "--steps", "2", "--name", "tab",
                  "--device", "cpu", env=env)
    assert proc.returncode == 0, proc.stderr
    proc = _skiff("generate", "tab", "hi", env=env)
    assert proc.returncode == 2 and "train job of 'mlp', which writes no text" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
