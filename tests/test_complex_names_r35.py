"""Round 35: torch's conjugation-view names at skiff's top level (``torch.resolve_conj``,
``resolve_neg``, ``conj_physical``, ``is_conj``, ``is_neg``): a torch user's complex code
ran up to them and stopped. Oracle: torch 2.13 on the same values (skiff has no lazy
conjugate views: its ``conj`` is physical, so ``is_conj`` is False as for a resolved torch
tensor)."""

from __future__ import annotations

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def test_the_names_are_top_level_and_follow_torch():
    z = np.array([1 + 2j, -3 - 0.5j], np.complex128)
    s, t = skiff.tensor(z), torch.tensor(z)
    for name in ("resolve_conj", "resolve_neg", "conj_physical"):
        np.testing.assert_array_equal(np.asarray(getattr(skiff, name)(s)),
                                      getattr(torch, name)(t).numpy())
    assert skiff.is_conj(s) is False and skiff.is_neg(s) is False
    assert torch.is_conj(t.conj().resolve_conj()) is False
    np.testing.assert_array_equal(np.asarray(skiff.conj_physical(s)), np.conj(z))
