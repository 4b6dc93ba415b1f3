"""``python -m skiff chat DIR`` on a folder whose weights are missing (no safetensors, a
shard the index lists) is one line and exit 2, before any run folder (it was a failed job
with a run folder); transformers refuses the same folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .ernie_reference import make_checkpoint, transformers


def _cli(*args, cwd):
    root = str(Path(__file__).resolve().parents[4])  # this checkout's skiff
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "skiff", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("damage", ["no-weights", "missing-shard"])
def test_chat_on_a_folder_without_its_weights(tmp_path, damage):
    folder = tmp_path / "ck"
    _, ref = make_checkpoint(folder, "moe-shared")
    if damage == "no-weights":
        (folder / "model.safetensors").unlink()
    else:
        (folder / "model.safetensors").unlink()
        ref.save_pretrained(folder, max_shard_size="20KB")
        next(folder.glob("model-00002-of-*.safetensors")).unlink()
    with pytest.raises(Exception):  # noqa: B017 (the oracle refuses it too)
        transformers.AutoModelForCausalLM.from_pretrained(folder)
    out = _cli("chat", str(folder), "--prompt", "hi", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert ("neither model.safetensors" in line) if damage == "no-weights" \
        else ("are missing" in line and "model-00002" in line), line
    assert not (tmp_path / "skiff-runs").exists() or not any((tmp_path / "skiff-runs").iterdir())
