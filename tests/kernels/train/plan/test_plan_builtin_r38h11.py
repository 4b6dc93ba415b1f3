"""Round 38 (h11): ``skiff.plan("mlp")`` / ``plan("cnn")``, %train's own small models by
name, are costed as the models built (they failed "unknown model 'mlp': choose from
gpt-mini, ..." while ``plan(models.get("mlp"))`` worked). Oracle: the built model's
parameter count from its arrays, and the plan of the live model itself."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train import models
from skiff.kernels.train.plan import model_spec


@pytest.mark.parametrize("name", ["mlp", "cnn", "MLP"])
def test_a_builtin_small_model_is_planned_by_name(name):
    live = models.get(name.lower())
    count = sum(int(np.asarray(v).size) for v in live.state_dict().values())
    assert model_spec(name).n_params == count
    by_name = skiff.plan(name, devices=2, device_memory="8GB", global_batch=64)
    by_model = skiff.plan(live, devices=2, device_memory="8GB", global_batch=64)
    assert by_name.choice == by_model.choice and by_name.choice.dp == 2


def test_an_unknown_name_lists_them():
    with pytest.raises(ValueError, match="unknown model 'mpl'.*gpt-mini.*mlp, cnn"):
        model_spec("mpl")


def test_a_zero_plan_says_what_zero_changes_in_memory_and_time():
    """The ZeRO line gave only memory ("0.1 GB -> 0.1 GB per device" for gpt-mini on 2
    ranks), so why ZeRO-2 beat plain dp was not said: its sharded optimizer step. The line
    now has both step times, those of the layout without ZeRO costed on their own."""
    from dataclasses import replace

    from skiff.kernels.train.plan.cost import estimate
    from skiff.kernels.train.plan.planner import _sec

    p = skiff.plan("gpt-mini", devices=2, device_memory="80GB")
    assert p.choice.zero == 2
    line = next(r for r in p.reasons if r.startswith("ZeRO-2"))
    plain = estimate(model_spec("gpt-mini"), p.cluster, replace(p.choice, zero=0),
                     global_batch=p.global_batch, weight_bytes=p.weight_bytes)
    assert plain.step_time > p.estimate.step_time
    assert f"{_sec(plain.step_time)} -> {_sec(p.estimate.step_time)} a step" in line
    assert "without ZeRO" in line


def test_a_moe_plan_that_keeps_the_experts_whole_says_why():
    """A model of experts planned to zero2 gave no word on ep (the expert-parallel layouts
    were searched, slower): the reason now names the fastest that splits them, its step
    time and all-to-all time, costed again here on their own."""
    from skiff.kernels.train.plan.cost import Choice, estimate
    from skiff.kernels.train.plan.planner import _sec

    p = skiff.plan("gpt-moe-tiny", devices=2, device_memory="8GB", global_batch=16)
    assert p.choice.ep == 1
    line = next(r for r in p.reasons if r.startswith("experts not split"))
    ep = estimate(model_spec("gpt-moe-tiny"), p.cluster, Choice(2, 1, 1, 2, 1, 8, False),
                  global_batch=16, weight_bytes=p.weight_bytes)
    assert "ep=2" in line and ep.step_time > p.estimate.step_time
    assert f"predicted {_sec(ep.step_time)} a step" in line
    assert f"all-to-all {_sec(ep.time['ep_comm'])}" in line
