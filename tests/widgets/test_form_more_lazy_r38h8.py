"""Round 38 (h8): a form's fields under "more options" (38 of the Solve form's 47, 53 of
Train's 63) were built with the form, ~5 widget models each, saved with the notebook though
the section is closed. They are now built when the section is opened, or a field of it is
asked for (``form.fields[dest].widget``, ``form.set``); until then each reads as its
default. The oracle: the Command's own parser (argparse's defaults, its rendered line)."""

from __future__ import annotations

from ipywidgets.widgets.widget import _instances  # what Widget.widgets returns (deprecated)

from skiff.kinds.solve import COMMAND as SOLVE
from skiff.widgets.form import CommandForm, Field
from skiff.widgets.panels import solve_form


def test_the_section_is_built_when_opened():
    before = len(_instances)
    form = solve_form()
    closed = len(_instances) - before
    rest = [d for d in form.fields if not form.fields[d].built]
    assert "pre" in rest and "restart" in rest and len(rest) >= 30
    assert form.more.children[0].children == ()
    # unbuilt fields read as the parser's defaults: the form's values are argparse's
    defaults = vars(SOLVE.parser().parse_args([]))
    assert form.values is not None
    assert {d: form.values[d] for d in rest} == {d: defaults[d] for d in rest}
    assert form.magic == "%solve poisson"
    form.more.selected_index = 0   # the browser opens the section
    opened = len(_instances) - before
    assert all(form.fields[d].built for d in rest)
    assert len(form.more.children[0].children) == len(rest)
    assert opened - closed >= 4 * len(rest) and closed < opened / 2
    form.fields["pre"].widget.value = "3"   # a built field's change is checked at once
    assert form.magic == "%solve poisson --pre 3"
    form.set(maxiter=0)   # SciPy's "no iteration" (round 38): the form takes it as the CLI
    assert SOLVE.parse(form.magic.split(" ", 1)[1]).maxiter == 0 and form.values["pre"] == 3
    form.close()


def test_a_field_asked_for_builds_the_section():
    form = solve_form()
    form.fields["post"].widget.value = "4"   # asked for before the section was opened
    assert form.fields["cycle"].built and len(form.more.children[0].children) > 1
    assert form.magic == "%solve poisson --post 4"
    form.close()
    form = solve_form()
    form.set(cycle="W")
    assert form.magic == "%solve poisson --cycle W" and form.fields["pre"].built
    form.close()


def test_an_error_on_a_closed_field_opens_it():
    form = solve_form()
    form.set(restart="0")   # set before the section was opened: built, refused, shown
    assert "restart" in form.errors and form.more.selected_index == 0
    assert "expected a positive integer, got '0'" in form.fields["restart"].message.value
    assert form.fields["restart"].box in form.more.children[0].children
    form.close()
    action = SOLVE.parser()._option_string_actions["--pre"]
    field = Field(action, lazy=True)
    assert not field.built and field.parse() == action.default == 2
    field.show(None)
    assert not field.built   # nothing to show: stays unbuilt
    field.show("a message")   # a form's error on it: built to show it
    assert field.built and "a message" in field.message.value


def test_no_order_no_section():
    form = CommandForm(SOLVE)   # no ``order``: every field in the main list, none lazy
    assert all(f.built for f in form.fields.values())
    assert form.more not in form.children
    form.close()
