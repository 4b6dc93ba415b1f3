"""A pandas user's Trainer (round 29): a DataFrame of floats, booleans and integers with a
weighted loss for imbalanced classes trains step for step as torch 2.13 does on the same
values, init and batches; a datetime column is refused with the expression that makes
numbers of it (it said "encode text or categories"), and that expression then trains."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import torch

import skiff
from skiff import nn


def _torch_losses(model, x, y, weight, epochs, seed, batch=32, lr=1e-2):
    twin = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 2)).double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in model.state_dict().items()})
    opt = torch.optim.Adam(twin.parameters(), lr=lr)
    loss = torch.nn.CrossEntropyLoss(weight=None if weight is None else torch.tensor(weight))
    out = []
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(x))
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            value = loss(twin(torch.tensor(x[idx])), torch.tensor(y[idx]))
            opt.zero_grad()
            value.backward()
            torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)  # the Trainer's clip=1.0
            opt.step()
            out.append(value.item())
    return out, twin


def _frame(n=256, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                       "flag": rng.random(n) < 0.3, "k": rng.integers(0, 5, n)})
    y = pd.Series(((df.a + 1.5 * df.flag) > 1.2).astype(int), name="y")  # about 30% ones
    return df, y


def test_a_dataframe_with_class_weights_trains_as_torch_does():
    df, y = _frame()
    weight = len(y) / (2 * np.bincount(y))  # scikit-learn's "balanced"
    skiff.seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, loss=nn.CrossEntropyLoss(weight=weight.astype(np.float32)),
                            optimizer="adam", schedule="constant", lr=1e-2, batch_size=32,
                            seed=3)
    result = trainer.train((df, y), epochs=3)
    model_start = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model_start.load_state_dict(start)
    want, twin = _torch_losses(model_start, df.to_numpy(np.float64), y.to_numpy(), weight, 3, 3)
    np.testing.assert_allclose(result.losses, want, rtol=2e-5, atol=2e-6)
    with torch.no_grad():
        ref = twin(torch.tensor(df.to_numpy(np.float64))).numpy()
    np.testing.assert_allclose(trainer.predict(df), ref, atol=2e-5)


def test_a_datetime_column_is_refused_with_the_expression_that_makes_it_numbers():
    df, y = _frame(128, seed=1)
    df["when"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(128), unit="D")
    skiff.seed(1)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    trainer = skiff.Trainer(model, optimizer="adam", schedule="constant", lr=1e-2, seed=5)
    with pytest.raises(TypeError, match=r"column 'when' holds dates") as info:
        trainer.train((df, y), epochs=1)
    hint = re.search(r"e\.g\. (.+?), and ", str(info.value)).group(1)
    stamps = df["when"].copy()
    df["when"] = eval(hint, {"pd": pd, "df": df})  # noqa: S307  (the message's own advice)
    want_days = np.array([(t - pd.Timestamp("1970-01-01")).days for t in stamps], float)
    np.testing.assert_array_equal(df["when"].to_numpy(), want_days)
    df["when"] = (df["when"] - df["when"].mean()) / df["when"].std()  # scaled, as one would
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    result = trainer.train((df, y), epochs=2)
    model_start = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    model_start.load_state_dict(start)
    want, _ = _torch_losses(model_start, df.to_numpy(np.float64), y.to_numpy(), None, 2, 5)
    np.testing.assert_allclose(result.losses, want, rtol=1e-4, atol=1e-5)


def test_a_confidently_wrong_row_reports_torchs_loss():
    # core CrossEntropyFn took -log(max(p, tiny)): a row's loss stopped at 87.3 (float32)
    # raw days since 1970 (about 19,700) as a feature: logit gaps of thousands at step 1;
    # the Trainer reported 27.3 where torch (and skiff's own logits) give 1112.2
    logits = np.array([[-439.07614, -3991.673], [0.0, 0.0]], np.float32)
    target = np.array([1, 0])
    from skiff.nn import functional as F

    got = F.cross_entropy(skiff.tensor(logits), target).item()
    want = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(target)).item()
    assert got == pytest.approx(want, rel=1e-5)


def test_gaps_in_a_dataframe_are_named_by_column_and_filled_as_pandas_fills():
    df, y = _frame(96, seed=2)
    df.loc[[3, 10, 11], "a"] = np.nan
    df.loc[[10], "b"] = np.inf
    skiff.seed(2)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    trainer = skiff.Trainer(model, optimizer="adam", schedule="constant", lr=1e-2, seed=7)
    counts = (~np.isfinite(df.to_numpy(np.float64))).sum(axis=0)  # numpy's count
    with pytest.raises(ValueError, match=rf"in 3 of its 96 rows \(by column: 'a' "
                                         rf"{counts[0]}, 'b' {counts[1]}\)"):
        trainer.train((df, y), epochs=1)
    df = df.replace(np.inf, np.nan)
    df = df.fillna(df.mean())  # the message's advice
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    result = trainer.train((df, y), epochs=1)
    model_start = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model_start.load_state_dict(start)
    want, _ = _torch_losses(model_start, df.to_numpy(np.float64), y.to_numpy(), None, 1, 7)
    np.testing.assert_allclose(result.losses, want, rtol=1e-4, atol=1e-5)
