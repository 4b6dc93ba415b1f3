"""Round 46 (h7): tables and image folders held out as scikit-learn holds them out.

- ``--val-split`` on a classification table held out the last rows of the seed's order, not
  stratified (the image folder's is since round 45): a 20-class table whose rarest classes
  have 3-6 rows had some of them never scored. The held-out rows are now each class's share
  as ``train_test_split(stratify=y)`` gives it (scikit-learn's ``_approximate_mode``, written
  out below from scikit-learn 1.x's source: scikit-learn is not in the venv), and the features
  are scaled on the training rows (pandas' means and deviations of those rows).
- An image folder's channel statistics included the held-out images: now the training
  images' alone (Python's ``statistics`` over their pixels).
"""

from __future__ import annotations

import statistics

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

COUNTS = [41, 33, 27, 22, 19, 17, 14, 13, 11, 10, 9, 8, 7, 6, 5, 4, 3, 3, 2, 2]


def approximate_mode(class_counts, n_draws):
    """scikit-learn's ``utils.extmath._approximate_mode`` (ties drawn at random there; the
    table below has none at the cut)."""
    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need = int(n_draws - floored.sum())
    remainder = continuous - floored
    for value in np.sort(np.unique(remainder))[::-1]:
        if need == 0:
            break
        inds = np.flatnonzero(remainder == value)
        assert len(inds) <= need, "a tie at the cut: pick other counts"
        floored[inds] += 1
        need -= len(inds)
    return floored.astype(int)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(46)
    y = np.repeat([f"c{k:02d}" for k in range(20)], COUNTS)
    rng.shuffle(y)
    n = len(y)
    df = pd.DataFrame({"a": rng.normal(5, 2, n), "b": rng.exponential(3, n),
                       "when": pd.date_range("2024-01-01", periods=n, freq="D").strftime(
                           "%Y-%m-%d"), "label": y})
    path = tmp_path_factory.mktemp("t") / "imbalanced.csv"
    df.to_csv(path, index=False)
    return path, df


@pytest.mark.parametrize("seed", [0, 3])
def test_a_tables_val_split_is_stratified_and_scaled_on_the_training_rows(table, seed):
    from skiff.kernels.train.entry import _table_parts

    path, df = table
    parts = _table_parts(str(path), seed, val_split=0.2)
    ds, t = parts["dataset"], parts["table"]
    n = len(df)
    n_val = int(round(n * 0.2))
    held = np.asarray(ds.arrays[1][n - n_val:]) if hasattr(ds, "arrays") else \
        np.array([ds[i][1] for i in range(n - n_val, n)])
    got = np.bincount(held.astype(np.int64), minlength=20)
    np.testing.assert_array_equal(got, approximate_mode(np.array(COUNTS), n_val))
    # the scaling: pandas' mean and (population) deviation of the training rows' features
    x = np.asarray(ds.arrays[0] if hasattr(ds, "arrays") else [ds[i][0] for i in range(n)])
    train_x = x[:n - n_val] * t.x_std + t.x_mean  # back to the file's values
    rows = [int(np.argmin(np.abs(df["a"].to_numpy() - v))) for v in train_x[:, 0]]
    assert len(set(rows)) == n - n_val
    sub = df.iloc[rows]
    assert t.columns[:2] == ["a", "b"]
    np.testing.assert_allclose(t.x_mean[:2], sub[["a", "b"]].mean().to_numpy(), rtol=1e-5)
    np.testing.assert_allclose(t.x_std[:2], sub[["a", "b"]].std(ddof=0).to_numpy(), rtol=1e-5)


def test_an_image_folders_statistics_are_the_training_images(tmp_path):
    from PIL import Image

    from skiff.kernels.train.image_folder import ImageFolder

    rng = np.random.default_rng(0)
    for c, tone in (("dark", 40), ("light", 200)):
        (tmp_path / c).mkdir()
        for k in range(6):
            pixels = np.clip(rng.normal(tone, 20, (8, 8, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(tmp_path / c / f"{k}.png")
    folder = ImageFolder(tmp_path, size=8)
    train, val = folder.held_out(0.5)
    index = train.index
    assert len(index) == 6 and len(val) == 6
    pixels = folder.images[index].transpose(1, 0, 2, 3).reshape(3, -1) / 255.0  # float64
    np.testing.assert_allclose(folder.mean, [statistics.fmean(c) for c in pixels], rtol=1e-5)
    np.testing.assert_allclose(folder.std, [statistics.pstdev(c) for c in pixels], rtol=1e-4)
    assert folder.to_json()["mean"] == folder.mean.tolist()
