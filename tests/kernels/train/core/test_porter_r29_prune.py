"""Round 29: ``nn.utils.prune`` against torch 2.13 in float64: masks, names in
``named_parameters``/``named_buffers``/``state_dict``, outputs and the gradient of
``weight_orig`` after l1 (once and iterated), ln-structured, global and custom-mask pruning,
``remove`` and ``is_pruned``; a few SGD steps of a pruned model equal torch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (torch does not import it by itself)

import skiff

RNG = np.random.default_rng(2907)


def _pair():
    torch.manual_seed(1)  # (a seed whose ln case told torch's scoring of a pruned tensor apart)
    t = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(16, 3)).double()
    s = skiff.nn.Sequential(skiff.nn.Conv2d(2, 4, 3), skiff.nn.ReLU(), skiff.nn.Flatten(),
                            skiff.nn.Linear(16, 3)).double()
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return s, t


def _prune_both(how, lib, m):
    P = lib.nn.utils.prune
    if how == "l1":
        P.l1_unstructured(m[3], "weight", amount=0.3)
    elif how == "l1_twice":
        P.l1_unstructured(m[3], "weight", amount=0.3)
        P.l1_unstructured(m[3], "weight", amount=5)
        P.l1_unstructured(m[0], "bias", amount=0.5)
    elif how == "ln":
        P.ln_structured(m[0], "weight", amount=0.5, n=2, dim=0)
        P.ln_structured(m[0], "weight", amount=1, n=1, dim=1)
    elif how == "global":
        P.l1_unstructured(m[0], "weight", amount=0.1)
        P.global_unstructured([(m[0], "weight"), (m[3], "weight")],
                              pruning_method=P.L1Unstructured, amount=0.4)
    elif how == "custom":
        mask = np.cos(np.arange(48.0)).reshape(3, 16) > 0
        P.custom_from_mask(m[3], "weight", lib.tensor(mask))
        P.l1_unstructured(m[3], "weight", amount=0.25)
    elif how == "remove":
        P.l1_unstructured(m[3], "weight", amount=0.5)
        P.remove(m[3], "weight")


@pytest.mark.parametrize("how", ["l1", "l1_twice", "ln", "global", "custom", "remove"])
def test_prune_equals_torch(how):
    s, t = _pair()
    x = RNG.standard_normal((5, 2, 4, 4))
    res = []
    for lib, m in ((skiff, s), (torch, t)):
        _prune_both(how, lib, m)
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = (m(lib.tensor(x)) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        res.append({"losses": losses, "params": dict(m.named_parameters()),
                    "buffers": dict(m.named_buffers()), "state": m.state_dict(),
                    "pruned": lib.nn.utils.prune.is_pruned(m)})
    a, b = res
    np.testing.assert_allclose(a["losses"], b["losses"], rtol=1e-13)
    assert list(a["params"]) == list(b["params"])
    assert list(a["buffers"]) == list(b["buffers"])
    assert sorted(a["state"]) == sorted(b["state"])
    assert a["pruned"] == b["pruned"]
    for k in b["state"]:
        np.testing.assert_allclose(np.asarray(a["state"][k]), b["state"][k].detach().numpy(),
                                   rtol=1e-12, atol=1e-14, err_msg=k)
    for k in b["params"]:
        np.testing.assert_allclose(np.asarray(a["params"][k].grad),
                                   b["params"][k].grad.numpy(), rtol=1e-11, atol=1e-14,
                                   err_msg=k)


def test_prune_errors():
    lin = skiff.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="pruned before"):
        skiff.nn.utils.prune.remove(lin, "weight")
    with pytest.raises(AttributeError, match="no parameter"):
        skiff.nn.utils.prune.l1_unstructured(lin, "wieght", amount=1)
    with pytest.raises(ValueError, match="amount"):
        skiff.nn.utils.prune.l1_unstructured(lin, "weight", amount=7)
