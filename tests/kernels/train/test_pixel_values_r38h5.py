"""Round 38 (h5): ``{"pixel_values": ..., "labels": ...}`` items, what a transformers image
processor and its data collator give (and a ``datasets`` image set with ``with_transform``),
train a skiff model of ``forward(x)`` as a torch loop over the same loader trains its twin;
they were refused ("a dict batch needs an input key (x, input, ...)"). ``evaluate`` and
``predict`` read them alike. The oracle: torch 2.13, the same weights and loader."""

from __future__ import annotations

import numpy as np
import torch

import skiff
from skiff import nn

LR, BATCH, EPOCHS = 0.1, 6, 2


class _Images(torch.utils.data.Dataset):
    def __init__(self, n=18):
        rng = np.random.default_rng(0)
        self.x = rng.normal(size=(n, 1, 6, 6)).astype("f4")
        self.y = (self.x[:, 0, :3].mean(axis=(1, 2)) > 0).astype("i8") + \
            (self.x[:, 0, 3:].mean(axis=(1, 2)) > 0.2)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"pixel_values": self.x[i], "labels": int(self.y[i])}


def _models():
    skiff.seed(1)
    ours = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(48, 3))
    twin = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(48, 3))
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in ours.state_dict().items()})
    return ours, twin


def test_pixel_values_items_train_evaluate_and_predict_as_torch():
    ours, twin = _models()
    loader = torch.utils.data.DataLoader(_Images(), batch_size=BATCH, shuffle=False)
    trainer = skiff.Trainer(ours, optimizer="sgd", lr=LR, schedule="constant", clip=None)
    result = trainer.train(loader, epochs=EPOCHS)
    opt = torch.optim.SGD(twin.parameters(), lr=LR, momentum=0.9)
    losses = []
    for _ in range(EPOCHS):
        for b in loader:
            loss = torch.nn.functional.cross_entropy(twin(b["pixel_values"]), b["labels"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    np.testing.assert_allclose(result.losses, losses, rtol=1e-5)
    with torch.no_grad():
        logits = torch.cat([twin(b["pixel_values"]) for b in loader])
        labels = torch.cat([b["labels"] for b in loader])
        want_loss = torch.nn.functional.cross_entropy(logits, labels).item()
    np.testing.assert_allclose(trainer.predict(loader), logits.numpy(), rtol=1e-4, atol=1e-5)
    got = trainer.evaluate(loader)
    np.testing.assert_allclose(got["val_loss"], want_loss, rtol=1e-5)
    assert got["val_accuracy"] == (logits.argmax(1) == labels).sum().item() / len(labels)


class _Masked(nn.Module):
    """A user's text classifier of transformers' inputs (no ``labels`` in its forward: the
    Trainer takes the loss), returning ``{"logits": ...}`` as an HF model does."""

    def __init__(self):
        super().__init__()
        self.emb, self.head = nn.Embedding(10, 4), nn.Linear(4, 3)

    def forward(self, input_ids, attention_mask):
        return {"logits": self.head((self.emb(input_ids) * attention_mask[..., None]).sum(1))}


def test_input_ids_with_attention_mask_go_in_by_name_in_train_and_predict():
    """The mask was dropped: training called ``model(input_ids)`` (a missing argument here;
    a forward with ``attention_mask=None`` trained on the padding), ``predict`` too, and an
    output dict failed predict ("zero-dimensional arrays cannot be concatenated")."""
    rng = np.random.default_rng(0)
    ids, lab = rng.integers(0, 10, (12, 5)), rng.integers(0, 3, 12)
    mask = (rng.random((12, 5)) > 0.3).astype("f4")
    items = [{"input_ids": ids[i], "attention_mask": mask[i], "labels": lab[i]}
             for i in range(12)]
    skiff.seed(0)
    ours = _Masked()
    emb, head = torch.nn.Embedding(10, 4), torch.nn.Linear(4, 3)
    state = {k: torch.tensor(np.asarray(v)) for k, v in ours.state_dict().items()}
    emb.weight.data, head.weight.data, head.bias.data = (state["emb.weight"],
                                                         state["head.weight"], state["head.bias"])
    trainer = skiff.Trainer(ours, optimizer="sgd", lr=LR, batch_size=4, schedule="constant",
                            clip=None, shuffle=False)
    result = trainer.train(items, epochs=EPOCHS)
    opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=LR, momentum=0.9)
    twin = lambda i, m: head((emb(torch.tensor(i)) * torch.tensor(m)[..., None]).sum(1))  # noqa: E731
    losses = []
    for _ in range(EPOCHS):
        for s in range(0, 12, 4):
            loss = torch.nn.functional.cross_entropy(twin(ids[s:s + 4], mask[s:s + 4]),
                                                     torch.tensor(lab[s:s + 4]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    np.testing.assert_allclose(result.losses, losses, rtol=1e-5)
    with torch.no_grad():
        want = twin(ids, mask).numpy()
    np.testing.assert_allclose(trainer.predict(items), want, rtol=1e-4, atol=1e-5)
