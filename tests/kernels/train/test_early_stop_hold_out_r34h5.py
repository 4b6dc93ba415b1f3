"""Round 34 (h5): ``Trainer(..., early_stopping=N).train(text)`` with no validation data
raised, while ``python -m skiff train ... --early-stop N`` on a text (or an image folder)
holds its last tenth out. Now one rule for both fronts: a text or an image folder of 20+
images holds its last tenth out (said in the log and on the result), arrays and tables get
the error naming ``val_split=``. The oracle for the split is the command line's own builder
(``entry.build_from_config``) and the text cut by hand; the stop step is the one of the
same run given the line's validation set explicitly."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.core import nn
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import TextDataset, split_off
from skiff.kernels.train.trainer import Trainer

BLOCK = 16


class _Logs(NullReporter):
    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append(message)


def _text() -> str:
    rng = np.random.default_rng(0)
    words = ["the cat", "a dog", "sat on", "the mat", "ran off", "quickly", "slowly"]
    return " ".join(rng.choice(words, 220)) + "\n"


def _model():
    with train_random.using(train_random.new_generator(0)):
        return nn.Sequential(nn.Embedding(256, 16), nn.Linear(16, 256))


def _run(data, **kw):
    rep = _Logs()
    trainer = Trainer(_model(), lr=5e-2, batch_size=8, early_stopping=1, seed=0,
                      reporter=rep)
    return trainer.train(data, epochs=12, **kw), rep.lines


def test_a_text_holds_out_what_the_line_holds_out_and_stops_at_the_same_step(tmp_path):
    from skiff.kernels.train.entry import build_from_config

    path = tmp_path / "corpus.txt"
    text = _text()
    path.write_text(text)
    line = build_from_config({"model": "gpt-mini", "data": str(path), "early_stopping": 1,
                              "block_size": BLOCK, "seed": 0})
    train, val = split_off(TextDataset(str(path), block_size=BLOCK), 0.1)
    cut = int(len(text) * 0.9)
    assert train.text == line["dataset"].text == text[:cut]
    assert val.text == line["val_dataset"].text == text[cut:]

    result, logs = _run(TextDataset(str(path), block_size=BLOCK))
    explicit, _ = _run(line["dataset"], val_dataset=line["val_dataset"])
    said = [x for x in logs if x.startswith("early_stopping=1 and no validation data")]
    assert said and f"{len(train)} items train, {len(val)} validate" in said[0]
    assert said[0] in result.notes
    assert result.stopped and result.stopped.startswith("early stopping")
    assert (result.steps, result.best_step) == (explicit.steps, explicit.best_step)
    assert [v["val_loss"] for v in result.val_history] == \
        [v["val_loss"] for v in explicit.val_history]
    # val_split=0.1 by hand is the same cut (it was a Subset of blocks, not the text's end)
    by_hand, _ = _run(TextDataset(str(path), block_size=BLOCK), val_split=0.1)
    assert [v["val_loss"] for v in by_hand.val_history] == \
        [v["val_loss"] for v in explicit.val_history]


def test_arrays_still_need_a_validation_set_named_in_the_error():
    x = np.random.default_rng(0).standard_normal((40, 3)).astype("f4")
    y = x.sum(1).astype("f4")
    with pytest.raises(ValueError, match=r"pass val_dataset=\.\.\. or val_split=0\.1 .*"
                                         r"arrays, tables and other data sets do not"):
        Trainer(nn.Sequential(nn.Linear(3, 1)), early_stopping=2).train((x, y), epochs=1)


def test_a_text_too_short_to_hold_a_tenth_says_so():
    with pytest.raises(ValueError, match="val_split=0.1 of a text of .* leaves"):
        Trainer(_model(), early_stopping=2).train(TextDataset("x" * 60, block_size=BLOCK),
                                                  epochs=1)


def _folder(root, per_class: int):
    from PIL import Image

    rng = np.random.default_rng(0)
    for c, top in (("cat", 255), ("dog", 120)):
        (root / c).mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray((rng.random((8, 8, 3)) * top).astype("u1")).save(root / c / f"{i}.png")


def test_an_image_folder_holds_out_what_the_line_holds_out(tmp_path):
    pytest.importorskip("PIL")
    from skiff.kernels.train.entry import build_from_config
    from skiff.kernels.train.image_folder import ImageFolder

    _folder(tmp_path / "imgs", 14)
    line = build_from_config({"model": "cnn", "data": str(tmp_path / "imgs"),
                              "early_stopping": 2, "image_size": 8, "seed": 0})
    folder = ImageFolder(str(tmp_path / "imgs"), size=8)
    train, val = split_off(folder, 0.1)
    np.testing.assert_array_equal(val.index, line["val_dataset"].index)
    rep = _Logs()
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 2))
    result = Trainer(model, early_stopping=2, batch_size=8, reporter=rep).train(folder,
                                                                                epochs=2)
    assert len(result.val_history) == 2
    assert any("25 items train, 3 validate" in line for line in rep.lines)


def test_a_small_image_folder_names_the_fraction_to_give(tmp_path):
    pytest.importorskip("PIL")
    from skiff.kernels.train.image_folder import ImageFolder

    _folder(tmp_path / "imgs", 6)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 2))
    with pytest.raises(ValueError, match=r"12 images, too few .* --val-split 0\.25 on the line"):
        Trainer(model, early_stopping=2).train(ImageFolder(str(tmp_path / "imgs"), size=8))
