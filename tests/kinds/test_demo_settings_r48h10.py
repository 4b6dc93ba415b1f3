"""The tour's first cell, ``skiff.launch("demo", {"steps": 15, "sleep": 0.05})``, refuses a
value it would misread in one line, before the job starts (round 48 h10): ``{"steps": -1}``
ran "done" with no step, ``{"stpes": 5}`` ran the default 10 steps and said nothing. The
oracle: the settings the demo kind's ``run`` reads (its docstring)."""

from __future__ import annotations

import pytest

import skiff


@pytest.mark.parametrize("config,said", [
    ({"steps": -1}, "demo: steps must be a whole number of steps, 1 or more, got -1"),
    ({"steps": 2.5}, "demo: steps must be"),
    ({"steps": "x"}, "demo: steps must be"),
    ({"sleep": -0.1}, "demo: sleep must be"),
    ({"stpes": 5}, "demo: unknown setting 'stpes' (did you mean 'steps'?)"),
])
def test_a_misread_setting_is_refused_in_one_line(runs_dir, config, said):
    with pytest.raises(ValueError) as err:
        skiff.launch("demo", config)
    assert str(err.value).startswith(said) and "\n" not in str(err.value), err.value
    assert not runs_dir.exists() or not any(runs_dir.iterdir())  # refused before it started


def test_good_settings_still_run(runs_dir):
    job = skiff.launch("demo", {"steps": 2, "sleep": 0})
    job.wait(60)
    assert job.status == "done" and job.result["steps"] == 2, (job.status, job.error)
