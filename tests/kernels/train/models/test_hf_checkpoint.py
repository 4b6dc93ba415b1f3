"""Checkpoint folders: skiff's own safetensors reader and writer against the safetensors
package and transformers. A folder skiff writes (one file, shards with an index, bfloat16)
loads in transformers with the same logits; bfloat16 weights read as float32 exactly; a
missing shard, another architecture, pickled weights or a truncated file is one clear error.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import safetensors_io as st
from skiff.kernels.train.models.hf_checkpoint import (
    from_pretrained,
    read_config,
    save_pretrained,
)

from .ernie_reference import make_checkpoint, torch, transformers

safetensors_torch = pytest.importorskip("safetensors.torch")


def test_reader_and_writer_agree_with_the_safetensors_package(tmp_path):
    import ml_dtypes

    rng = np.random.default_rng(0)
    tensors = {"a": rng.standard_normal((3, 5)).astype(np.float32),
               "b": rng.integers(-9, 9, (4,)).astype(np.int64),
               "c": rng.standard_normal((2, 2)).astype(np.float16),
               "d": rng.standard_normal((6,)).astype(ml_dtypes.bfloat16)}
    st.write_file(tensors, tmp_path / "x.safetensors")
    theirs = safetensors_torch.load_file(tmp_path / "x.safetensors")
    for k, v in tensors.items():
        assert np.array_equal(theirs[k].float().numpy(), v.astype(np.float32)), k
    assert theirs["d"].dtype == torch.bfloat16
    # and the other way: the package writes, skiff reads (bfloat16 widened exactly)
    ref = {"w": torch.randn(4, 3, generator=torch.Generator().manual_seed(1)).bfloat16()}
    safetensors_torch.save_file(ref, tmp_path / "y.safetensors")
    f = st.SafetensorsFile(tmp_path / "y.safetensors")
    assert np.array_equal(f.get("w", np.float32), ref["w"].float().numpy())
    assert np.array_equal(st.float32_to_bf16_bits(ref["w"].float().numpy()),
                          ref["w"].view(torch.int16).numpy().view(np.uint16))


def _logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor(ids)).logits.float().numpy()


@pytest.mark.parametrize("shape,shard_bytes", [("dense-gqa-tied", None),
                                              ("moe-shared", 20_000),
                                              ("dense-mha-untied-bias", 30_000)])
def test_saved_folder_loads_in_transformers_with_equal_logits(tmp_path, shape, shard_bytes):
    _, ref = make_checkpoint(tmp_path / "src", shape)
    model = from_pretrained(tmp_path / "src")
    for p in model.parameters():  # new values, so the test sees skiff's own weights saved
        p.data *= 1.01
    written = save_pretrained(model, tmp_path / "out", max_shard_bytes=shard_bytes)
    if shard_bytes:
        assert "model.safetensors.index.json" in written and len(written) > 4
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out").eval()
    ids = np.random.default_rng(2).integers(3, model.config.vocab_size, (2, 9))
    want = model(ids).numpy()
    got = _logits(back, ids)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    # and skiff reads its own folder back to the same model
    again = from_pretrained(tmp_path / "out")
    assert np.abs(again(ids).numpy() - want).max() == 0


def test_bfloat16_checkpoint(tmp_path):
    _, ref = make_checkpoint(tmp_path / "src", "moe-shared")
    ref.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    info = st.open_folder(tmp_path / "bf16")
    assert "BF16" in info.stored_dtypes()
    model = from_pretrained(tmp_path / "bf16")  # read as float32, exactly
    emb = ref.model.embed_tokens.weight.detach().float().numpy()
    assert np.array_equal(model.model.embed_tokens.weight.numpy(), emb)
    kept = from_pretrained(tmp_path / "bf16", dtype="bfloat16")
    assert kept.model.embed_tokens.weight.dtype.name == "bfloat16"
    save_pretrained(kept, tmp_path / "out")
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    assert back.model.embed_tokens.weight.dtype == torch.bfloat16
    assert np.array_equal(back.model.embed_tokens.weight.detach().float().numpy(), emb)


def test_bad_folders_give_one_clear_error(tmp_path):
    folder, _ = make_checkpoint(tmp_path / "ok", "dense-gqa-tied")
    model = from_pretrained(folder)
    save_pretrained(model, tmp_path / "sharded", max_shard_bytes=10_000)
    shards = sorted((tmp_path / "sharded").glob("model-*.safetensors"))
    shards[-1].unlink()
    with pytest.raises(st.CheckpointFormatError, match=f"{shards[-1].name}.*missing"):
        from_pretrained(tmp_path / "sharded")
    assert from_pretrained(folder, device="auto") is not None  # the CPU here, or a GPU
    with pytest.raises(ValueError, match="no device 'cuda:7'"):
        from_pretrained(folder, device="cuda:7")
    other = tmp_path / "llama"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"],
                                                   "model_type": "llama"}))
    with pytest.raises(ValueError, match="'LlamaForCausalLM' is not supported"):
        from_pretrained(other)
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text((folder / "config.json").read_text())
    (pickled / "pytorch_model.bin").write_bytes(b"\x80")
    with pytest.raises(st.CheckpointFormatError, match="only pickled weights"):
        from_pretrained(pickled)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        read_config(tmp_path)
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "config.json").write_text((folder / "config.json").read_text())
    data = (folder / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(data[:-64])
    with pytest.raises(st.CheckpointFormatError, match="truncated"):
        from_pretrained(cut)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["num_hidden_layers"] = 3
    (cut / "config.json").write_text(json.dumps(cfg))
    (cut / "model.safetensors").write_bytes(data)
    with pytest.raises(st.CheckpointFormatError, match="missing .*model.layers.2"):
        from_pretrained(cut)


def test_transformers_in_memory_names_are_read_too(tmp_path):
    """transformers keeps experts fused ((E, 2I, C) gate_up_proj, (E, C, I) down_proj) and
    the expert bias under mlp.gate.moe_statics in memory; a folder written from that state
    (as some tools do) loads to the same model."""
    folder, ref = make_checkpoint(tmp_path / "src", "moe-shared")
    state = {k: v.detach().numpy() for k, v in ref.state_dict().items()
             if k != "lm_head.weight"}
    assert any(k.endswith("experts.gate_up_proj") for k in state)
    assert any(".mlp.gate.moe_statics." in k for k in state)
    (tmp_path / "fused").mkdir()
    st.write_file(state, tmp_path / "fused" / "model.safetensors")
    (tmp_path / "fused" / "config.json").write_text((folder / "config.json").read_text())
    ids = np.random.default_rng(3).integers(3, 60, (2, 7))
    want = from_pretrained(folder)(ids).numpy()
    assert np.array_equal(from_pretrained(tmp_path / "fused")(ids).numpy(), want)


def test_loading_draws_no_random_numbers_and_holds_the_weights_once(tmp_path):
    import tracemalloc

    from skiff.kernels.train.core import random as train_random

    folder, _ = make_checkpoint(tmp_path, "dense-mha-untied-bias")
    size = (folder / "model.safetensors").stat().st_size
    before = train_random.get_state()
    tracemalloc.start()
    try:
        model = from_pretrained(folder)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert train_random.get_state() == before  # nn.skip_init: no init drawn, then replaced
    weights = sum(p.nbytes for p in model.parameters())
    assert weights <= size and peak <= 1.2 * size + 64 * 1024, (peak, size)
