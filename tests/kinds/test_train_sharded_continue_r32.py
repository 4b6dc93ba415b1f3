"""Round 32: a job on several ranks (its checkpoints ``step-N/`` folders with a manifest)
cancelled and resumed: the summary's "to continue" line saw only one-file checkpoints and
said "nothing left to go on from, its checkpoints in .../checkpoints are gone (removed?)"
beside the ``step-00000167/`` the cancel had just written (``python -m skiff train mlp
churn.csv --np 2 --strategy zero2``, then ``jobs cancel``). The oracle: the folders written
here, as ``parallel.checkpoint.save_sharded`` lays them out."""

from __future__ import annotations

import json

from skiff.kinds.train import _continue_line, _newest_step


def _sharded(folder, step):
    d = folder / f"step-{step:08d}"
    d.mkdir(parents=True)
    (d / "shard-00000.npz").write_bytes(b"")
    (d / "manifest.json").write_text(json.dumps({"step": step}))
    return d


def test_the_continue_line_of_a_job_on_ranks_names_jobs_resume(tmp_path):
    run = tmp_path / "20261205-203949-train-3682"
    ck = run / "checkpoints"
    config = {"model": "mlp", "steps": 300}
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"id": run.name, "kind": "train",
                                                 "config": config}))
    for step in (100, 150):
        _sharded(ck, step)
    last = _sharded(ck, 167)
    (ck / "step-00000200").mkdir()  # a folder a rank was writing when killed: no manifest
    assert _newest_step(str(ck)) == 167
    line = _continue_line(str(last))
    assert "gone" not in line
    assert line.startswith(f"to continue: python -m skiff jobs resume {run.name}")


def test_one_file_and_folder_checkpoints_together(tmp_path):
    (tmp_path / "step-00000040.npz").write_bytes(b"x")
    _sharded(tmp_path, 30)
    assert _newest_step(str(tmp_path)) == 40
    assert _newest_step(str(tmp_path / "none")) is None
