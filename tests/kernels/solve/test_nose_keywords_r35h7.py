"""Round 35 (h7): an aerodynamicist's ``skiff.aero.solve_nose(Re=500)`` got Python's bare
"unexpected keyword argument 'Re'"; now the one line names the keyword meant and lists the
function's own, before any grid is built."""

from __future__ import annotations

import pytest

import skiff.aero


@pytest.mark.parametrize("given, meant", [("Re", "re"), ("reynolds", "re"),
                                          ("gap", "clearance"), ("mesh", "adapt")])
def test_a_mistyped_keyword_names_the_one_meant(given, meant):
    with pytest.raises(TypeError, match=rf"takes no {given}= \(did you mean {meant}=\?\)") as e:
        skiff.aero.solve_nose(length=3, **{given: 500})
    assert "re (Reynolds number on the train height)" in str(e.value)
    assert "\n" not in str(e.value)


def test_an_unknown_keyword_is_listed_without_a_guess():
    with pytest.raises(TypeError, match=r"solve_nose\(\) takes no foo=; its keywords: length"):
        skiff.aero.solve_nose(foo=1)


def test_a_sweep_names_re_too():
    with pytest.raises(TypeError, match=r"sweep\(\) takes no Re= \(did you mean re=\?\); its "
                                        r"keywords: n, length"):
        skiff.aero.sweep(4, Re=500)
