"""peft's several active adapters (``set_adapter(["a", "b"])``: each LoRA layer sums the
active adapters' deltas) as skiff gives them (round 37, h11; round 38, h6: the list itself,
summed as peft, see ``test_ernie_active_list_r38h6.py``); the ``cat`` combination
with weights 1 is the same sum (``B_cat A_cat = sum_i s_i B_i A_i``, scaling r / r = 1),
so the combined adapter made active gives peft's logits for the list (dense, and MoE with
adapters off the experts; peft and skiff both refuse to combine expert adapters)."""

from __future__ import annotations

import numpy as np
import pytest

import skiff

from .ernie_reference import make_checkpoint, peft_pair, torch
from .ernie_reference import saved_adapter as _adapter

peft = pytest.importorskip("peft")
IDS = np.array([[5, 6, 7, 8, 9, 10, 11]])


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "moe-shared"])
def test_cat_of_ones_gives_peft_list_of_active_adapters(shape, tmp_path):
    folder, _ = make_checkpoint(tmp_path / "base", shape)
    # overlapping (q_proj in all three), disjoint (v_proj, o_proj) targets; ranks and
    # scalings differ (rsLoRA on b)
    with skiff.random.fork_rng():  # lora_A from a seeded generator, whatever ran before
        skiff.manual_seed(0)
        paths = {"default": _adapter(folder, tmp_path / "a", ["q_proj", "v_proj"], 4, 0),
                 "b": _adapter(folder, tmp_path / "b", ["q_proj", "o_proj"], 2, 1,
                               use_rslora=True),
                 "c": _adapter(folder, tmp_path / "c", ["q_proj", "k_proj"], 3, 2)}
    pm, model = peft_pair(folder, paths)
    # the combination takes its first adapter's settings, as peft's: b (rsLoRA) first would
    # scale the sum by sqrt(r) in both, so b is not first
    for names in (["default", "b"], ["c", "b", "default"]):
        pm.base_model.set_adapter(names)
        with torch.no_grad():
            want = pm(torch.tensor(IDS)).logits.numpy()
            pm.base_model.set_adapter(names[0])
            alone = pm(torch.tensor(IDS)).logits.numpy()
        assert np.abs(want - alone).max() > 1e-2  # the list is not its first adapter
        model.set_adapter(names)  # round 38: the list itself, as peft sums it
        np.testing.assert_allclose(model(IDS).numpy(), want, atol=5e-5)
        # the same sum by cat, its first adapter not the rsLoRA one (cat takes its scaling)
        listed = sorted(names, key=lambda n: n == "b")
        summed = "+".join(listed)
        model.add_weighted_adapter(listed, [1.0] * len(listed), summed, combination_type="cat")
        model.set_adapter(summed)
        np.testing.assert_allclose(model(IDS).numpy(), want, atol=5e-5)
        model.set_adapter("default")
