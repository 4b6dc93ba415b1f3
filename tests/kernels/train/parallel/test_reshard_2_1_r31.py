"""Round 31: the 2 <-> 1 twins of the 4-rank resharding tests (``test_checkpoint.py``'s
``test_reshard_4_to_2_and_2_to_4``, ``test_data_parallel.py``'s
``test_zero_checkpoint_resumes_on_another_world_size``), which skip on a machine of 2 cores.

Oracles: the sharded state is a function of the step (``ckpt_check.py`` checks every element
it loaded against it), and a ZeRO run resumed on the other world size ends on the losses and
weights of one process trained alone on the same global batches (``dp_check.py``'s
``SingleDevice`` reference) to 1e-5.

Round 43 (h10): the one-rank runs of the scripts run in the test's own process (``_here``:
the same script, its world the one-rank group, as ``mpiexec -n 1`` gives it), not as
launches of their own (an interpreter and skiff's imports each), and the two 2-rank loads
of the first test are one launch (``ckpt_check.py loads DIR DIR``).
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys

import pytest

from .mpi_util import HERE, run_mpi

TOL = 1e-5


def _here(script: str, *args) -> dict:
    """``scripts/<script> ARGS`` run as one rank in this process: its ``RESULT`` object."""
    argv, hook, path = sys.argv, sys.excepthook, list(sys.path)
    sys.argv = [str(HERE / "scripts" / script), *map(str, args)]
    sys.path.insert(0, str(HERE / "scripts"))
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(sys.argv[0], run_name="__main__")
    finally:  # abort_on_error sets the excepthook (a launch's rank aborts the others)
        sys.argv, sys.excepthook, sys.path[:] = argv, hook, path
    text = out.getvalue()
    assert text.count("RESULT ") == 1, text[-4000:]
    return json.JSONDecoder().raw_decode(text, text.index("RESULT ") + len("RESULT "))[0]


@pytest.mark.mpi
def test_reshard_2_to_1_and_1_to_2(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run_mpi(2, "ckpt_check.py", "save", a, 3)
    res = _here("ckpt_check.py", "load", a)
    assert res["step"] == 3 and res["old_world"] == 2
    assert res["w"] and res["m"] and res["v"]  # every element of the 2 shards, joined
    assert res["residual"] is None  # per-rank state does not survive a new world size
    _here("ckpt_check.py", "save", b, 2)
    ranks = run_mpi(2, "ckpt_check.py", "loads", b, a)  # both folders in one launch
    for res in (r["loads"][0] for r in ranks):  # one shard cut in two
        assert res["step"] == 2 and res["old_world"] == 1 and res["m"] and res["v"]
    for res in (r["loads"][1] for r in ranks):  # same world: per-rank state returns
        assert res["residual"] == [float(res["rank"])] * 2


@pytest.fixture(scope="module")
def zero_both_ways(tmp_path_factory):
    """zero1 and zero2 together: 2 launches and 2 one-rank runs here (round 43 h5: 4
    launches a kind before, 8 in all; h10: the one-rank ones in this process)."""
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    kinds = "same:zero1,zero2"
    run_mpi(2, "dp_check.py", kinds, 4, 1, a, 2)  # 2 ranks save after step 2 of 4
    one = _here("dp_check.py", kinds, 4, 1, a, "resume")  # one rank resumes them
    _here("dp_check.py", kinds, 4, 1, b, 2)  # one rank saves after step 2
    # (the same one-rank run cannot also save: a kind's resume and save share a folder)
    return one, run_mpi(2, "dp_check.py", kinds, 4, 1, b, "resume")


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["zero1", "zero2"])
def test_zero_checkpoint_resumes_on_one_rank_and_back(zero_both_ways, kind):
    # 2 ranks save after step 2 of 4; one rank resumes and ends on the one-process reference
    one, two = zero_both_ways
    res = one[kind]
    assert len(res["losses"]) == 2
    assert res["loss_diff"] < TOL and res["weight_diff"] < TOL, res
    # and one rank's checkpoint resumed on 2
    for res in (r[kind] for r in two):
        assert len(res["losses"]) == 2
        assert res["loss_diff"] < TOL and res["weight_diff"] < TOL, res
