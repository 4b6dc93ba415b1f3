"""DataFrames and Series as the Trainer's data (most tables arrive that way): their values
are read (they have a ``.get`` of their own, which was taken for cupy's), booleans are 0/1,
text and category columns are named with how to encode them."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core import nn
from skiff.kernels.train.trainer import Trainer

pd = pytest.importorskip("pandas")


def _frame():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((120, 3))
    df = pd.DataFrame(x, columns=["a", "b", "c"])
    df["n"] = rng.integers(0, 5, 120)  # an integer column beside floats
    df["flag"] = x[:, 0] > 0
    df["label"] = (x[:, 0] + x[:, 1] > 0).astype(int)
    df["city"] = np.where(df.label == 1, "Paris", "Lyon")
    return df


def test_a_dataframe_and_a_series_train_as_their_arrays_do():
    df = _frame()
    features = ["a", "b", "c", "n", "flag"]
    x = df[features].to_numpy(dtype=np.float64)
    y = df["label"].to_numpy()
    results = []
    for data in ((df[features], df["label"]), (x, y)):
        net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
        net.load_state_dict({k: np.full_like(v, 0.1) for k, v in net.state_dict().items()})
        trainer = Trainer(net, lr=1e-2, batch_size=16, shuffle=False)
        results.append(trainer.train(data, epochs=2, val_split=0.25))
        assert trainer.predict(df[features]).shape == (120, 2)
    a, b = results
    assert [r["loss"] for r in a.history] == [r["loss"] for r in b.history]
    assert a.val_history[-1]["val_accuracy"] == b.val_history[-1]["val_accuracy"]


def test_text_columns_and_word_labels_are_named():
    df = _frame()
    net = nn.Sequential(nn.Linear(4, 2))
    with pytest.raises(TypeError, match="column 'city' is not numeric: encode text"):
        Trainer(net).train((df[["a", "b", "c", "city"]], df["label"]), epochs=1)
    with pytest.raises(TypeError, match="column 'c2' is not numeric"):
        Trainer(net).train((df[["a", "b", "c"]].assign(c2=df.city.astype("category")),
                            df["label"]), epochs=1)
    with pytest.raises(TypeError, match="map words to class ids first"):
        Trainer(nn.Sequential(nn.Linear(3, 2))).train((df[["a", "b", "c"]], df["city"]),
                                                     epochs=1)


def test_a_dataframe_alone_is_told_to_give_features_and_target_apart():
    df = _frame()[["a", "b", "label"]]
    with pytest.raises(TypeError, match=r"pass them apart, e.g. trainer.train\(\(df.drop\("
                                        r"columns=\['label'\]\), df\['label'\]\)\)"):
        Trainer(nn.Sequential(nn.Linear(2, 2))).train(df, epochs=1)
