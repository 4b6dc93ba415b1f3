"""peft's ``add_weighted_adapter`` mixes beyond cat / linear / svd (round 38, h6; round 37
refused them): ``ties``, ``dare_ties``, ``dare_linear``, ``magnitude_prune`` and their
``*_svd`` forms, with ``density`` and ``majority_sign_method``, against peft 0.21 on the same
adapters (logits of the mixed adapter made active). DARE keeps each value with probability
``density``: peft draws with ``torch.bernoulli``, skiff with its own generator; given the same
keep masks (peft's ``random_pruning`` fed skiff's draws in skiff's order, which is peft's:
layer by layer, the ``A`` matrices then the ``B``), the adapters are the same."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch, transformers
from .ernie_reference import saved_adapter as _adapter

peft = pytest.importorskip("peft")
merge_utils = pytest.importorskip("peft.utils.merge_utils")
IDS = np.array([[5, 6, 7, 8, 9, 10, 11]])


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("mixes38")
    folder, _ = make_checkpoint(d / "base", request.param)
    with skiff.random.fork_rng():
        skiff.manual_seed(0)
        # same rank (the A/B mixes need it), overlapping and disjoint targets
        paths = {"default": _adapter(folder, d / "a", ["q_proj", "v_proj"], 4, 0),
                 "c": _adapter(folder, d / "c", ["q_proj", "k_proj", "o_proj"], 4, 2)}
    pm = peft.PeftModel.from_pretrained(transformers.AutoModelForCausalLM.from_pretrained(
        folder), paths["default"]).eval()
    pm.load_adapter(paths["c"], adapter_name="c")
    model = from_pretrained(folder)
    model.load_adapter(paths["default"])
    model.load_adapter(paths["c"], adapter_name="c")
    return pm, model


def _logits_of(pm, model, name):
    pm.set_adapter(name)
    model.set_adapter(name)
    with torch.no_grad():
        want = pm(torch.tensor(IDS)).logits.numpy()
    got = model(IDS).numpy()
    pm.set_adapter("default")
    model.set_adapter("default")
    return got, want


@pytest.mark.parametrize("kind, weights, density, sign", [
    ("ties", [1.0, 0.6], 0.5, "total"),
    ("ties", [0.8, -0.5], 0.3, "frequency"),
    ("magnitude_prune", [0.7, 0.7], 0.4, "total"),
    ("ties_svd", [1.0, 0.5], 0.5, "total"),
    ("magnitude_prune_svd", [0.5, 1.0], 0.6, "total"),
])
def test_magnitude_mixes_as_peft(pair, kind, weights, density, sign):
    pm, model = pair
    name = f"{kind}-{sign}-{int(density * 10)}"
    args = (["default", "c"], weights, name, kind)
    pm.add_weighted_adapter(*args, density=density, majority_sign_method=sign)
    model.add_weighted_adapter(*args, density=density, majority_sign_method=sign)
    assert model.active_adapter == pm.active_adapter == "default"
    assert model.peft_config[name]["r"] == pm.peft_config[name].r
    got, want = _logits_of(pm, model, name)
    alone, _ = _logits_of(pm, model, "default")
    assert np.abs(want - alone).max() > 1e-2  # the mix is not the first adapter
    np.testing.assert_allclose(got, want, atol=5e-5)


@pytest.mark.parametrize("kind, density", [("dare_linear", 0.5), ("dare_ties", 0.7),
                                           ("dare_linear_svd", 0.6), ("dare_ties_svd", 0.4)])
def test_dare_mixes_as_peft_given_the_same_draws(pair, kind, density, monkeypatch):
    pm, model = pair
    name, seed = f"{kind}-{int(density * 10)}", 11
    draws = np.random.default_rng(seed)  # skiff.manual_seed(seed)'s generator

    def random_pruning(tensor, density, rescale):
        keep = torch.from_numpy(draws.random(tuple(tensor.shape)) < density)
        return tensor * keep / density if rescale else tensor * keep

    monkeypatch.setattr(merge_utils, "random_pruning", random_pruning)
    args = (["default", "c"], [1.0, 0.7], name, kind)
    pm.add_weighted_adapter(*args, density=density)
    with skiff.random.fork_rng():
        skiff.manual_seed(seed)
        model.add_weighted_adapter(*args, density=density)
    model.set_adapter(name)
    layers = dict(model.named_modules())
    for key, m in pm.named_modules():
        if name in getattr(m, "lora_A", {}):
            want = m.get_delta_weight(name).detach().numpy()
            got = layers[key.removeprefix("base_model.model.")].delta()
            np.testing.assert_allclose(got, want, atol=1e-4 * np.abs(want).max())
    got, want = _logits_of(pm, model, name)
    # *_svd: the pruned delta has full rank, so its cut to rank 4 moves with each library's
    # float32 SVD rounding (one layer's delta 2.8e-5 of its 1.04, the MoE's logits 4e-4)
    np.testing.assert_allclose(got, want, atol=1e-3 if kind.endswith("svd") else 5e-5)
    # another seed: other values kept (the draws are skiff's generator's)
    with skiff.random.fork_rng():
        skiff.manual_seed(seed + 1)
        model.add_weighted_adapter(*args[:2], name + "-b", kind, density=density)
    model.set_adapter(name + "-b")
    other = model(IDS).numpy()
    model.set_adapter("default")
    assert np.abs(other - got).max() > 1e-3


def test_mix_arguments_refused_as_peft(pair):
    pm, model = pair
    with pytest.warns(UserWarning, match="no pruning will be performed"):
        model.add_weighted_adapter(["default", "c"], [1.0, 0.5], "d1", "dare_linear",
                                   density=1.0)
    pm.add_weighted_adapter(["default", "c"], [1.0, 0.5], "d1", "linear")
    got, want = _logits_of(pm, model, "d1")  # density 1: the linear mix
    np.testing.assert_allclose(got, want, atol=5e-5)
    with pytest.raises(ValueError, match="needs a density"):
        model.add_weighted_adapter(["default", "c"], [1, 1], "x", "ties")
    for m in (pm, model):
        with pytest.raises(ValueError, match="Invalid combination_type: foo"):
            m.add_weighted_adapter(["default", "c"], [1, 1], "x", "foo")
        with pytest.raises(ValueError, match="Density should be >= 0"):
            m.add_weighted_adapter(["default", "c"], [1, 1], "x", "ties", density=-0.5)
