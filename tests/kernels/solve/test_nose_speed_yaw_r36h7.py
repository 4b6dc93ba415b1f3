"""Round 36 (h7): an aerodynamicist's ``solve_nose(yaw=5)``, ``solve_nose(speed=80)`` and
``reynolds_sweep(speeds=[...])`` are answered in the model's terms (2-D: no yaw; the flow is
set by re = U H / nu), in one line, before any grid is built."""

from __future__ import annotations

import pytest

import skiff.aero
from skiff.kernels.solve.flow.nose import MAX_RE


@pytest.mark.parametrize("name", ["yaw", "angle_of_attack", "crosswind"])
def test_a_yaw_angle_is_refused_as_the_model_is_2d(name):
    with pytest.raises(TypeError, match=rf"takes no {name}=; the model is 2-D") as e:
        skiff.aero.solve_nose(**{name: 5})
    assert "its keywords: length" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(TypeError, match="no yaw, crosswind or incidence angle"):
        skiff.aero.sweep(4, **{name: (0, 10)})


def test_a_speed_is_turned_into_its_reynolds_number():
    re_80 = 80 * 4 / 1.5e-5                # U H / nu: 80 m/s, a 4 m train, air
    assert re_80 > MAX_RE
    with pytest.raises(TypeError) as e:
        skiff.aero.solve_nose(speed=80)
    text = str(e.value)
    assert f"re {re_80:.2g}".replace("e+0", "e") in text and f"{MAX_RE:g}" in text
    assert "reynolds_sweep(res=" in text


def test_reynolds_sweep_names_its_keywords():
    with pytest.raises(TypeError, match=r"reynolds_sweep\(\) takes no speeds=; the flow is set "
                                        r"by re = U H / nu") as e:
        skiff.aero.reynolds_sweep([500, 800], speeds=[50, 80])
    assert "its keywords: res (the Reynolds numbers)" in str(e.value)
    with pytest.raises(TypeError, match=r"takes no Re= \(did you mean res=\?\)"):
        skiff.aero.reynolds_sweep([500], Re=500)
