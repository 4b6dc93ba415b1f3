"""Execute a notebook as the tests do: nbclient, widget state stored, quick mode on; and
read what a cell sent to a live kernel client (:func:`cell_output`)."""

from __future__ import annotations

import json
import os
import queue
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "test-artifacts"


def execute_notebook(name: str, *, timeout: int = 300, env: dict | None = None, cwd=None):
    """Run ``notebooks/<name>`` top to bottom with ``SKIFF_QUICK=1``; return the executed
    notebook (also saved under test-artifacts/). Raises on the first failing cell."""
    import nbformat
    from nbclient import NotebookClient

    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    old = dict(os.environ)
    os.environ.update({"SKIFF_QUICK": "1", "MPLBACKEND": "Agg", **(env or {})})
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(cwd or NOTEBOOKS)}},
                                store_widget_state=True)
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    ARTIFACTS.mkdir(exist_ok=True)
    nbformat.write(nb, ARTIFACTS / name)
    return nb


def widget_states(nb) -> dict:
    """model_id -> state of every widget saved in the notebook's metadata."""
    store = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    return {k: v.get("state", {}) for k, v in store.get("state", {}).items()}


def outputs_text(nb) -> str:
    """All text and HTML the notebook printed, joined (for assertions).

    Consecutive pieces of one stream are joined as they were printed: the kernel flushes
    stdout on a timer, so one ``print("done", True)`` can arrive as "done" and " True\n"
    in two outputs, which joined with a newline would read "done\n True"."""
    parts = []
    for cell in nb.cells:
        last_stream = None
        for out in cell.get("outputs", []):
            stream = out.get("name") if out.get("output_type") == "stream" else None
            if stream is not None and stream == last_stream:
                parts[-1] += out["text"]
                continue
            last_stream = stream
            if "text" in out:
                parts.append(out["text"])
            data = out.get("data", {})
            for key in ("text/plain", "text/html", "application/json"):
                if key in data:
                    value = data[key]
                    parts.append(value if isinstance(value, str) else json.dumps(value))
    return "\n".join(parts)


def cell_output(kc, msg_id: str, timeout: float = 60) -> str:
    """The text a cell run by a jupyter_client ``kc`` printed (streams, and errors as
    ``Name: value``) until its kernel went idle, or until ``timeout`` seconds."""
    text, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            text.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    return "".join(text)
