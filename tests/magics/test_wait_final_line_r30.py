"""``--wait`` (``wait_quietly``) in a notebook: the progress display it drew ends on the
job's final line, never on an empty output (round 29: a saved notebook kept an empty
``text/plain`` output under every waited cell)."""

import io
import threading

import IPython.display

import skiff.widgets.display
from skiff.jobs import launch
from skiff.magics.base import wait_quietly


class _Handle:
    def __init__(self, shown):
        self.shown = shown

    def update(self, data, raw=False):
        self.shown.append(data["text/plain"])


def _job_waiting_for(gate):
    def fn(config, reporter):
        reporter.progress(1, 4)
        gate.wait(20)
        for step in range(2, 5):
            reporter.progress(step, 4)
            reporter.metric("loss", 1.0 / step, step=step)
        return {"steps": 4}

    return launch("custom", fn=fn)


def test_notebook_wait_ends_on_the_final_line(monkeypatch):
    shown: list[str] = []

    gate = threading.Event()

    def display(data, raw=False, display_id=False):
        shown.append(data["text/plain"])
        gate.set()  # the job goes on once its first line is drawn (a timer raced the draw)
        return _Handle(shown)

    monkeypatch.setattr(skiff.widgets.display, "widgets_enabled", lambda: True)
    monkeypatch.setattr(IPython.display, "display", display)
    job = _job_waiting_for(gate)
    try:
        wait_quietly(job, quiet_s=0.0, stream=None)
    finally:
        gate.set()
    assert job.status == "done"
    assert shown, "the wait drew no progress line"
    assert all(line.strip() for line in shown), shown  # never an empty output
    last = shown[-1].split()
    assert last[:2] == [job.id, "done"], shown  # the job's own id and status
    assert abs(float(last[last.index("loss") + 1]) - job.metrics["loss"][-1][1]) < 1e-3, shown


def test_terminal_wait_ends_on_the_final_line():
    gate = threading.Event()
    job = _job_waiting_for(gate)

    class Stream(io.StringIO):
        def write(self, text):  # the job goes on once its first line is drawn
            gate.set()
            return super().write(text)

    stream = Stream()
    try:
        wait_quietly(job, quiet_s=0.0, stream=stream)
    finally:
        gate.set()
    text = stream.getvalue()
    assert text.endswith("\n")
    final = text.rstrip("\n").split("\r")[-1].split()
    assert final[:2] == [job.id, job.status] == [job.id, "done"], text
