"""Round 37 (h12): ``skiff.panel()`` built every tab's form up front, 1,357 widget models
(1.08 MB of widget state saved with a notebook that ran no job). A tab's contents are now
built when the tab is first shown, or asked for (``panel.forms[kind]``, ``panel.chat``)."""

from __future__ import annotations

import json

import ipywidgets as W
import pytest
from ipywidgets.widgets.widget import _instances  # what Widget.widgets returns (deprecated)

from skiff.widgets.form import CommandForm


def _classes(widget) -> list[str]:
    return list(getattr(widget, "_dom_classes", ()))


def _saved(widget) -> list[dict]:
    """The saved widget state of ``widget`` and of everything it shows (as a notebook saves
    them), read back from the manager's state by model id."""
    states = W.Widget.get_manager_state(drop_defaults=False)["state"]
    out, todo = [], [widget.model_id]
    while todo:
        state = states[todo.pop()]["state"]
        out.append(state)
        json.dumps(state)  # what the notebook file holds
        todo.extend(c.removeprefix("IPY_MODEL_") for c in state.get("children", ()))
    return out


def test_the_panel_builds_only_the_tab_it_shows():
    import skiff
    from skiff.widgets.panels import solve_form

    before = len(_instances)
    alone = solve_form()  # the oracle: one form built by itself
    per_form = len(_instances) - before
    alone.close()

    before = len(_instances)
    p = skiff.panel()
    try:
        built = len(_instances) - before
        # the Train form, the monitor, four stand-ins; every form at once was 1,357 (h8)
        assert built < 500
        assert isinstance(p.children[0], CommandForm)
        assert "skiff-form-train" in _classes(p.children[0])
        assert [_classes(c) for c in p.children[1:4]] == [["skiff-tab-pending"]] * 3
        assert p.children[4] is p.monitor
        # the saved widget state has the tab shown, and not the others
        shown = [c for s in _saved(p) for c in s.get("_dom_classes", ())]
        assert "skiff-form-train" in shown and "skiff-field-model" in shown
        assert "skiff-form-solve" not in shown and "skiff-field-grid" not in shown

        # the browser selects the Solve tab (the message a click sends): it is filled
        before = len(_instances)
        p.set_state({"selected_index": 1})
        solve = p.children[1]
        assert isinstance(solve, CommandForm) and "skiff-form-solve" in _classes(solve)
        assert len(_instances) - before >= per_form  # the form, built now
        assert p.selected_index == 1
        assert list(p.titles) == ["Train", "Solve", "OCR", "Chat", "Jobs"]
        # built once: shown again, asked for by name, the same form
        p.selected_index = 0
        p.selected_index = 1
        assert p.children[1] is solve and p.forms["solve"] is solve
        # asked for before its tab is shown: built and put in its tab
        ocr = p.forms["ocr"]
        assert p.children[2] is ocr and "skiff-form-ocr" in _classes(ocr)
        assert p.selected_index == 1
        assert list(p.forms) == ["train", "solve", "ocr"] and "chat" not in p.forms
        with pytest.raises(KeyError):
            p.forms["jobs"]
    finally:
        p.close()


def test_opened_on_a_tab_builds_that_tab_and_refuses_an_unknown_one():
    from skiff.widgets.chat_tab import ChatTab
    from skiff.widgets.panels import panel

    before = len(_instances)
    with pytest.raises(ValueError, match="unknown tab 'trian'"):
        panel("trian")
    assert len(_instances) == before  # refused before anything was built

    p = panel("jobs")
    try:
        assert p.selected_index == 4
        assert not any(isinstance(c, CommandForm) for c in p.children)  # no form yet
        assert len(_instances) - before < 120
        shown = [c for s in _saved(p) for c in s.get("_dom_classes", ())]
        assert "skiff-monitor-heading" in shown and "skiff-form-train" not in shown
        assert isinstance(p.chat, ChatTab) and p.children[3] is p.chat
    finally:
        p.close()


def _reachable(widget) -> set[str]:
    """Model ids of ``widget`` and of every widget its synced traits name."""
    seen, todo = set(), [widget]
    while todo:
        w = todo.pop()
        if w.model_id in seen:
            continue
        seen.add(w.model_id)
        for name in w.keys:
            value = getattr(w, name)
            values = value if isinstance(value, (list, tuple)) else [value]
            todo.extend(v for v in values if isinstance(v, W.Widget))
    return seen


def test_a_form_leaves_no_model_it_does_not_show():
    from skiff.widgets.panels import train_form

    before = set(_instances)
    form = train_form()
    try:
        made = set(_instances) - before
        # each field's style replaced at once left the first one in the notebook (63 of
        # the Train form's 597 models), and each field had two layouts of its own
        assert made == _reachable(form)
        assert len(made) < 5.6 * len(form.fields)  # 597 for 63 fields before
        assert form.fields["lr"].widget.style.description_width == "9em"
        assert form.fields["model"].message.layout is form.fields["lr"].message.layout
    finally:
        form.close()


def test_monitor_rows_share_their_layouts(runs_dir, tmp_path, monkeypatch):
    from skiff.jobs import launch
    from skiff.widgets.monitor import JobMonitor

    def built(root) -> tuple[JobMonitor, set]:
        before = set(_instances)
        mon = JobMonitor(root, start=False)
        return mon, set(_instances) - before

    empty, alone = built(tmp_path / "no-runs")  # the oracle: the monitor without rows
    empty.close()
    for _ in range(3):
        launch("demo", {"steps": 1, "sleep": 0.0}).wait(10)
    mon, made = built(runs_dir)
    try:
        assert len(mon.rows) == 3
        assert made <= _reachable(mon)  # nothing made that the table does not show
        # a row was 40 models (2,157 in a panel with 20 jobs): 16 now, its widgets alone
        assert len(made) - len(alone) <= 3 * 16 + 10
        row = next(iter(mon.rows.values()))
        assert row.resume.layout.display == "none"  # a demo job does not resume
        assert row.cancel.layout.display != "none" and row.show.layout.display != "none"
    finally:
        mon.close()
