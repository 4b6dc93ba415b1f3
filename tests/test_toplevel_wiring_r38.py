"""Round 38: the torch top-level names of ``torch_toplevel_r38`` reach ``skiff.<name>`` (as
``torch.<name>``); before the wiring each raised AttributeError. Oracle: torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def test_comparison_and_arith_aliases_equal_torch():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([2.0, 2.0, 1.0], np.float32)
    for name in ("le", "greater", "less_equal", "not_equal", "multiply", "subtract", "rsub"):
        got = getattr(skiff, name)(skiff.tensor(a), skiff.tensor(b)).numpy()
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_functional_names_at_the_top_level_equal_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    got = skiff.conv2d(skiff.tensor(x), skiff.tensor(w), padding=1).numpy()
    want = torch.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert str(skiff.result_type(skiff.tensor([1, 2]), 1.0)).endswith(
        str(torch.result_type(torch.tensor([1, 2]), 1.0)).split(".")[-1])
    assert "le" in dir(skiff) and "asarray" in dir(skiff)


def test_foreach_list_ops_at_the_top_level_as_torch():
    a = [np.arange(3, dtype=np.float32), np.ones(2, np.float32)]
    ts = [skiff.tensor(v.copy()) for v in a]
    tt = [torch.tensor(v.copy()) for v in a]
    skiff._foreach_mul_(ts, 2.0)
    torch._foreach_mul_(tt, 2.0)
    for s, t in zip(ts, tt):
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    with pytest.raises(AttributeError):
        skiff._foreach_not_a_name  # noqa: B018
