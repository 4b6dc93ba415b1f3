"""Round 36 (h5): token classification (a tag per token, ``-100`` on padding) gets per-tag
metrics.

``evaluate(per_class=True)`` and ``result.class_metrics`` reported one class per row only:
a tagger's validation had its accuracy and nothing per tag. Now targets ``(N, T)`` against
outputs ``(N, T, C)`` of at most 50 classes (tags, not a language model's vocabulary) count
each scored token: precision, recall, F1, support per tag, the confusion matrix and the
macro F1; the padded tokens count nowhere.

The oracles: torch 2.13's ``CrossEntropyLoss(ignore_index=-100)`` for the validation loss,
and the confusion counted with numpy from ``predict``'s logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn

V, T, C = 30, 12, 5


def _data(n, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, V, (n, T))
    tags = ((ids + rng.integers(0, 2, (n, T))) % C).astype(np.int64)
    for r in range(n):  # padding: the last 0..5 tokens of each row
        tags[r, T - rng.integers(0, 6):] = -100
    return ids, tags


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.out = nn.Embedding(V, 16), nn.Linear(16, C)

    def forward(self, x):
        return self.out(self.emb(x))


def test_per_tag_metrics_count_the_scored_tokens():
    skiff.seed(0)
    trainer = skiff.Trainer(Tagger(), batch_size=16, lr=0.05, seed=1)
    val = _data(24, 1)
    result = trainer.train(_data(64, 0), epochs=3, val_dataset=val)
    logits = trainer.predict(val[0])
    keep = val[1] != -100
    truth, pred = val[1][keep], logits.argmax(-1)[keep]
    conf = np.zeros((C, C), np.int64)
    np.add.at(conf, (truth, pred), 1)
    hits = np.diag(conf)
    precision = hits / np.maximum(conf.sum(0), 1)
    recall = hits / conf.sum(1)
    f1 = np.where(precision + recall > 0, 2 * precision * recall /
                  np.maximum(precision + recall, 1e-12), 0)
    got = trainer.evaluate(val, per_class=True)
    assert got["confusion"] == conf.tolist()
    np.testing.assert_allclose(got["per_class"]["precision"], precision, atol=1e-6)
    np.testing.assert_allclose(got["per_class"]["recall"], recall, atol=1e-6)
    assert got["per_class"]["support"] == conf.sum(1).tolist()
    assert got["val_f1"] == pytest.approx(f1.mean(), rel=1e-9)
    assert got["val_accuracy"] == pytest.approx(hits.sum() / keep.sum())
    assert result.class_metrics["confusion"] == conf.tolist()  # the run's last validation
    want = torch.nn.CrossEntropyLoss(ignore_index=-100)(
        torch.tensor(logits).reshape(-1, C), torch.tensor(val[1]).reshape(-1)).item()
    assert got["val_loss"] == pytest.approx(want, rel=1e-5)


def test_a_language_models_vocabulary_gets_no_per_class_report():
    skiff.seed(0)
    ids = np.random.default_rng(0).integers(0, 64, (16, 9))
    model = nn.Sequential(nn.Embedding(64, 8), nn.Linear(8, 64))  # 64 classes: a vocabulary
    trainer = skiff.Trainer(model, batch_size=8)
    trainer.train((ids[:, :-1], ids[:, 1:]), epochs=1)
    got = trainer.evaluate((ids[:, :-1], ids[:, 1:]), per_class=True)
    assert set(got) == {"val_loss", "val_accuracy"}
