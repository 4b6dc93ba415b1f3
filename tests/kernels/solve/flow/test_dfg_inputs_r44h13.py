"""Round 44 (h13): ``run_case``'s resolution is a whole number of edges around the cylinder.

Before: ``run_case('2d-1', resolution=20.7)`` meshed 20 edges without a word, and 2.5 was
refused as "resolution 2 is too coarse". A whole number given as a float (8.0) passes on to
the mesher's own check."""

from __future__ import annotations

import pytest

from skiff.kernels.solve.flow import run_case


@pytest.mark.parametrize("given", [20.7, 2.5, float("nan"), "32", True])
def test_a_resolution_that_is_not_a_whole_number_is_refused(given):
    with pytest.raises(ValueError, match=r"a whole number \(at least 16\), got "):
        run_case("2d-1", resolution=given)


def test_a_whole_float_is_taken():
    with pytest.raises(ValueError, match="too coarse to hold the cylinder: give at least 16"):
        run_case("2d-1", resolution=8.0)    # whole, and too coarse: the mesher's words


def test_a_steady_solve_past_the_shedding_limit_says_it_is_unstable():
    # Re 60 on the coarsest grid: Newton converges to the steady solution (a symmetric
    # wake), which the flow past Re ~46 leaves for periodic shedding (Williamson 1996)
    res = run_case("2d-1", re=60, resolution=16, keep_fields=False)
    note = res.details.get("note", "")
    assert "unstable" in note and "--case 2d-2 --re 60" in note, note
    assert abs(res.values["cl"]) < 0.05     # the steady, near-symmetric wake
