"""Round 45 (h12): a cylinder in another channel. An aerodynamicist checking the Strouhal
number at Re 100 against the less confined literature (Williamson 1996: 0.164 unconfined;
DFG's channel, blockage 0.244: 0.295-0.305) needs a taller channel around the same cylinder;
``run_case`` knew the DFG channel only. Oracles: the channel's own parabola at the inlet
(``4 U_max y (H - y) / H^2`` with the new H), the walls where the channel puts them, and
drag falling as the blockage falls (the wall-confined cylinder of DFG drags more)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.solve.flow import run_case
from skiff.kernels.solve.flow.mesh import Channel

TALL = {"height": 0.82, "centre": (0.2, 0.41)}


@pytest.fixture(scope="module")
def pair():
    # the DFG channel given is the case itself (its bands, no "channel" in the record)
    return (run_case("2d-1", resolution=16, channel=Channel(), keep_fields=False),
            run_case("2d-1", resolution=16, channel=TALL))


def test_a_taller_channel_has_its_own_inflow_and_walls(pair):
    dfg, tall = pair
    p, _ = tall.mesh
    assert p[1].max() == pytest.approx(0.82) and p[1].min() == pytest.approx(0.0)
    inlet = np.isclose(p[0], 0.0)
    y, ux = p[1, inlet], tall.fields["ux"][inlet]
    np.testing.assert_allclose(ux, 4 * 0.3 * y * (0.82 - y) / 0.82 ** 2, atol=1e-12)
    assert tall.case == "custom" and tall.bands == {} and tall.reference == {}
    assert tall.details["channel"]["blockage"] == pytest.approx(0.1 / 0.82)
    assert tall.re == pytest.approx(20.0)          # the same Re: U_mean 0.2, D 0.1
    # less blockage, less drag (and a longer recirculation: the flow is less squeezed)
    assert tall.values["cd"] < 0.97 * dfg.values["cd"]
    assert tall.values["la"] > dfg.values["la"]
    assert dfg.case == "2d-1" and dfg.bands and "channel" not in dfg.details


@pytest.mark.parametrize("channel, match", [
    ({"height": 0.41, "radius": 0.1}, "diameter is the benchmark's 0.1"),
    ({"height": 0.2}, "must lie inside the channel"),
    ({"width": 1.0}, "channel takes length, height, centre"),
    ("tall", "channel must be a Channel or a dict"),
    ({"height": "tall"}, "channel height must be a number"),
    ({"centre": (0.2,)}, r"channel centre must be two numbers \(x, y\)"),
])
def test_a_bad_channel_is_refused_in_one_line(channel, match):
    with pytest.raises((ValueError, TypeError), match=match):
        run_case("2d-1", resolution=16, channel=channel)
