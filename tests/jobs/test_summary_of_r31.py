"""``Kind.summary_of(job, result)``: the terminal's summary and ``jobs show`` hand the kind
its job, so a kind can name the job in its lines (train: how to go on from a checkpoint kept
outside its run folder, which the result alone cannot name). The default is
``Kind.summary(result)``, unchanged."""

from __future__ import annotations

from skiff.jobs import launch
from skiff.jobs.render import describe
from skiff.jobs.terminal import summary
from skiff.kinds import KINDS, Kind


def run_named(config, reporter):
    return {"value": 7}


class NamedKind(Kind):
    name = "named"
    entry = f"{__name__}:run_named"

    def summary(self, result):
        return [f"value {result['value']}"]

    def summary_of(self, job, result):
        return [*self.summary(result), f"go on: jobs resume {job.id}"]


class PlainKind(Kind):
    name = "plain"
    entry = f"{__name__}:run_named"

    def summary(self, result):
        return [f"value {result['value']}"]


def test_the_fronts_give_the_kind_its_job(monkeypatch, runs_dir):
    monkeypatch.setitem(KINDS, "named", NamedKind())
    monkeypatch.setitem(KINDS, "plain", PlainKind())
    job = launch("named", {}).wait(30)
    assert job.status == "done", job.error
    text = summary(job, KINDS["named"])
    assert "  value 7" in text and f"  go on: jobs resume {job.id}" in text
    assert f"go on: jobs resume {job.id}" in describe(job)
    plain = launch("plain", {}).wait(30)
    text = summary(plain, KINDS["plain"])
    assert "  value 7" in text and "go on" not in text
    assert "value 7" in describe(plain)
