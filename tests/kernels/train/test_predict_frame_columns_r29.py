"""``Trainer.predict(df)`` finds a DataFrame's features by name: a frame with its columns in
another order predicted from the wrong columns, silently (round 29, a pandas user). Oracle:
torch's forward of the same weights on the columns in the training order."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402


def _trained():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"age": rng.uniform(0, 1, 120), "fare": rng.uniform(0, 1, 120),
                       "rooms": rng.integers(1, 5, 120).astype(float)})
    y = (df["age"] + 2 * df["fare"] > 1.4).astype(int).to_numpy()
    skiff.seed(1)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
    trainer = skiff.Trainer(model, lr=1e-2, seed=2)
    trainer.train((df, y), epochs=2)
    twin = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in
                          model.state_dict().items()})
    return trainer, df, twin


def test_a_frame_in_another_column_order_predicts_by_name():
    trainer, df, twin = _trained()
    want = twin(torch.tensor(df.to_numpy(np.float32))).detach().numpy()
    shuffled = df[["rooms", "age", "fare"]]
    np.testing.assert_allclose(trainer.predict(shuffled), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(trainer.predict((shuffled, np.zeros(len(df), np.int64))), want,
                               rtol=1e-5, atol=1e-5)
    # a plain array is taken as it comes (no names to go by)
    np.testing.assert_allclose(trainer.predict(df.to_numpy(np.float32)), want, rtol=1e-5,
                               atol=1e-5)


def test_a_frame_lacking_or_adding_columns_is_refused_naming_them():
    trainer, df, _ = _trained()
    with pytest.raises(ValueError, match=r"lacks \['rooms'\].*trained on the columns"):
        trainer.predict(df[["age", "fare"]])
    with pytest.raises(ValueError, match=r"has \['id'\] it was not trained on"):
        trainer.predict(df.assign(id=np.arange(len(df))))
