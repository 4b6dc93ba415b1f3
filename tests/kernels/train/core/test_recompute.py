"""Activation checkpointing (``core.recompute``): the same loss and gradients as the full
graph, for GPT (dropout on, blocks and packed), ERNIE-4.5 dense and MoE (the balancing loss
through the recomputed router), LoRA over a frozen embedding; far fewer saved bytes; a
parameter's gradient-ready hook fires once; the Trainer turns it on."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core import random as skrandom
from skiff.kernels.train.core.autograd import graph_nodes
from skiff.kernels.train.core.recompute import checkpoint
from skiff.kernels.train.core.tensor import Tensor
from skiff.kernels.train.data import PackedBatch
from skiff.kernels.train.models.ernie import ErnieConfig, ErnieForCausalLM
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.models.lora import apply_lora


def _saved_bytes(loss) -> int:
    return sum(int(getattr(a, "nbytes", 0)) for n in graph_nodes(loss)
               for a in (n.saved or ()) if a is not None)


def _grads(model, batch, recompute: bool, seed: int = 5):
    for p in model.parameters():
        p.grad = None
    model.recompute = recompute
    skrandom.seed(seed)  # dropout draws the same masks in both runs
    loss = model.loss(batch)
    saved = _saved_bytes(loss)
    loss.backward()
    grads = {n: None if p.grad is None else p._grad.copy()
             for n, p in model.named_parameters()}
    model.recompute = False
    return float(loss.data), grads, saved


def _same(model, batch, *, rtol=1e-5, atol=1e-6):
    loss0, g0, saved0 = _grads(model, batch, False)
    loss1, g1, saved1 = _grads(model, batch, True)
    assert loss1 == pytest.approx(loss0, rel=1e-6)
    assert g0.keys() == g1.keys()
    for name in g0:
        if g0[name] is None:
            assert g1[name] is None, name
        else:
            np.testing.assert_allclose(g1[name], g0[name], rtol=rtol, atol=atol, err_msg=name)
    assert any(g is not None for g in g1.values())
    return saved0, saved1


def _ernie(moe: bool, layers: int = 3) -> ErnieForCausalLM:
    skrandom.seed(0)
    cfg = ErnieConfig(vocab_size=97, hidden_size=32, intermediate_size=48,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=8, max_position_embeddings=64,
                      moe_num_experts=4 if moe else 0, moe_k=2, moe_intermediate_size=16,
                      moe_num_shared_experts=1 if moe else 0, moe_layer_start_index=1,
                      output_router_logits=moe, router_aux_loss_coef=0.5)
    return ErnieForCausalLM(cfg)


def _blocks(vocab, B=2, T=16, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, vocab, size=(B, T))
    return x, np.roll(x, -1, axis=1)


def _packed(vocab, lengths=(5, 11, 7), seed=2):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, vocab, size=sum(lengths))
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    positions = np.concatenate([np.arange(n) for n in lengths])
    targets = np.roll(tokens, -1)
    targets[cu[1:] - 1] = -100
    return PackedBatch(tokens=tokens, targets=targets, cu_seqlens=cu, positions=positions)


def test_checkpoint_of_a_function_equals_the_graph_and_passes_non_tensors():
    rng = np.random.default_rng(0)
    w = Tensor(rng.standard_normal((4, 4)).astype(np.float32), requires_grad=True)
    x0 = rng.standard_normal((3, 4)).astype(np.float32)

    def block(x, scale):
        return (x @ w).tanh() * scale, (x * x).sum()

    grads = []
    for use in (False, True):
        w.grad = None
        x = Tensor(x0, requires_grad=True)
        y, s = checkpoint(block, x, 2.0, params=[w]) if use else block(x, 2.0)
        (y.sum() + 3 * s).backward()  # both outputs carry gradient
        grads.append((x._grad.copy(), w._grad.copy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_gpt_with_dropout_blocks_and_packed():
    skrandom.seed(0)
    model = GPT(GPTConfig(block_size=32, vocab_size=61, n_layer=3, n_head=2, n_embd=32,
                          dropout=0.1))
    model.train()
    saved0, saved1 = _same(model, _blocks(61))
    assert saved1 < 0.5 * saved0, (saved0, saved1)
    _same(model, _packed(61))


@pytest.mark.parametrize("moe", [False, True])
def test_ernie_dense_and_moe_with_the_balancing_loss(moe):
    model = _ernie(moe)
    saved0, saved1 = _same(model, _blocks(97))
    assert saved1 < 0.5 * saved0, (saved0, saved1)
    _same(model, _packed(97))
    if moe:  # the balancing loss reaches the router through the recomputed layers
        _, g, _ = _grads(model, _blocks(97), True)
        model.config.output_router_logits = False
        _, g_plain, _ = _grads(model, _blocks(97), True)
        model.config.output_router_logits = True
        name = next(n for n in g if n.endswith("mlp.gate.weight"))
        assert not np.allclose(g[name], g_plain[name])


def test_lora_over_a_frozen_embedding_still_trains_its_adapters():
    model = _ernie(False, layers=2)
    apply_lora(model, r=4, alpha=8, target_modules=("q_proj", "v_proj"))
    assert not model.model.embed_tokens.weight.requires_grad
    _, grads, _ = _grads(model, _blocks(97), True)
    _same(model, _blocks(97))
    lora = [n for n in grads if "lora" in n]
    assert lora and all(grads[n] is not None for n in lora)
    # B starts at zero (so A's gradient is zero at first); B's is not
    assert all(np.abs(grads[n]).sum() > 0 for n in lora if "lora_B" in n)


def test_a_parameters_ready_hook_fires_once_after_its_gradient_is_complete():
    model = _ernie(False, layers=2)
    model.recompute = True
    p = model.model.layers[0].self_attn.q_proj.weight
    seen = []
    p.register_grad_ready_hook(lambda t: seen.append(None if t.grad is None else t._grad.copy()))
    model.loss(_blocks(97)).backward()
    assert len(seen) == 1 and seen[0] is not None
    np.testing.assert_array_equal(seen[0], p.grad)


def test_trainer_recompute_option_and_plan(tmp_path):
    from skiff.kernels.train.trainer import Trainer

    model = _ernie(False, layers=2)
    x, y = _blocks(97, B=4)
    data = list(zip(x, y))
    trainer = Trainer(model, strategy="single", recompute=True, batch_size=2)
    trainer.train(data, steps=1)
    assert model.recompute is True
    from skiff.kernels.train.models.mlp import MLP

    with pytest.raises(ValueError, match="recompute"):
        Trainer(MLP(4, 2, hidden=(8,)), recompute=True)


def test_train_kind_recompute_flag_reaches_the_model(runs_dir):
    from skiff.jobs import submit

    job, _ = submit("train", "gpt-mini --steps 1 --batch-size 2 --block-size 16 --recompute")
    assert job.wait(120) and job.status == "done", job.error
    assert job.value.model.recompute is True
    assert any("activation checkpointing" in (e.get("message") or "") for e in job.events())
