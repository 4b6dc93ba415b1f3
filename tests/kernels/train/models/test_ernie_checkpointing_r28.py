"""``model.gradient_checkpointing_enable()`` (round 28; was an AttributeError): the
gradients with each layer recomputed equal those without and torch's through transformers'
model with its own gradient checkpointing (dense and MoE with the router's balancing loss);
``skiff.Trainer`` keeps it on (it set ``recompute`` back to the plan's choice)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "moe-shared"])
def test_gradient_checkpointing_same_gradients(tmp_path, shape):
    folder, _ = make_checkpoint(tmp_path, shape)
    if shape.startswith("moe"):  # the router's aux loss through the recomputed layers too
        cfg = json.loads((folder / "config.json").read_text())
        cfg.update(output_router_logits=True, router_aux_loss_coef=0.05)
        (folder / "config.json").write_text(json.dumps(cfg))
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder)
    ref.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ref.train()
    ids = random_ids(ref.config.vocab_size, (2, 11), seed=4)
    tloss = ref(torch.tensor(ids), labels=torch.tensor(ids)).loss
    tloss.backward()
    theirs = {n: p.grad.numpy() for n, p in ref.named_parameters() if p.grad is not None}

    model = from_pretrained(folder)
    grads = []
    for on in (False, True):
        if on:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={
                "use_reentrant": False})
        assert model.is_gradient_checkpointing == on
        for p in model.parameters():
            p._grad = None
        loss = model(ids, labels=ids).loss
        assert abs(loss.item() - tloss.item()) <= 1e-5 * tloss.item()
        loss.backward()
        grads.append({n: np.asarray(p.grad.numpy()) for n, p in model.named_parameters()
                      if p.grad is not None})
    assert sorted(grads[1]) == sorted(grads[0])
    for n, g in grads[1].items():
        np.testing.assert_allclose(g, grads[0][n], atol=1e-6, err_msg=n)
        if n in theirs:
            np.testing.assert_allclose(g, theirs[n], atol=1e-4 * max(np.abs(theirs[n]).max(),
                                                                     1e-3), err_msg=n)
    for n, g in theirs.items():  # transformers' fused experts: skiff's per expert, stacked
        if n.endswith("experts.gate_up_proj"):
            E = g.shape[0]
            mine = np.stack([np.concatenate([grads[1][f"{n[:-13]}.{e}.gate_proj.weight"],
                                             grads[1][f"{n[:-13]}.{e}.up_proj.weight"]])
                             for e in range(E)])
        elif n.endswith("experts.down_proj"):
            mine = np.stack([grads[1][f"{n[:-10]}.{e}.down_proj.weight"]
                             for e in range(g.shape[0])])
        else:
            assert n in grads[1], n
            continue
        np.testing.assert_allclose(mine, g, atol=1e-4 * np.abs(g).max(), err_msg=n)


def test_trainer_keeps_gradient_checkpointing(tmp_path):
    from skiff.kernels.train.trainer import Trainer

    folder, _ = make_checkpoint(tmp_path, "dense-gqa-tied")
    model = from_pretrained(folder)
    model.gradient_checkpointing_enable()
    ids = random_ids(model.config.vocab_size, (4, 9), seed=2)
    Trainer(model, lr=1e-3, batch_size=2).train((ids[:, :-1], ids[:, 1:]), steps=1)
    assert model.recompute
    model.gradient_checkpointing_disable()
    assert not model.recompute and not model.is_gradient_checkpointing
