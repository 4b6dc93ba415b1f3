"""Forms generated from a grammar Command, the Train/OCR/Solve panels and ``%skiff``."""

from __future__ import annotations

import importlib.util

import ipywidgets as W
import pytest

from skiff.grammar.common import (
    command,
    device_option,
    grid_shape,
    launch_options,
    positive_float,
    positive_int,
)
from skiff.widgets.form import CommandForm
from skiff.widgets.job_view import JobView


@command("demo", help="a grammar shaped like the real kinds, launching the demo job")
@launch_options
@device_option
def DEMO(p):
    p.add_argument("grid", type=grid_shape, metavar="GRID")
    p.add_argument("--method", choices=("cg", "gmres"), default="cg")
    p.add_argument("--rtol", type=positive_float, default=1e-8)
    p.add_argument("--steps", type=positive_int, default=10)
    p.add_argument("--verbose", action="store_true")


def demo_config(values: dict) -> dict:
    if values["rtol"] >= 1:
        raise ValueError(f"--rtol must be below 1, got {values['rtol']!r}")
    return {"steps": values["steps"], "sleep": 0.0}


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    yield sh
    for name in [k for k in sh.user_ns if k.startswith("panel_test_")]:
        del sh.user_ns[name]


def test_fields_follow_the_command():
    form = CommandForm(DEMO, demo_config)
    assert set(form.fields) == {"grid", "method", "rtol", "steps", "verbose", "np", "runner",
                                "oversubscribe", "name", "output", "device"}  # not --wait (the
    # panel shows the job)
    assert isinstance(form.fields["method"].widget, W.Dropdown)
    assert [v for _label, v in form.fields["method"].widget.options] == ["cg", "gmres"]
    assert isinstance(form.fields["runner"].widget, W.Dropdown)
    assert isinstance(form.fields["verbose"].widget, W.Checkbox)
    assert isinstance(form.fields["rtol"].widget, W.Text)
    assert form.fields["rtol"].widget.value == "1e-08"
    assert "cpu" in form.fields["device"].widget.options


def test_validates_as_the_user_types():
    form = CommandForm(DEMO, demo_config)
    # the positional GRID is required: empty at first
    assert form.launch_button.disabled and form.errors == {"grid": "required"}
    form.fields["grid"].widget.value = "32x32"
    assert not form.launch_button.disabled and form.errors == {}
    assert "%demo 32x32</code>" in form.magic_line.value
    assert "python -m skiff demo 32x32</code>" in form.cli_line.value
    # a value its type rejects: the message is next to the field, Launch is disabled
    form.fields["rtol"].widget.value = "abc"
    assert form.launch_button.disabled
    assert "expected a positive number, got 'abc'" in form.fields["rtol"].message.value
    assert set(form.errors) == {"rtol"}
    assert "color:#aaa" in form.magic_line.value  # the last good line, greyed out
    assert "%demo 32x32</code>" in form.magic_line.value
    form.fields["grid"].widget.value = "32by32"
    assert "32by32" in form.errors["grid"] and set(form.errors) == {"grid", "rtol"}
    form.fields["grid"].widget.value = "16x16"
    # a value only the kind's to_config rejects: shown at the option it names
    form.fields["rtol"].widget.value = "2"
    assert form.errors == {"rtol": "--rtol must be below 1, got 2.0"}
    assert form.launch_button.disabled
    form.fields["rtol"].widget.value = "1e-6"
    assert not form.launch_button.disabled and not form.errors
    assert "user-select:all" in form.magic_line.value and "color:#aaa" not in form.magic_line.value
    assert form.fields["rtol"].message.value == ""


def test_lines_round_trip_through_the_grammar():
    form = CommandForm(DEMO, demo_config)
    form.set(grid="8x4x2", method="gmres", steps=5, verbose=True, np=2)
    magic = form.values and DEMO.render(form.values, style="magic")
    assert magic == "%demo 8x4x2 --method gmres --steps 5 --verbose --np 2"
    assert f"{magic}</code>" in form.magic_line.value
    # the shown line parses back to exactly the form's values
    assert vars(DEMO.parse(magic.split(" ", 1)[1])) == {**form.values, "wait": False}
    with pytest.raises(KeyError, match="unknown field"):
        form.set(nosuch=1)


def test_launch_without_a_magic_uses_to_config():
    form = CommandForm(DEMO, demo_config)
    form.set(grid="4x4", steps=3)
    job = form.launch()
    assert job is not None and job.kind == "demo" and job.config == {"steps": 3, "sleep": 0.0}
    (view,) = form.output.children
    assert isinstance(view, JobView) and view.job is job
    job.wait(10)
    view._thread and view._thread.join(10)
    assert "skiff-done" in view.badge.value and view.progress.value == 3


def test_launch_runs_the_magic_line_when_the_magic_exists(shell):
    from skiff.jobs import launch

    seen = []

    def demo_magic(line):
        seen.append(line)
        return launch("demo", {"steps": 2, "sleep": 0.0})

    shell.register_magic_function(demo_magic, "line", "demo")
    try:
        form = CommandForm(DEMO, demo_config)
        form.set(grid="4x4", method="gmres", output="panel_test_job")
        job = form.launch()
        assert seen == ["4x4 --method gmres --output panel_test_job"]
        assert job is not None and job.wait(10).status == "done"
    finally:
        del shell.magics_manager.magics["line"]["demo"]


def test_launch_is_refused_while_the_form_is_bad():
    form = CommandForm(DEMO, demo_config)
    assert form.launch() is None and form.output.children == ()


# the real kinds ------------------------------------------------------------------------------
def test_train_form_pickers_and_checks(shell):
    from skiff.kernels.train.core import nn
    from skiff.widgets.panels import train_form

    shell.user_ns["panel_test_net"] = nn.Linear(2, 2)
    form = train_form()
    picker = form.fields["model"].widget
    assert isinstance(picker, W.Combobox)
    assert "panel_test_net" in picker.options and "mlp" in picker.options
    assert not form.launch_button.disabled  # the defaults (a built-in model) are valid
    form.set(model="nosuch")
    assert "unknown model 'nosuch'" in form.errors["model"]
    form.set(model="panel_test_net")
    assert "DATA is needed" in form.status.value + "".join(form.errors.values())
    form.set(data="blobs", lr="-1")
    assert "expected a positive number, got '-1'" in form.errors["lr"]
    form.set(lr="0.01", resume=True)
    assert any("--resume needs --checkpoint-dir" in m for m in form.errors.values())
    form.set(resume=False, steps=3)
    assert not form.errors and not form.launch_button.disabled
    assert "%train panel_test_net blobs --steps 3 --lr 0.01" in form.magic_line.value


@pytest.mark.skipif(importlib.util.find_spec("skiff.grammar.plan") is None,
                    reason="no planner grammar yet")
def test_train_plan_button_shows_the_planner_table():
    from skiff.widgets.panels import train_form

    form = train_form()
    form.set(model="gpt-small", np=2)
    form.plan()
    plan_html = form.children[-2].value
    assert "skiff-plan" in form.children[-2]._dom_classes
    assert "dp" in plan_html and "⚠" not in plan_html
    form.set(model="mlp")   # %train's built-in models are planned as built (round 38)
    form.plan()
    assert "Plan for MLP" in form.children[-2].value
    form.set(model="mlpp")
    form.plan()
    assert "unknown model 'mlpp'" in form.children[-2].value


def test_ocr_form_checks_paths_and_takes_uploads(tmp_path):
    from PIL import Image

    from skiff.widgets.panels import lines_table_html, ocr_form, save_uploads

    form = ocr_form()
    # an empty required field says what to give (its option's help), not "required" alone
    assert form.errors == {"inputs": f"required: {form.fields['inputs'].action.help}"}
    form.set(inputs=str(tmp_path / "missing.png"))
    assert "missing.png" in form.errors["inputs"]
    assert form.launch_button.disabled
    img = tmp_path / "page.png"
    Image.new("RGB", (20, 10), "white").save(img)
    paths = save_uploads([{"name": "my page.png", "content": memoryview(img.read_bytes())}],
                         tmp_path / "up")
    assert [p.split("/")[-1] for p in paths] == ["my_page.png"]
    form.set(inputs=" ".join(paths), min_score="0.3")
    assert not form.errors and not form.launch_button.disabled
    assert "--min-score 0.3" in form.magic_line.value
    table = lines_table_html({"results": [
        {"image": "/a/p.png", "lines": [{"text": "Hello <b>", "score": 0.91}], "error": None},
        {"image": "/a/q.png", "lines": [], "error": "not an image"}]})
    assert "Hello &lt;b&gt;" in table and "0.910" in table and "not an image" in table


def test_solve_form_launches_and_shows_the_result():
    from skiff.widgets.panels import solve_form

    form = solve_form()
    for name in ("problem", "grid", "method", "precond", "rtol", "device"):
        assert name in form.fields
    assert isinstance(form.fields["problem"].widget, W.Combobox)
    assert not form.launch_button.disabled  # the defaults are a valid solve
    # an option left unset (no default) is not written on the line
    assert "--compatibility" not in form.magic_line.value
    form.set(grid="12x12", rtol="1e-9", method="bicgstab")
    assert "%solve poisson --grid 12x12 --method bicgstab --rtol 1e-09" in form.magic_line.value
    form.set(problem="nosuch")
    assert "unknown problem 'nosuch'" in form.errors["problem"]
    form.set(problem="poison")  # the same grammar as the magic and the terminal
    assert "(did you mean 'poisson'?)" in form.errors["problem"]
    form.set(problem="poisson", grid="512")
    assert "expected a grid of 2 or 3 sizes" in form.errors["grid"]
    form.set(grid="12x12")
    form.set(problem="poisson", restart="0")  # an advanced option: its section opens
    assert "restart" in form.errors and form.more.selected_index == 0
    form.set(restart="30")
    job = form.launch()
    assert job.wait(120).status == "done", job.error
    assert job.config["grid"] == [12, 12] and job.config["method"] == "bicgstab"
    view = form.output.children[0]
    view._thread and view._thread.join(20)
    # the field; the residual is the view's own chart, not a second convergence plot
    assert len(view.images.children) == 1
    (summary,) = form.result.children
    assert "converged: <b>True</b>" in summary.value


def test_solution_png_draws_field_and_convergence():
    import io

    import numpy as np
    from PIL import Image

    from skiff.widgets.panels import solution_png

    class Sol:
        field = np.outer(np.arange(8.0), np.arange(6.0))
        residuals = [1.0, 1e-2, 1e-5]

    png = solution_png(Sol())
    assert Image.open(io.BytesIO(png)).size == (2 * 336, 256)  # two panels
    assert solution_png(object()) is None


def test_panel_tabs_and_magic(shell):
    import skiff
    from skiff.widgets.panels import Panel, panel

    first = skiff.panel("solve")  # the public name builds the same Panel, on that tab
    try:
        assert isinstance(first, Panel) and first.selected_index == 1
        assert skiff.panel.__doc__ and panel.__doc__
    finally:
        first.close()
    shell.run_line_magic("load_ext", "skiff")
    p = shell.run_line_magic("skiff", "jobs")
    try:
        assert isinstance(p, Panel)
        assert list(p.titles) == ["Train", "Solve", "OCR", "Chat", "Jobs"]
        assert p.selected_index == 4 and p.children[4] is p.monitor
        assert "train" in p.forms and "ocr" in p.forms
        thread = p.monitor._thread
        assert thread.is_alive()
    finally:
        p.close()
    thread.join(5)
    assert not thread.is_alive()  # closing the panel stops its monitor
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="one tab name"):
        shell.run_line_magic("skiff", "bogus")
    with pytest.raises(UsageError, match=r"got 'trian' \(did you mean 'train'\?\)"):
        shell.run_line_magic("skiff", "trian")


def test_thread_runner_with_two_ranks_is_refused_next_to_a_field():
    from skiff.widgets.panels import solve_form

    form = solve_form()
    form.set(np="2", runner="thread")
    assert form.launch_button.disabled
    shown = [m for m in form.errors.values() if "--runner thread runs one rank" in m]
    assert len(shown) == 1 and set(form.errors) & {"np", "runner"}
    form.set(runner="process")
    assert not form.errors and not form.launch_button.disabled
