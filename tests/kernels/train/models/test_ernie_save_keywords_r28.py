"""``model.save_pretrained(DIR, max_shard_size=..., safe_serialization=True, state_dict=...,
is_main_process=...)`` as transformers takes them (round 28; each was "unexpected keyword
argument"): shards no larger than transformers' reading of the size, the folder loaded by
transformers with the same logits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.hf_checkpoint import shard_bytes

from .ernie_reference import make_checkpoint, random_ids, torch, transformers


def test_shard_sizes_read_as_transformers():
    from transformers.utils.hub import convert_file_size_to_int

    for size in ("5GB", "500MB", "2GiB", "20KB", "300KiB", "5Gb", "64kb", 12345):
        assert shard_bytes(size) == convert_file_size_to_int(size), size
    for bad in ("big", "1.5GB"):  # transformers refuses these too
        with pytest.raises(ValueError):
            convert_file_size_to_int(bad)
        with pytest.raises(ValueError, match="max_shard_size"):
            shard_bytes(bad)


def test_save_keywords(tmp_path):
    folder, ref = make_checkpoint(tmp_path / "base", "moe-shared")
    model = from_pretrained(folder)
    out = tmp_path / "sharded"
    model.save_pretrained(out, max_shard_size="20KB", safe_serialization=True)
    index = json.loads((out / "model.safetensors.index.json").read_text())
    files = sorted(set(index["weight_map"].values()))
    assert len(files) > 1
    for f in files:  # each shard within the limit, unless one tensor alone is larger
        assert (out / f).stat().st_size <= 20_000 + 4096 or len(
            [k for k, v in index["weight_map"].items() if v == f]) == 1
    ids = random_ids(model.config.vocab_size, (1, 8), seed=5)
    with torch.no_grad():
        want = ref(torch.tensor(ids)).logits.numpy()
        got = transformers.AutoModelForCausalLM.from_pretrained(out)(torch.tensor(ids))
    np.testing.assert_allclose(got.logits.numpy(), want, atol=1e-5)
    # a state_dict of torch tensors: the model's own with one weight changed
    state = {k: torch.tensor(v) for k, v in model.state_dict().items()}
    state["model.norm.weight"] = state["model.norm.weight"] * 2
    model.save_pretrained(tmp_path / "state", state_dict=state)
    again = from_pretrained(tmp_path / "state")
    np.testing.assert_allclose(again.model.norm.weight.numpy(),
                               model.model.norm.weight.numpy() * 2)
    assert model.save_pretrained(tmp_path / "other", is_main_process=False) == []
    assert not (tmp_path / "other").exists()
    for bad, says in ((dict(safe_serialization=False), "safetensors"),
                      (dict(push_to_hub=True), "upload_folder")):
        with pytest.raises(ValueError, match=says):
            model.save_pretrained(tmp_path / "bad", **bad)
