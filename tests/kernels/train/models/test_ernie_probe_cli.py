"""``python -m skiff chat DIR`` on a folder whose weights are missing (no safetensors, a
shard the index lists) is one line and exit 2, before any run folder (it was a failed job
with a run folder); transformers refuses the same folders. (Round 40: the CLI's ``main``
run in this process, as ``python -m skiff`` runs it, instead of a new interpreter each.)"""

from __future__ import annotations

import pytest

from skiff.cli import main

from .ernie_reference import make_checkpoint, transformers


@pytest.mark.parametrize("damage", ["no-weights", "missing-shard"])
def test_chat_on_a_folder_without_its_weights(tmp_path, damage, monkeypatch, capsys):
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
    monkeypatch.chdir(tmp_path)  # where a run folder would go
    monkeypatch.delenv("SKIFF_RUNS", raising=False)
    capsys.readouterr()
    assert main(["chat", str(folder), "--prompt", "hi"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert ("neither model.safetensors" in line) if damage == "no-weights" \
        else ("are missing" in line and "model-00002" in line), line
    assert not (tmp_path / "skiff-runs").exists() or not any((tmp_path / "skiff-runs").iterdir())
