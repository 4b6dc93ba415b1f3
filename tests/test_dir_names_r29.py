"""Round 29: the names ``skiff.<name>`` finds past skiff.api (torch's median, histogram,
gradient, vmap, the function forms add/eq/split, det ...) are listed by ``dir(skiff)`` (a
notebook's ``skiff.<TAB>``) without loading the training group. Oracle: the loaded
``ops_stats.__all__`` and what ``getattr(skiff, name)`` finds, in a fresh interpreter."""

from __future__ import annotations

from tests.test_import_cost_r27 import fresh


def test_fallback_names_are_listed_and_each_resolves():
    out = fresh("""
import skiff, skiff.api
names = dir(skiff)
loaded = [m for m in sys.modules if m.startswith("skiff.kernels.train")]
from skiff.kernels.train.core import ops_stats
resolved = [n for n in skiff.api.FALLBACK_NAMES if getattr(skiff, n, None) is not None]
out = {"names": names, "loaded": loaded, "stats": ops_stats.__all__,
       "fallback": list(skiff.api.FALLBACK_NAMES), "resolved": resolved}
""")
    assert not out["loaded"], out["loaded"]
    assert set(out["stats"]) <= set(out["fallback"])  # a name added there must be added here
    assert set(out["fallback"]) <= set(out["names"])
    assert out["resolved"] == out["fallback"]


def test_smoothed_aggregation_at_the_top_level_without_the_training_group():
    out = fresh("""
import numpy as np, scipy.sparse as sp, skiff
A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(200, 200)).tocsr()
ml = skiff.SmoothedAggregation(A)
from skiff.kernels.solve import SmoothedAggregation
loaded = [m for m in sys.modules if m.startswith("skiff.kernels.train")]
out = {"same": type(ml) is SmoothedAggregation, "loaded": loaded,
       "listed": "SmoothedAggregation" in dir(skiff)}
""")
    assert (out["same"], out["loaded"], out["listed"]) == (True, [], True)
