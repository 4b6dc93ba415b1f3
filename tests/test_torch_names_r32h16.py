"""Round 32 (h16): torch-habit names a data/amp user found missing, each against torch 2.13:
``skiff.is_autocast_enabled`` / ``get_autocast_dtype`` / ``initial_seed`` at the top level."""

import pytest

import skiff

torch = pytest.importorskip("torch")


def test_autocast_queries_at_the_top_level_as_torch():
    assert skiff.is_autocast_enabled() == torch.is_autocast_enabled()
    assert skiff.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu")
    assert str(skiff.get_autocast_dtype("cpu")).split(".")[-1] == \
        str(torch.get_autocast_dtype("cpu")).split(".")[-1]
    with skiff.autocast("cpu"), torch.autocast("cpu"):
        assert skiff.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu") is True
    with skiff.autocast("cpu", dtype=skiff.float16), torch.autocast("cpu", dtype=torch.float16):
        assert str(skiff.get_autocast_dtype("cpu")).split(".")[-1] == \
            str(torch.get_autocast_dtype("cpu")).split(".")[-1] == "float16"
    for name in ("is_autocast_enabled", "get_autocast_dtype", "initial_seed"):
        assert name in skiff.api.__all__ and name in dir(skiff)


def test_initial_seed_is_the_seed_manual_seed_set():
    for s in (123, 0, 2 ** 40 + 7):
        skiff.manual_seed(s)
        torch.manual_seed(s)
        assert skiff.initial_seed() == torch.initial_seed() == s
    skiff.manual_seed(0)
