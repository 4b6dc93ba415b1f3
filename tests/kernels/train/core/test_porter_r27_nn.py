"""Round 27: the loss and layer arguments a torch porter passes (against torch 2.13, float64):
``BCEWithLogitsLoss(weight=, pos_weight=)``, ``BCELoss(weight=)`` and the functional forms in
torch's argument order, ``CrossEntropyLoss(weight=)`` keeping float64 weights, and
``Embedding.from_pretrained`` (frozen or not, a non-zero padding row kept), ``Module.half`` and
``register_module``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(31)
Z = RNG.standard_normal((6, 3)) * 2
Y = (RNG.random((6, 3)) < 0.4).astype(np.float64)
W = RNG.uniform(0.2, 2.0, (6, 3))
PW = np.array([3.0, 0.5, 1.5])


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _loss_and_grad(lib, make, x):
    z = lib.tensor(x, requires_grad=True)
    loss = make(lib, z)
    loss.backward()
    return _np(loss), _np(z.grad)


LOSSES = {
    "bce_logits_pos_weight": lambda L, z: L.nn.BCEWithLogitsLoss(pos_weight=L.tensor(PW))(
        z, L.tensor(Y)),
    "bce_logits_weight_sum": lambda L, z: L.nn.BCEWithLogitsLoss(
        weight=L.tensor(W), reduction="sum", pos_weight=L.tensor(PW))(z, L.tensor(Y)),
    "bce_logits_weight_row": lambda L, z: L.nn.BCEWithLogitsLoss(L.tensor(PW))(z, L.tensor(Y)),
    "F_bce_logits_positional": lambda L, z: L.nn.functional.binary_cross_entropy_with_logits(
        z, L.tensor(Y), L.tensor(W), pos_weight=L.tensor(PW), reduction="none").sum(),
    "bce_weight": lambda L, z: L.nn.BCELoss(weight=L.tensor(W))(z.sigmoid(), L.tensor(Y)),
    "F_bce_positional": lambda L, z: L.nn.functional.binary_cross_entropy(
        z.sigmoid(), L.tensor(Y), L.tensor(W[0])),
    "ce_weight_float64": lambda L, z: L.nn.CrossEntropyLoss(
        weight=L.tensor(np.array([0.3, 1.7, 1.1])))(z, L.tensor(np.array([0, 2, 1, 1, 0, 2]))),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_arguments(name):
    ls, gs = _loss_and_grad(skiff, LOSSES[name], Z)
    lt, gt = _loss_and_grad(torch, LOSSES[name], Z)
    np.testing.assert_allclose(ls, lt, rtol=1e-13)
    np.testing.assert_allclose(gs, gt, rtol=1e-12, atol=1e-15)


def test_skiff_reduction_first_still_works():
    s = skiff.nn.BCEWithLogitsLoss("sum")(skiff.tensor(Z), skiff.tensor(Y))
    t = torch.nn.BCEWithLogitsLoss(reduction="sum")(torch.tensor(Z), torch.tensor(Y))
    np.testing.assert_allclose(_np(s), _np(t), rtol=1e-13)
    s = skiff.nn.functional.binary_cross_entropy(skiff.tensor(Z).sigmoid(), skiff.tensor(Y),
                                                 "sum")
    t = torch.nn.functional.binary_cross_entropy(torch.tensor(Z).sigmoid(), torch.tensor(Y),
                                                 reduction="sum")
    np.testing.assert_allclose(_np(s), _np(t), rtol=1e-13)


@pytest.mark.parametrize("freeze", [True, False])
def test_embedding_from_pretrained(freeze):
    table = RNG.standard_normal((6, 4))
    idx = np.array([[1, 2, 5], [1, 0, 3]])
    res = []
    for lib in (skiff, torch):
        emb = lib.nn.Embedding.from_pretrained(lib.tensor(table), freeze=freeze, padding_idx=1)
        assert emb.weight.requires_grad == (not freeze)
        out = emb(lib.tensor(idx))
        if not freeze:
            (out ** 2).sum().backward()
        res.append((_np(out), None if freeze else _np(emb.weight.grad)))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-15)  # row 1 kept, not zeroed
    if not freeze:
        np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-14)
        assert not res[0][1][1].any()  # no gradient to the padding row
    with pytest.raises(ValueError, match="2-dimensional"):
        skiff.nn.Embedding.from_pretrained(skiff.tensor(table[0]))


def test_module_half_and_register_module():
    for lib in (skiff, torch):
        m = lib.nn.Module()
        m.register_module("lin", lib.nn.Linear(2, 3))
        assert [n for n, _ in m.named_parameters()] == ["lin.weight", "lin.bias"]
        m.half()
        assert str(m.lin.weight.dtype).replace("torch.", "") == "float16"
