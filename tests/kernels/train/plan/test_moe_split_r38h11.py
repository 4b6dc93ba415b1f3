"""Round 38 (h11): tp and pp for skiff's GPT of experts (``gpt_moe``) through the Trainer's
strategy resolution fail naming what runs it.

On 2 real ranks (``/work/round38/h11/p_all.py``), ``Trainer(gpt_moe(...), strategy="tp")``
failed "'_MoEMLP' object has no attribute 'c_fc'" at setup, and ``strategy="pp"`` trained,
silently 0.8% off the one-process run's 20 losses (each micro-batch routed alone, the
balancing loss left out; 1.1% with ``aux_coef=0``), while dp, zero2 and ep equal it (1.6e-7).
The CLI's job path already refused tp ("does not apply to gpt-moe"). A dense GPT still takes
tp and pp."""

from __future__ import annotations

import pytest

from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel.moe import gpt_moe
from skiff.kernels.train.plan.planner import resolve


def _moe():
    return gpt_moe(n_layer=2, n_embd=16, n_head=2, vocab_size=16, block_size=8, n_experts=4,
                   top_k=2, expert_hidden=16)


@pytest.mark.parametrize("spec,what", [("tp", "tp=2"), ("dp=1,tp=2", "tp=2"), ("pp", "pp=2")])
def test_tp_and_pp_on_a_gpt_of_experts_name_what_runs_it(spec, what):
    with pytest.raises(ValueError, match=what) as err:
        resolve(spec, _moe(), world_size=2, global_batch=8)
    assert "'ep'" in str(err.value) and "experts" in str(err.value)


@pytest.mark.parametrize("spec", ["ep", "zero2", "auto"])
def test_what_the_refusal_names_resolves(spec):
    assert resolve(spec, _moe(), world_size=2, global_batch=8).choice.world == 2


@pytest.mark.parametrize("spec", ["tp", "pp"])
def test_a_dense_gpt_still_splits(spec):
    model = GPT(GPTConfig(block_size=8, vocab_size=16, n_layer=2, n_head=2, n_embd=16))
    c = resolve(spec, model, world_size=2, global_batch=8).choice
    assert getattr(c, spec) == 2


def test_ep_on_a_dense_model_names_only_what_it_runs():
    """``strategy="ep"`` on a user's Sequential said "use dp, zero1, zero2, tp or pp", and
    tp and pp are then refused for it; each model now hears only what splits it."""
    from skiff import nn

    seq = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    with pytest.raises(ValueError, match="no mixture-of-experts") as err:
        resolve("ep", seq, world_size=2, global_batch=8)
    assert "'tp'" not in str(err.value) and "'zero2'" in str(err.value)
    for spec in ("dp", "zero1", "zero2"):  # what it names runs
        assert resolve(spec, seq, world_size=2, global_batch=8).choice.world == 2
    gpt = GPT(GPTConfig(block_size=8, vocab_size=16, n_layer=2, n_head=2, n_embd=16))
    with pytest.raises(ValueError, match="'pp', 'tp' or 'auto'"):
        resolve("ep", gpt, world_size=2, global_batch=8)
