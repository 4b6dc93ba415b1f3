"""A config.json that leaves keys out is read as transformers reads it (round 25 probe): the
dense architecture's defaults are the 0.3B's (``num_key_value_heads`` 2, ``head_dim`` 128),
the MoE one's the 21B-A3B's (hidden 2560, 28 layers, 20/4 heads, head_dim hidden/heads);
an explicit null ``num_key_value_heads`` is one per head, a null ``head_dim`` hidden/heads.
Before, a left-out ``num_key_value_heads`` became one per head and ``head_dim``
hidden/heads for both, and a left-out size of an MoE config the dense 0.3B's: the model
built did not fit the checkpoint transformers writes for the same file."""

from __future__ import annotations

import pytest

from skiff.kernels.train.models.hf_checkpoint import config_from_hf

from .ernie_reference import transformers

DENSE = {"architectures": ["Ernie4_5ForCausalLM"], "model_type": "ernie4_5"}
MOE = {"architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe"}
TINY = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
            num_attention_heads=4)
TINY_MOE = dict(TINY, moe_intermediate_size=16, moe_num_experts=4, moe_k=2)


def _reference(raw):
    cls = transformers.Ernie4_5_MoeConfig if raw["model_type"] == "ernie4_5_moe" \
        else transformers.Ernie4_5Config
    return cls(**{k: v for k, v in raw.items() if k not in ("architectures", "model_type")})


def _sizes(cfg) -> dict:
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    out = {k: getattr(cfg, k) for k in ("vocab_size", "hidden_size", "intermediate_size",
                                        "num_hidden_layers", "num_attention_heads",
                                        "num_key_value_heads")}
    return {**out, "head_dim": head_dim}


@pytest.mark.parametrize("raw", [
    DENSE, MOE, dict(DENSE, **TINY), dict(DENSE, **TINY, num_key_value_heads=None),
    dict(DENSE, **TINY, head_dim=None), dict(MOE, **TINY_MOE),
    dict(MOE, **TINY_MOE, head_dim=16)],
    ids=["dense", "moe", "dense-tiny", "dense-kv-null", "dense-head-null", "moe-tiny",
         "moe-head"])
def test_left_out_keys_as_transformers(raw):
    ref = _reference(raw)
    mine = config_from_hf(dict(raw))
    assert _sizes(mine) == _sizes(ref)
    if raw is MOE or "moe_num_experts" in raw:
        for k in ("moe_num_experts", "moe_k", "moe_intermediate_size",
                  "moe_num_shared_experts", "moe_layer_start_index", "moe_layer_interval"):
            assert getattr(mine, k) == getattr(ref, k), k


@pytest.mark.parametrize("raw", [dict(DENSE, **TINY), dict(DENSE, **TINY, head_dim=None),
                                 dict(MOE, **TINY_MOE), dict(MOE, **TINY_MOE, head_dim=16)])
def test_the_model_built_has_transformers_shapes(raw):
    from skiff.kernels.train.core import nn
    from skiff.kernels.train.models.ernie import ErnieForCausalLM

    cls = transformers.Ernie4_5_MoeForCausalLM if raw["model_type"] == "ernie4_5_moe" \
        else transformers.Ernie4_5ForCausalLM
    ref = cls(_reference(raw))
    theirs = {k: tuple(v.shape) for k, v in ref.state_dict().items() if "lm_head" not in k}
    with nn.skip_init():
        model = ErnieForCausalLM(config_from_hf(dict(raw)))
    mine = {k: tuple(v.shape) for k, v in model.state_dict().items() if "lm_head" not in k}
    flat = {}
    for k, shape in theirs.items():  # transformers keeps a layer's experts fused
        if k.endswith("mlp.experts.gate_up_proj"):
            for e in range(shape[0]):
                half = shape[1] // 2
                flat[k.replace("gate_up_proj", f"{e}.gate_proj.weight")] = (half, shape[2])
                flat[k.replace("gate_up_proj", f"{e}.up_proj.weight")] = (half, shape[2])
        elif k.endswith("mlp.experts.down_proj"):
            for e in range(shape[0]):
                flat[k.replace("down_proj", f"{e}.down_proj.weight")] = shape[1:]
        else:
            flat[k.replace(".mlp.gate.moe_statics.", ".mlp.moe_statics.")] = shape
    assert mine == flat
