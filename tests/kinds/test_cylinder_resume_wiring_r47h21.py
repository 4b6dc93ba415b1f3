"""``jobs resume ID`` of a cancelled unsteady ``%solve cylinder`` run goes on from the state it
kept (``RUN/flow-state.npz``, round 47 h21); it started again from rest (a flow "has no warm
start"). The flow kernel's own test (test_cylinder_resume_r47h21) checks the run it gives."""

from types import SimpleNamespace

import pytest

from skiff.kinds import KINDS


def _job(run_dir, status="cancelled"):
    return SimpleNamespace(id="abc123", run_dir=run_dir, status=status,
                           config={"problem": "cylinder", "case": "2d-2", "dt": 0.02,
                                   "resume_from": "/elsewhere/flow-state.npz"},
                           meta={"command": "python -m skiff solve cylinder --case 2d-2"})


def test_a_cancelled_cylinder_run_goes_on_from_its_kept_state(tmp_path):
    kind = KINDS["solve"]
    with pytest.raises(ValueError, match="is a flow"):      # it kept nothing: said so
        kind.resume_config(_job(tmp_path))
    (tmp_path / "flow-state.npz").write_bytes(b"")
    config = kind.resume_config(_job(tmp_path))
    assert config["resume_from"] == str(tmp_path / "flow-state.npz")    # its own, not the
    assert config["dt"] == 0.02 and config["case"] == "2d-2"            # one it resumed
    with pytest.raises(ValueError, match="is a flow"):      # a done run: nothing to go on
        kind.resume_config(_job(tmp_path, "done"))
