"""Round 33 (h8): a thread job whose result raised while written (``to_json`` failing: a
resumed OCR job's, round 33) raised out of its thread: the job stayed "running", and
``jobs resume`` / ``--wait`` / the terminal's follow waited for ever. It is failed now,
with why; the oracle is the exception the result's ``to_json`` raises."""

from __future__ import annotations

import pytest

from skiff.jobs import launch


class _Broken:
    def to_json(self):
        return [].to_json()  # AttributeError: 'list' object has no attribute 'to_json'


def _expected() -> str:
    with pytest.raises(AttributeError) as err:
        _Broken().to_json()
    return f"{type(err.value).__name__}: {err.value}"


def test_a_result_that_cannot_be_written_fails_the_job(runs_dir):
    job = launch("demo", {"steps": 1}, fn=lambda config, reporter: _Broken(),
                 runner="thread")
    job.wait(timeout=30)  # it waited for ever
    assert job.refresh().status == "failed"
    assert job.state.error == f"its result could not be written ({_expected()})"
    assert "to_json" in (job.run_dir / "logs" / "traceback.txt").read_text()
