"""Round 31: LoRA models run the inference path without a graph (``ernie_infer``): the base
projections fused as before, each active adapter added as ``s (x A^T) B^T`` (the adapters of
a group's projections multiplied by their ``A`` together). Before, a LoRA model took the
graph path for every prefill and decode step (a packed batch: the fast path's few-row
kernels and last-row prefill were lost).

The oracle: peft's ``PeftModel`` on the adapter skiff saved, over transformers' model of the
same checkpoint: logits, cache steps, greedy ``generate`` and the packed batch, dense (every
projection adapted, biases, rsLoRA) and MoE (attention and the experts' joint gate|up and
down adapters); a bfloat16 model with its adapter against peft on transformers' bf16 model
(its adapter in float32, peft's default). Dropout in training mode and DoRA keep the graph path."""

from __future__ import annotations

import os

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core.tensor import no_grad
from skiff.kernels.train.models import ernie_infer, from_pretrained
from skiff.kernels.train.models.ernie import KVCache

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

peft = pytest.importorskip("peft")

ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
CASES = {"dense-all": ("dense-gqa-tied", ALL, {}),
         "dense-bias-rslora": ("dense-mha-untied-bias", ["q_proj", "o_proj", "down_proj"],
                               {"use_rslora": True}),
         "moe-experts": ("moe-shared", ["q_proj", "v_proj", "o_proj", "experts.gate_up_proj",
                                        "experts.down_proj"], {})}


def _adapted(folder, targets, kw, dtype=None, seed=0):
    model = from_pretrained(folder, dtype=dtype)
    skiff.models.apply_lora(model, r=4, alpha=8, target_modules=targets, **kw)
    rng = np.random.default_rng(seed)
    for name, p in model.named_parameters():
        if "lora_B" in name:  # a trained-looking adapter
            p._data = (p._data.astype(np.float32)
                       + rng.normal(0, 0.3, p.shape).astype(np.float32)).astype(p._data.dtype)
    return model


def _peft(folder, adapter, dtype=torch.float32):
    base = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    return peft.PeftModel.from_pretrained(base.eval(), adapter).eval()


def _close(got, want, what):
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max()), what


@pytest.fixture(scope="module", params=list(CASES))
def lora_pair(request, tmp_path_factory):
    shape, targets, kw = CASES[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    folder, _ = make_checkpoint(tmp / "base", shape)
    model = _adapted(folder, targets, kw)
    skiff.models.save_adapter(model, tmp / "adapter")
    return request.param, _peft(folder, tmp / "adapter"), model


def test_lora_logits_cache_and_generation_on_the_fast_path(lora_pair):
    name, pm, model = lora_pair
    assert ernie_infer.fast_path(model) is not None, name
    V = model.config.vocab_size
    ids = random_ids(V, (2, 9), seed=5)
    with torch.no_grad():
        want = pm(input_ids=torch.tensor(ids)).logits.numpy()
    with no_grad():
        _close(model(ids).numpy(), want, name)
        cache = KVCache(len(model.model.layers), 9)
        _close(model(ids[:, :6], cache, last_only=True).numpy()[:, 0], want[:, 5], name)
        for t in range(6, 9):
            _close(model(ids[:, t:t + 1], cache).numpy()[:, 0], want[:, t], name)
    prompts = [random_ids(V, (n,), seed=n) for n in (4, 8, 2)]
    rows = model.generate_batch(prompts, max_new_tokens=5, eos_token_id=None)
    for p, r in zip(prompts, rows):
        with torch.no_grad():
            theirs = pm.generate(input_ids=torch.tensor(p[None]), max_new_tokens=5,
                                 do_sample=False, eos_token_id=None, pad_token_id=0)
        np.testing.assert_array_equal(np.asarray(r), theirs.numpy()[0], err_msg=name)


def test_lora_fast_path_matches_the_graph_after_a_training_step(tmp_path):
    """An optimizer step on the adapter (in place) and a dropout in training mode: the
    fast path reads the adapter as it is now, and gives way to the graph while dropout
    draws; its logits equal the graph path's (``SKIFF_REFERENCE_OPS=1``)."""
    folder, _ = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    model = from_pretrained(folder)
    skiff.models.apply_lora(model, r=4, alpha=8, target_modules=ALL, dropout=0.1)
    ids = random_ids(model.config.vocab_size, (2, 6), seed=1)
    model.eval()
    with no_grad():
        before = model(ids).numpy()
    model.train()
    opt = skiff.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    out = model(ids, labels=ids)
    out.loss.backward()
    opt.step()
    with no_grad():
        assert ernie_infer.fast_path(model) is None  # dropout draws in training mode
    model.eval()
    assert ernie_infer.fast_path(model) is not None
    with no_grad():
        fast = model(ids).numpy()
        os.environ["SKIFF_REFERENCE_OPS"] = "1"
        try:
            graph = model(ids).numpy()
        finally:
            del os.environ["SKIFF_REFERENCE_OPS"]
    assert np.abs(fast - before).max() > 1e-3  # the step moved the adapter's output
    _close(fast, graph, "after a step")


def test_dora_keeps_the_graph_path(tmp_path):
    folder, _ = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    model = from_pretrained(folder)
    skiff.models.apply_lora(model, r=4, alpha=8, target_modules=["q_proj"], use_dora=True)
    assert ernie_infer.fast_path(model) is None
    with model.disable_adapter():  # the base layers alone: the fast path again
        assert ernie_infer.fast_path(model) is not None


def test_bf16_model_with_lora_against_peft_bf16(tmp_path):
    _, ref = make_checkpoint(tmp_path / "f32", "moe-shared")
    ref.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    shape, targets, kw = CASES["moe-experts"]
    model = _adapted(tmp_path / "bf16", targets, kw, dtype="bfloat16")
    assert model.model.layers[1].self_attn.q_proj.lora_A.weight._data.dtype.name == "bfloat16"
    assert ernie_infer.fast_path(model) is not None
    skiff.models.save_adapter(model, tmp_path / "adapter")
    pm = _peft(tmp_path / "bf16", tmp_path / "adapter", torch.bfloat16)
    wide = _peft(tmp_path / "bf16", tmp_path / "adapter")
    ids = random_ids(model.config.vocab_size, (2, 7), seed=2)
    with torch.no_grad():
        want = pm(input_ids=torch.tensor(ids)).logits.float().numpy()
        spread = np.abs(wide(input_ids=torch.tensor(ids)).logits.numpy() - want).max()
        gen = pm.generate(input_ids=torch.tensor(ids), max_new_tokens=4, do_sample=False,
                          eos_token_id=None, pad_token_id=0).numpy()
    assert spread > 0.01
    with no_grad():  # as transformers' bf16 + peft: within a tenth of its spread to float32
        assert np.abs(model(ids).numpy() - want).max() <= 0.1 * spread
    np.testing.assert_array_equal(
        np.asarray(model.generate(ids, max_new_tokens=4, eos_token_id=None)), gen)


def test_apply_lora_takes_peft_config_keywords(tmp_path):
    """``apply_lora(model, **kw)`` with the keywords of peft's ``LoraConfig(**kw)``
    (``lora_alpha``, ``lora_dropout``; were a TypeError): peft reads the saved adapter with
    the same scaling and gives the same logits."""
    kw = dict(r=4, lora_alpha=4, lora_dropout=0.0, target_modules=["q_proj", "down_proj"])
    config = peft.LoraConfig(**kw)
    folder, _ = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    model = from_pretrained(folder)
    skiff.models.apply_lora(model, **kw)
    assert model.lora_config["lora_alpha"] == config.lora_alpha
    rng = np.random.default_rng(3)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p._data = rng.normal(0, 0.3, p.shape).astype(np.float32)
    skiff.models.save_adapter(model, tmp_path / "adapter")
    pm = _peft(folder, tmp_path / "adapter")
    assert pm.peft_config["default"].lora_alpha == config.lora_alpha
    ids = random_ids(model.config.vocab_size, (1, 6), seed=1)
    with torch.no_grad():
        want = pm(input_ids=torch.tensor(ids)).logits.numpy()
    with no_grad():
        _close(model(ids).numpy(), want, "peft keywords")
    with pytest.raises(ValueError, match="disagree"):
        skiff.models.apply_lora(from_pretrained(folder), alpha=8, lora_alpha=4)
