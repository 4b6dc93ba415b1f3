"""Round 44 (h19): ``predict`` on rows (or class folders) whose true class training never saw.
Their rows counted wrong in the accuracy but were left out of the macro F1 and confusion
without a word: 4 'delta' rows of 12 gave "accuracy 66.7%" beside "macro F1 1.0000"
(scikit-learn's f1_score(average="macro") on the same rows: 0.6151). The oracle here is
scikit-learn's definition written out: the mean F1 over the labels among the truths or the
predictions. The models are untrained (saved as a run saves them): only the scoring is
under test."""

import json

import numpy as np
from PIL import Image

from skiff.kernels.train import models
from skiff.kernels.train.image_predict import predict_images
from skiff.kernels.train.table_predict import predict_table
from skiff.kernels.train.tables import read_table


def _macro_f1(truth, pred):
    labels = sorted(set(truth) | set(pred))
    f1 = []
    for c in labels:
        tp = sum(t == c and p == c for t, p in zip(truth, pred))
        fp = sum(t != c and p == c for t, p in zip(truth, pred))
        fn = sum(t == c and p != c for t, p in zip(truth, pred))
        f1.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return float(np.mean(f1))


def test_a_table_row_of_an_unseen_class_is_in_the_f1(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 2))
    train = tmp_path / "train.csv"
    train.write_text("a,b,label\n" + "".join(
        f"{u:.3f},{v:.3f},{'pq'[int(u > 0)]}\n" for u, v in x))
    table = read_table(train)
    run = tmp_path / "run"
    run.mkdir()
    (run / "table.json").write_text(json.dumps(table.to_json()))
    models.get("mlp", in_features=2, out_features=2).save(str(run / "model.npz"))
    truth = ["p", "q", "delta", "p", "delta", "q", "q", "p"]
    new = tmp_path / "new.csv"
    new.write_text("label,b,a\n" + "".join(f"{t},{v:.3f},{u:.3f}\n"
                                           for t, (u, v) in zip(truth, x[:8])))
    got = predict_table(run, new)
    assert abs(got.score["f1"] - _macro_f1(truth, got.predictions)) < 1e-9, got.score
    assert sum(map(sum, got.score["confusion"])) == len(truth)
    assert any("2 of 8 rows are of a class training never saw ('delta')" in n
               for n in got.notes), got.notes


def test_an_unseen_class_folder_is_in_the_f1(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    models.get("cnn", in_channels=1, num_classes=2, image_size=8).save(str(run / "model.npz"))
    (run / "images.json").write_text(json.dumps({"classes": ["a", "b"], "size": 8,
                                                 "channels": 1, "mean": [0.5], "std": [0.2]}))
    rng = np.random.default_rng(1)
    for name, count in (("a", 2), ("b", 2), ("c", 3)):
        (tmp_path / "new" / name).mkdir(parents=True)
        for k in range(count):
            Image.fromarray((rng.random((8, 8)) * 255).astype(np.uint8)).save(
                tmp_path / "new" / name / f"{k}.png")
    got = predict_images(run, tmp_path / "new")
    assert got.truth.count("c") == 3
    assert abs(got.score["f1"] - _macro_f1(got.truth, got.predictions)) < 1e-9, got.score
    assert sum(map(sum, got.score["confusion"])) == 7


def test_a_category_in_another_case_is_said_so():
    # trained on 'true'/'false', new rows from Excel say 'TRUE': unseen (one-hot compares the
    # cells as they are, as scikit-learn's OneHotEncoder), and the note says why
    from skiff.kernels.train.tables import apply_encoding

    spec = [{"name": "flag", "kind": "categories", "values": ["false", "true"]}]
    x, notes = apply_encoding("new.csv", spec, lambda _: ["TRUE", "false", "maybe"], [2, 3, 4])
    np.testing.assert_array_equal(x, [[0, 0], [1, 0], [0, 0]])
    assert "(the case differs: 'TRUE' is 'true' in training)" in notes[0], notes
    assert "'maybe' is" not in notes[0]
