"""Read skiff's widgets back out of a notebook's stored widget state (for assertions)."""

from __future__ import annotations

import re

from tests.notebook_util import widget_states


def _classes(state: dict) -> list[str]:
    return list(state.get("_dom_classes", []))


def _child_ids(state: dict) -> list[str]:
    return [c.replace("IPY_MODEL_", "") for c in state.get("children", [])]


def _descendants(states: dict, model_id: str) -> list[str]:
    out, todo = [], [model_id]
    while todo:
        mid = todo.pop()
        out.append(mid)
        todo.extend(c for c in _child_ids(states.get(mid, {})) if c in states)
    return out


def job_views(nb) -> dict[str, dict]:
    """job id -> what its JobView showed: status, progress value and max, text of the log,
    error, progress text, whether a chart and how many artifact images were drawn."""
    states = widget_states(nb)
    views = {}
    for mid, state in states.items():
        if "skiff-job-view" not in _classes(state):
            continue
        info = {"status": None, "value": None, "max": None, "log": "", "error": "",
                "progress_text": "", "chart": False, "images": 0, "id": None}
        for cid in _descendants(states, mid):
            s = states[cid]
            classes = _classes(s)
            if "skiff-status" in classes:
                m = re.search(r">(\w+)</span>", s.get("value", ""))
                info["status"] = m.group(1) if m else None
            elif "skiff-progress" in classes:
                info["value"], info["max"] = s.get("value"), s.get("max")
            elif "skiff-progress-text" in classes:
                info["progress_text"] = s.get("value", "")
            elif "skiff-log" in classes:
                info["log"] = s.get("value", "")
            elif "skiff-error" in classes:
                info["error"] = s.get("value", "")
            elif "skiff-chart" in classes:
                info["chart"] = (s.get("layout") is not None and
                                 _display(states, s) != "none")
            elif "skiff-artifact" in classes:
                info["images"] += 1
            elif "skiff-reattach" in classes:
                info["reattach"] = s.get("value", "")
            elif "<code" in s.get("value", "") and info["id"] is None:
                m = re.search(r"<code[^>]*>([^<]+)</code>", s["value"])
                info["id"] = m.group(1) if m else None
        views[info["id"] or mid] = info
    return views


def _display(states: dict, state: dict):
    layout = states.get(str(state.get("layout", "")).replace("IPY_MODEL_", ""), {})
    return layout.get("display")
