"""Round 29, as a terminal user: ``jobs resume`` of a long training took 24 s with nothing
left to train; each ``job.result`` (read twice by a resume) walked every entry of the
result's history (one per step: 200,000) to find paths of a moved runs folder. Now the
JSON text is scanned for run-folder paths first and the walk is left out when none moves.
The oracle: the full walk (:func:`rebased` without the text), which the answer must equal
in every case, moved or not, with escapes in the strings."""

from __future__ import annotations

import json

import pytest

from skiff.jobs import Job
from skiff.jobs.moved import rebased

_OTHER = "/elsewhere/old runs"


def _result(root, name, *, steps=2000, where=None, key="checkpoint"):
    where = str(root) if where is None else where
    return {"steps": steps,
            "history": [{"step": i + 1, "loss": 1.0 / (i + 1), "lr": 1e-3} for i in range(steps)],
            key: f"{where}/{name}/checkpoints/step-{steps:08d}.npz",
            "notes": ['a "quoted" word and a back\\slash', "plain"],
            "nested": {"paths": [f"{where}/{name}/model.npz", "/tmp/other/file"]}}


def _run_folder(root, name):
    folder = root / name
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


@pytest.mark.parametrize("dumps", [
    lambda v: json.dumps(v),
    lambda v: json.dumps(v, indent=1, ensure_ascii=False),
    lambda v: json.dumps(v).replace("/", "\\/"),  # a writer that escapes every "/"
])
@pytest.mark.parametrize("moved", [False, True])
def test_rebased_with_the_text_equals_the_full_walk(tmp_path, dumps, moved):
    root = tmp_path / "runs ü \"q\""
    name = "20261205-101010-train-ab12"
    folder = _run_folder(root, name)
    value = _result(root, name, where=_OTHER if moved else None)
    text = dumps(value)
    assert json.loads(text) == value
    walked = rebased(value, folder)
    fast = rebased(json.loads(text), folder, text)
    assert fast == walked
    if moved:  # the oracle moved the checkpoint into this runs root
        assert walked["checkpoint"].startswith(str(root / name))
    else:
        assert walked == value


def test_nothing_moved_gives_the_value_back_unwalked(tmp_path):
    root = tmp_path / "runs"
    name = "20261205-101010-train-ab12"
    folder = _run_folder(root, name)
    value = _result(root, name, steps=20000)
    text = json.dumps(value)
    assert rebased(value, folder, text) is value  # not copied entry by entry
    assert rebased(value, folder) == value


def test_job_result_names_a_moved_checkpoint(tmp_path, monkeypatch):
    """``Job.result`` through the scan: a result written under another root names the run
    folder beside the job (the walk's answer), a result under this root is as written."""
    root = tmp_path / "runs"
    monkeypatch.setenv("SKIFF_RUNS", str(root))
    name = "20261205-101010-train-ab12"
    folder = _run_folder(root, name)
    (folder / "config.json").write_text(json.dumps({
        "id": name, "kind": "train", "config": {}, "runner": "thread", "np": 1}))
    for where in (_OTHER, str(root)):
        value = _result(root, name, where=where)
        (folder / "result.json").write_text(json.dumps(value))
        got = Job.load(name).result
        assert got == rebased(value, folder)
        assert got["checkpoint"] == f"{root}/{name}/checkpoints/step-00002000.npz"
