"""Data sets, the seeded loader, packing, and the shipped corpus."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.data import (
    ArrayDataset,
    DataLoader,
    PackedBatch,
    TextDataset,
    corpus_text,
    pack_sequences,
    token_count,
)


def test_corpus_is_shipped_and_sizeable():
    text = corpus_text("classics")
    assert 50_000 <= len(text.encode()) <= 200_000
    assert "Shall I compare thee to a summer's day?" in corpus_text("sonnets")
    with pytest.raises(ValueError, match="sonnets"):
        corpus_text("nope")


def test_array_dataset_rows_and_mismatch():
    x = np.arange(12.0).reshape(6, 2)
    y = np.arange(6)
    ds = ArrayDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[4]
    np.testing.assert_array_equal(xi, x[4])
    assert yi == 4
    with pytest.raises(ValueError, match=r"\(6, 2\).*\(5,\)"):
        ArrayDataset(x, np.arange(5))


def test_text_dataset_blocks_are_shifted_windows():
    text = "abcdefghijklmnopqrstuvwxyz" * 3
    ds = TextDataset(text, block_size=8)
    assert len(ds) == (len(text) - 1) // 8
    x, y = ds[2]
    assert TextDataset.decode(x) == text[16:24]
    assert TextDataset.decode(y) == text[17:25]
    bx, by = ds.take(np.array([2, 0]))
    np.testing.assert_array_equal(bx[0], x)
    np.testing.assert_array_equal(by[1], ds[0][1])


def test_text_dataset_from_file_and_corpus_name(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("hello world, hello again\n" * 4)
    ds = TextDataset(str(path), block_size=4)
    assert ds.source == "t.txt" and len(ds) > 0
    assert TextDataset("sonnets", block_size=64).source == "sonnets"
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        TextDataset(str(tmp_path / "missing.txt"))


def test_pack_sequences_layout():
    seqs = [np.array([1, 2, 3, 4]), np.array([5, 6]), np.array([7, 8, 9])]
    pb = pack_sequences(seqs)
    np.testing.assert_array_equal(pb.tokens, [1, 2, 3, 5, 7, 8])
    np.testing.assert_array_equal(pb.targets, [2, 3, 4, 6, 8, 9])
    np.testing.assert_array_equal(pb.cu_seqlens, [0, 3, 4, 6])
    np.testing.assert_array_equal(pb.positions, [0, 1, 2, 0, 0, 1])
    assert token_count(pb) == 6 and len(pb) == 3


def test_packed_text_dataset_respects_paragraphs():
    text = "first para line\nmore\n\nsecond\n\n" + "x" * 40
    ds = TextDataset(text, block_size=16, packed=True)
    loader = DataLoader(ds, batch_size=len(ds), shuffle=False)
    (batch,) = list(loader)
    assert isinstance(batch, PackedBatch)
    lens = np.diff(batch.cu_seqlens)
    assert lens.max() <= 16
    # no sequence crosses a paragraph: "second\n" is a sequence on its own
    starts = [TextDataset.decode(batch.tokens[a:b]) for a, b in
              zip(batch.cu_seqlens[:-1], batch.cu_seqlens[1:])]
    assert "second" in starts


@pytest.mark.parametrize("drop_last", [False, True])
def test_loader_covers_each_item_once_per_epoch(drop_last):
    ds = ArrayDataset(np.arange(10))
    loader = DataLoader(ds, batch_size=4, shuffle=True, seed=3, drop_last=drop_last)
    seen = np.concatenate(list(loader))
    assert len(loader) == (2 if drop_last else 3)
    if not drop_last:
        assert sorted(seen.tolist()) == list(range(10))
    assert loader.epoch == 1
    again = np.concatenate(list(DataLoader(ds, 4, shuffle=True, seed=3, drop_last=drop_last)))
    np.testing.assert_array_equal(seen, again)
    other = np.concatenate(list(DataLoader(ds, 4, shuffle=True, seed=4, drop_last=drop_last)))
    assert not np.array_equal(seen, other)


def test_loader_draws_an_epochs_order_once(monkeypatch):
    """A batch used to redraw the whole epoch's permutation (26 ms a step at 1.5M rows)."""
    ds = ArrayDataset(np.arange(1000))
    ref = [b.tolist() for b in DataLoader(ds, batch_size=7, seed=5)]
    draws = []
    real = np.random.default_rng
    monkeypatch.setattr(np.random, "default_rng", lambda *a: draws.append(a) or real(*a))
    loader = DataLoader(ds, batch_size=7, seed=5)
    assert [b.tolist() for b in loader] == ref          # the same batches as before
    assert len(draws) == 1                              # one draw for the epoch's 143 batches
    list(loader)                                        # the next epoch draws its own order
    assert len(draws) == 2 and not np.array_equal(loader.order(0), loader.order(1))
    loader.seed = 6                                     # a new seed is a new order
    assert not np.array_equal(loader.order(1), real([5, 1]).permutation(1000))


def test_loader_resume_gives_the_same_batches():
    ds = ArrayDataset(np.arange(20))
    full = DataLoader(ds, batch_size=3, seed=1)
    ref = [b.tolist() for _ in range(2) for b in full]
    part = DataLoader(ds, batch_size=3, seed=1)
    it = iter(part)
    got = [next(it).tolist() for _ in range(4)]
    state = part.state_dict()
    resumed = DataLoader(ds, batch_size=3, seed=99)
    resumed.load_state_dict(state)
    got += [b.tolist() for b in resumed]
    got += [b.tolist() for b in resumed]
    assert got == ref


def test_loader_shards_by_rank():
    ds = ArrayDataset(np.arange(16))
    whole = list(DataLoader(ds, batch_size=8, seed=0))
    r0 = list(DataLoader(ds, batch_size=8, seed=0, rank=0, world_size=2))
    r1 = list(DataLoader(ds, batch_size=8, seed=0, rank=1, world_size=2))
    for w, a, b in zip(whole, r0, r1):
        assert sorted(np.concatenate([a, b]).tolist()) == sorted(w.tolist())
        assert len(a) == len(b) == 4


def test_empty_dataset_is_refused():
    with pytest.raises(ValueError, match="empty"):
        DataLoader(ArrayDataset(np.zeros((0, 3))), batch_size=2)


def test_a_torch_style_dataloader_trains_evaluates_and_predicts_at_its_batch_size():
    """``skiff.utils.data.DataLoader`` (what a torch program already has) in place of the data:
    before, "the dataset must be (X, y) arrays or a dataset ..., got DataLoader"."""
    import skiff
    from skiff import nn
    from skiff.utils.data import DataLoader as TorchLoader
    from skiff.utils.data import TensorDataset

    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    ds = TensorDataset(skiff.tensor(x), skiff.tensor(y))
    trainer = skiff.Trainer(nn.Linear(3, 2), lr=0.05, batch_size=32)
    result = trainer.train(TorchLoader(ds, batch_size=20, shuffle=True), epochs=3,
                           val_dataset=TorchLoader(ds, batch_size=50))
    assert result.steps == 3 * 120 // 20 and trainer.batch_size == 32  # the loader's, this call
    assert set(trainer.evaluate(TorchLoader(ds, batch_size=7))) == {"val_loss", "val_accuracy"}
    assert trainer.predict(TorchLoader(TensorDataset(skiff.tensor(x)))).shape == (120, 2)
    with pytest.raises(TypeError, match="its own collate_fn.*pass the loader's dataset"):
        trainer.train(TorchLoader(ds, batch_size=20, collate_fn=list), epochs=1)
