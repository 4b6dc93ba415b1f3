import json
import threading

import pytest

from skiff.jobs.events import EventReader, EventWriter, read_events
from skiff.jobs.state import JobState


def test_write_then_read_in_order(tmp_path):
    path = tmp_path / "events.jsonl"
    w = EventWriter(path)
    w.write("status", status="running")
    w.write("metric", name="loss", value=1.5, step=1)
    events = read_events(path)
    assert [e["type"] for e in events] == ["status", "metric"]
    assert events[1]["value"] == 1.5 and events[1]["rank"] == 0


def test_reader_follows_appends_and_waits_for_partial_line(tmp_path):
    path = tmp_path / "events.jsonl"
    reader = EventReader(path)
    assert reader.read() == []
    EventWriter(path).write("log", message="a")
    assert [e["message"] for e in reader.read()] == ["a"]
    with open(path, "a") as fh:
        fh.write('{"type": "log", "message": "b"')  # half a line, still being written
    assert reader.read() == []
    with open(path, "a") as fh:
        fh.write("}\n")
    assert [e["message"] for e in reader.read()] == ["b"]


def test_corrupt_line_is_skipped_with_warning_and_rest_kept(tmp_path):
    path = tmp_path / "events.jsonl"
    w = EventWriter(path)
    w.write("log", message="before")
    with open(path, "a") as fh:
        fh.write("{not json at all\n")
        fh.write("[1, 2]\n")
    w.write("log", message="after")
    reader = EventReader(path)
    with pytest.warns(UserWarning, match="corrupt line 2"):
        events = reader.read()
    assert [e["message"] for e in events] == ["before", "after"]
    assert reader.skipped == 2


def test_nan_metric_round_trips(tmp_path):
    path = tmp_path / "events.jsonl"
    EventWriter(path).write("metric", name="loss", value=float("nan"))
    raw = path.read_text()
    json.loads(raw)  # still strict JSON
    value = read_events(path)[0]["value"]
    assert value != value


def test_unknown_event_type_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown event type 'bogus'"):
        EventWriter(tmp_path / "e.jsonl").write("bogus")


def test_concurrent_writers_never_interleave(tmp_path):
    path = tmp_path / "events.jsonl"
    writers = [EventWriter(path, rank=r) for r in range(4)]

    def spam(w):
        for i in range(200):
            w.write("log", message="x" * 300 + str(i))

    threads = [threading.Thread(target=spam, args=(w,)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = read_events(path)
    assert len(events) == 800


def test_state_folds_events():
    s = JobState()
    for e in [
        {"t": 1.0, "type": "status", "status": "queued"},
        {"t": 2.0, "type": "status", "status": "running"},
        {"t": 2.5, "type": "progress", "done": 1, "total": 4},
        {"t": 3.5, "type": "progress", "done": 3, "total": 4},
        {"t": 3.6, "type": "metric", "name": "loss", "value": 0.5, "step": 3},
        {"t": 4.0, "type": "status", "status": "done"},
        {"t": 5.0, "type": "status", "status": "running"},
    ]:
        s.apply(e)
    assert s.status == "done" and s.final
    assert s.rate() == pytest.approx(2.0)
    assert s.last("loss") == 0.5
    assert s.elapsed(100.0) == pytest.approx(2.0)


def test_first_failure_wins():
    s = JobState()
    s.apply({"t": 1, "type": "error", "rank": 1, "message": "boom"})
    s.apply({"t": 1, "type": "status", "status": "failed", "message": "rank 1: boom"})
    s.apply({"t": 2, "type": "status", "status": "cancelled"})
    assert s.status == "failed" and s.error == "rank 1: boom"


def test_dead_rank_replaces_an_mpi_symptom_but_not_a_real_error():
    symptom = JobState()
    symptom.apply({"t": 1, "type": "error", "rank": 0, "message": "Exception: MPI error",
                   "comm_error": True})
    symptom.apply({"t": 1, "type": "status", "status": "failed", "message": "MPI error"})
    symptom.apply({"t": 2, "type": "error", "rank": -1, "dead_rank": 1,
                   "message": "rank 1 (pid 7) killed by signal 9 (SIGKILL)"})
    assert symptom.error.startswith("rank 1 (pid 7) killed") and symptom.status == "failed"

    real = JobState()
    real.apply({"t": 1, "type": "error", "rank": 0, "message": "ValueError: bad shape"})
    real.apply({"t": 2, "type": "error", "rank": -1, "dead_rank": 1, "message": "rank 1 died"})
    assert real.error == "ValueError: bad shape"


def test_the_jobs_grammar_knows_every_status():
    from skiff.grammar.jobs import STATUSES as GRAMMAR_STATUSES
    from skiff.jobs.events import STATUSES

    assert GRAMMAR_STATUSES == STATUSES
