"""Round 38 (h3): a week planner's framed days read day by day on its phone photo as on
the page itself (the drawn truth is the oracle): the photo's blur left the thin grey
frames steps under the edge threshold in places, the days' regions leaked into one and
the page read across its rows."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.ocr.panels import PANEL_EDGE, PANEL_EDGE_WEAK, _edges

ROOT = Path(__file__).resolve().parents[3]


def test_a_weak_step_is_an_edge_only_joined_to_a_strong_one():
    step = np.zeros((40, 40), np.float32)
    step[5:35, 10] = PANEL_EDGE_WEAK + 2     # a frame's side, weak along its length ...
    step[5:8, 10] = PANEL_EDGE + 5           # ... strong at one end
    step[20:23, 30:33] = PANEL_EDGE_WEAK + 2  # noise: weak and alone
    edges = _edges(step)
    assert edges[5:35, 10].all()
    assert not edges[20:23, 30:33].any()
    assert edges.sum() == 30


@pytest.mark.parametrize("kind", ["clean", "phone"])
def test_week_planner_reads_day_by_day(pipe, kind):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_ocr_probes as probes
    import bench_ocr_user38 as user38

    try:
        im, truth = user38.week_planner()
    except OSError as exc:
        pytest.skip(f"fonts not installed: {exc}")
    if kind == "phone":
        seed = [s.__name__ for s in user38.SCENES].index("week_planner")  # the benchmark's
        im = probes.degrade(im, "phone", seed)
    assert pipe(np.asarray(im.convert("RGB"))).text.split("\n") == truth
