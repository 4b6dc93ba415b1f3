"""Round 28: ``dir(skiff)`` (a notebook's ``skiff.<TAB>``) loaded the training group
(~0.5 s) to list its names. It now lists them from ``skiff.api``'s written-out list. The
oracle: the same ``dir()`` after the training group is loaded (as before), and the loaded
``functions.__all__`` for the written-out list, in a fresh interpreter each."""

from __future__ import annotations

from tests.test_import_cost_r27 import fresh

TRAINING = ("skiff.kernels.train.trainer", "skiff.kernels.train.core.functions",
            "skiff.kernels.train.core.tensor")


def test_dir_lists_every_name_without_loading_the_training_group():
    out = fresh("""
import skiff, skiff.api
names, api_names = dir(skiff), dir(skiff.api)
loaded = [m for m in sys.modules if m.startswith("skiff.kernels")]
skiff.api.__all__  # now load it: the names dir() listed before round 28
import skiff.kernels.train.core.functions as functions
out = {"names": names, "api_names": api_names, "loaded": loaded,
       "after": dir(skiff), "api_after": dir(skiff.api), "all": skiff.api.__all__,
       "functions": functions.__all__, "own": skiff.api.NAMES,
       "listed": skiff.api.dir_names()}
""")
    assert not set(out["loaded"]) & set(TRAINING), out["loaded"]
    assert set(out["names"]) == set(out["after"])  # the same names, nothing loaded for them
    assert set(out["api_names"]) == set(out["api_after"])
    assert set(out["all"]) <= set(out["names"]) and {"Trainer", "solve", "nn"} <= set(
        out["names"])
    # the written-out list is the loaded module's (a name added there must be added here)
    want = [n for n in out["functions"] if n not in out["own"]]
    assert [n for n in out["all"] if n not in out["own"]] == want
    assert out["listed"] == out["all"]
