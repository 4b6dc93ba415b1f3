"""The plan costs the sequences the run trains on (round 32, h11).

``python -m skiff train ernie chat.jsonl --from DIR --block-size 64`` planned "4 sequences x
256 tokens" (ERNIE's config block_size) and 8.5x the activation memory; the Trainer's plan
read the model's context, not the data's. The oracle is the data itself: the width of the
token blocks handed to ``train`` (and ChatDataset's own block size)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.train import models
from skiff.kernels.train.data import ArrayDataset
from skiff.kernels.train.trainer import Trainer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))


def _plan_seq(model, data, batch=2) -> int:
    trainer = Trainer(model, batch_size=batch, lr=1e-3, seed=0)
    trainer.train(data, steps=1)
    return trainer.plan["model"]["seq_len"]


def test_gpt_token_blocks_of_16_are_planned_as_16():
    model = models.get("gpt-mini")
    assert model.config.block_size == 128           # what was planned before
    rng = np.random.default_rng(0)
    ids = rng.integers(0, model.config.vocab_size, size=(6, 17))
    x, y = ids[:, :-1], ids[:, 1:]
    assert _plan_seq(model, ArrayDataset(x, y)) == x.shape[1] == 16


def test_ernie_chat_rows_at_block_64_are_planned_as_64(tmp_path):
    pytest.importorskip("transformers")
    from ernie_reference import make_sentencepiece_checkpoint

    from skiff.kernels.train.models.chat import ChatDataset

    make_sentencepiece_checkpoint(tmp_path / "ck")
    model = models.get("ernie", path=str(tmp_path / "ck"))
    assert model.config.block_size == 256
    rows = [{"messages": [{"role": "user", "content": f"What is {i} plus two?"},
                          {"role": "assistant", "content": f"{i + 2}."}]} for i in range(4)]
    data = ChatDataset(rows, model.tokenizer, 64)
    assert _plan_seq(model, data) == data.block_size == 64
