"""A job state folded to ``folded.json`` and read back goes on taking progress with work
(an OCR job's pixel-weighted rate: ``JobState._worked`` came back a plain list and the next
progress raised ``AttributeError``); the read-back state's ETA equals the unfolded one's."""

from skiff.jobs.folded import _decode, _encode
from skiff.jobs.state import JobState

EVENTS = [{"type": "status", "status": "running", "t": 0.0},
          {"type": "progress", "t": 1.0, "done": 1, "total": 8, "work": 1.0, "work_total": 8.0},
          {"type": "progress", "t": 2.5, "done": 2, "total": 8, "work": 2.0, "work_total": 8.0},
          {"type": "progress", "t": 4.0, "done": 3, "total": 8, "work": 3.5, "work_total": 8.0}]
NEXT = {"type": "progress", "t": 5.0, "done": 4, "total": 8, "work": 4.0, "work_total": 8.0}


def test_a_folded_state_takes_work_progress_as_the_unfolded_one():
    kept, folded = JobState(), JobState()
    for e in EVENTS:
        kept.apply(dict(e))
        folded.apply(dict(e))
    back = _decode(_encode(folded))
    kept.apply(dict(NEXT))
    back.apply(dict(NEXT))
    assert back.done == kept.done == 4
    assert back.work == kept.work
    assert back.eta() == kept.eta()
