"""Round 27: ``skiff.Generator`` (``manual_seed``, reproducible ``random_split`` /
``DataLoader`` / ``randn`` draws) and ``skiff.testing.assert_close`` (its pass/fail decision
against torch 2.13's on the same inputs, dtype by dtype)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
import skiff.utils.data as sud


def test_generator_reproducible_draws():
    ds = sud.TensorDataset(skiff.arange(10))
    a = [s.indices for s in sud.random_split(ds, [0.7, 0.3],
                                             generator=skiff.Generator().manual_seed(42))]
    b = [s.indices for s in sud.random_split(ds, [0.7, 0.3],
                                             generator=skiff.Generator().manual_seed(42))]
    assert a == b and sorted(a[0] + a[1]) == list(range(10))
    g = skiff.Generator().manual_seed(3)
    assert g.initial_seed() == 3
    x = skiff.randn(4, generator=g)
    np.testing.assert_array_equal(np.asarray(x), np.random.default_rng(3).standard_normal(4)
                                  .astype(np.float32))
    state = g.get_state()
    first = [b[0].tolist() for b in sud.DataLoader(ds, batch_size=5, shuffle=True, generator=g)]
    g.set_state(state)
    again = [b[0].tolist() for b in sud.DataLoader(ds, batch_size=5, shuffle=True, generator=g)]
    assert first == again
    assert isinstance(skiff.Generator().seed(), int)


CASES = [
    (np.float64, 1.0, 1.0 + 5e-8), (np.float64, 1.0, 1.0 + 5e-7), (np.float32, 1.0, 1.0 + 1e-6),
    (np.float32, 1.0, 1.0 + 3e-5), (np.float16, 1.0, 1.0009765625), (np.float16, 1.0, 1.01),
    (np.int64, 3, 3), (np.int64, 3, 4), (np.float64, 0.0, 2e-8), (np.float64, 0.0, 2e-7),
]


@pytest.mark.parametrize("dtype,a,b", CASES)
def test_assert_close_decides_as_torch(dtype, a, b):
    x = np.array([a, 2 * a], dtype=dtype)
    y = np.array([b, 2 * a], dtype=dtype)

    def verdict(lib, mod):
        try:
            mod.assert_close(lib.tensor(x), lib.tensor(y))
            return True
        except AssertionError:
            return False

    assert verdict(skiff, skiff.testing) == verdict(torch, torch.testing)


def test_assert_close_checks_and_messages():
    for lib in (skiff, torch):
        t = lib.tensor([1.0, 2.0], dtype=lib.float64)
        with pytest.raises(AssertionError, match="dtype"):
            lib.testing.assert_close(t, lib.tensor([1.0, 2.0], dtype=lib.float32))
        with pytest.raises(AssertionError, match="shape"):
            lib.testing.assert_close(t, lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64))
        with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
            lib.testing.assert_close(t, lib.tensor([1.0, 2.5], dtype=lib.float64))
        lib.testing.assert_close(t, lib.tensor([1.0, 2.5], dtype=lib.float64), rtol=0.3,
                                 atol=0.0)
        lib.testing.assert_close({"a": [t]}, {"a": [t * 1]})
        with pytest.raises(ValueError, match="rtol"):
            lib.testing.assert_close(t, t, rtol=1e-3)
