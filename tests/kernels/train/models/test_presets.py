"""The planner knows the published ERNIE-4.5 shapes: its presets count the parameters the
published configs give (total and active), and it plans them on 8 x 80 GB devices."""

from __future__ import annotations

import pytest

from skiff.kernels.train.models.ernie import PUBLISHED, ErnieConfig, num_parameters
from skiff.kernels.train.plan.cost import PRESETS
from skiff.kernels.train.plan.planner import plan


@pytest.mark.parametrize("name,active", [("ernie-4.5-0.3b", None),
                                         ("ernie-4.5-21b-a3b", 3e9),
                                         ("ernie-4.5-300b-a47b", 47e9)])
def test_presets_count_the_published_configs(name, active):
    cfg = ErnieConfig(**PUBLISHED[name])
    spec = PRESETS[name]
    assert spec.n_params == num_parameters(cfg)
    experts = sum(cfg.is_moe_layer(layer) for layer in range(cfg.num_hidden_layers))
    assert spec.n_moe_layers == (experts if cfg.is_moe else spec.n_layers)
    if active is not None:  # "A3B", "A47B": the active parameters the names promise
        assert abs(spec.active_params - active) / active < 0.15
    else:
        assert spec.active_params == spec.n_params


def test_plan_the_21b_on_8_devices():
    p = plan("ernie-4.5-21b-a3b", devices=8, device_memory=80 * 10**9)
    assert p.fitting > 0 and p.estimate.peak_memory <= 80 * 10**9
    assert p.model.name == "ernie-4.5-21b-a3b" and p.model.n_params == 21_825_436_160


def test_model_configs_refuse_sizes_that_are_not_positive_integers():
    """Both configs check their sizes with the trainer's own check (a bool is no size)."""
    from skiff.kernels.train.models.gpt import GPTConfig

    with pytest.raises(ValueError, match="GPTConfig.n_head must be a positive integer, got 0"):
        GPTConfig(n_head=0)
    with pytest.raises(ValueError, match="GPTConfig.n_layer must be a positive integer"):
        GPTConfig(n_layer=True)
    with pytest.raises(ValueError, match="ErnieConfig.hidden_size must be a positive integer"):
        ErnieConfig(hidden_size=2.5)
    with pytest.raises(ValueError, match="ErnieConfig.vocab_size must be a positive integer"):
        ErnieConfig(vocab_size=True)
    assert GPTConfig(n_layer=2).n_layer == 2
