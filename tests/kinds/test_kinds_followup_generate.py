"""``python -m skiff train gpt-moe --steps 2 --name m && python -m skiff generate m "Shall I"``:
the mixture-of-experts GPT a train job wrote continues a text from its name, as gpt-mini's
does; the answer is the job's own weights' greedy continuation."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def _skiff(*args, env):
    return subprocess.run([sys.executable, "-m", "skiff", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_a_gpt_moe_job_continues_a_text_by_its_name(tmp_path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               SKIFF_RUNS=str(tmp_path / "runs"))
    proc = _skiff("train", "gpt-moe", "--steps", "2", "--name", "m", "--device", "cpu",
                  "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    run_dir = json.loads(proc.stdout)["job"]["run_dir"]
    proc = _skiff("generate", "m", "Shall I", "--max-new-tokens", "8", "--temperature", "0",
                  "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert result["model"] == "gpt-moe" and result["tokens"] == 8

    from skiff.kernels.train.entry import load_trained_model

    config = json.loads(open(os.path.join(run_dir, "config.json")).read())["config"]
    want = load_trained_model(run_dir, config).generate_text("Shall I", 8, temperature=0)
    assert "Shall I" + result["text"] == want
