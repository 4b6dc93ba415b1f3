"""A sweep says which shapes' drag is a time average (round 31): with ``mode='auto'`` a
shape whose steady solve fails is marched in time and averaged (minutes a shape, its cd
scattered by the shedding), and the sweep used to hand it to the surrogate as one more
number. Now ``Samples.modes`` / ``.unsteady`` record it (saved and loaded, kept by
``subset``), the sweep and the fit warn, and ``mode='steady'`` lists such shapes as failed.
The solver is stood in for (its fallback is tested in tests/kernels/solve/flow)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from skiff.kernels.aero import Samples, sweep
from skiff.kernels.solve.flow import nose_job

BLUNT = 0.8           # the stand-in has no steady solve above this bluntness


@pytest.fixture
def stand_in(monkeypatch):
    calls = []

    def fake(length, bluntness, clearance, *, re, adapt, resolution, keep, mode):
        calls.append(mode)
        steady = bluntness < BLUNT
        if not steady and mode == "steady":
            raise RuntimeError("the steady solve at Re 1000 did not converge")
        cd = 1.0 + 0.1 * bluntness + 0.01 * length
        return types.SimpleNamespace(cd=cd, cl=0.0, cells=100,
                                     mode="steady" if steady else "unsteady")

    monkeypatch.setattr(nose_job, "solve_nose", fake)
    return calls


POINTS = [(3.0, 0.1, 0.2), (3.0, 0.9, 0.2), (4.0, 0.5, 0.2), (2.5, 0.95, 0.15)]


def test_time_averaged_shapes_are_recorded_and_warned(stand_in, tmp_path):
    rows = []
    with pytest.warns(UserWarning, match="2 of 4 shapes have no steady solve at Re 1000"):
        s = sweep(points=POINTS, np=1, progress=lambda done, total, row: rows.append(row))
    assert [r["mode"] for r in rows] == ["steady", "unsteady", "steady", "unsteady"]
    assert s.modes == ["steady", "unsteady", "steady", "unsteady"]
    assert s.unsteady == [1, 3] and "2 time-averaged" in repr(s)
    assert stand_in == ["auto"] * 4
    back = Samples.load(s.save(tmp_path / "s.json"))
    assert back.modes == s.modes
    assert s.subset([1, 2]).modes == ["unsteady", "steady"]
    assert s.subset(np.array([True, False, False, True])).unsteady == [1]


def test_mode_steady_leaves_them_out_as_failed(stand_in):
    s = sweep(points=POINTS, np=1, mode="steady")
    assert len(s) == 2 and s.unsteady == [] and len(s.failed) == 2
    assert "did not converge" in s.failed[0]["error"]
    with pytest.raises(ValueError, match="mode must be 'auto', 'steady' or 'unsteady'"):
        sweep(points=POINTS, np=1, mode="fast")


def test_a_file_from_before_has_no_modes(tmp_path):
    s = Samples(np.ones((1, 3)), np.ones(1), np.zeros(1), np.ones(1, int), np.ones(1),
                {"length": (2, 5), "bluntness": (0, 1), "clearance": (0.1, 0.3)}, 200.0)
    d = s.to_json()
    d.pop("modes")
    path = tmp_path / "old.json"
    import json

    path.write_text(json.dumps(d))
    old = Samples.load(path)
    assert old.modes is None and old.unsteady == [] and "time-averaged" not in repr(old)


def test_the_fit_says_how_many_samples_are_time_averages():
    from skiff.kernels.aero import Surrogate

    rng = np.random.default_rng(0)
    p = rng.uniform([2, 0, 0.1], [5, 1, 0.3], size=(40, 3))
    s = Samples(p, 1 + 0.1 * p[:, 1], np.zeros(40), np.ones(40, int), np.ones(40),
                {"length": (2, 5), "bluntness": (0, 1), "clearance": (0.1, 0.3)}, 1000.0,
                modes=["unsteady" if b > 0.9 else "steady" for b in p[:, 1]])
    with pytest.warns(UserWarning, match=f"{len(s.unsteady)} of the 40 samples are time "):
        m = Surrogate.fit(s, members=1, steps=20)
    assert m.record["time_averaged"] == len(s.unsteady) > 0
