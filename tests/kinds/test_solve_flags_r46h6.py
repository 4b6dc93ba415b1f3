"""Round 46 (h6): ``%solve cylinder --channel height=H[,length=L][,centre=X:Y]``. Round 45
(h12) gave ``run_case`` and a job's config another channel around the DFG cylinder; the
magic / CLI grammar had no flag for it. The oracle: the channel the flow job hands to
``run_case`` (the flow's own tests check what it does with it), and one line for a bad
one. And ``--np 2 --near-nullspace B.npy`` on a matrix file: the row split's coarse AMG
takes it now (``parallel/test_near_nullspace_r46h6.py``), the launch refused it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.kinds.solve import COMMAND, KIND, to_config


def _config(line):
    return to_config(vars(COMMAND.parse(line)))


def test_the_channel_reaches_the_flow_job(monkeypatch):
    from skiff.kernels.solve.flow import job

    config = _config("cylinder --case 2d-2 --channel height=0.82,centre=0.2:0.41")
    assert config["channel"] == {"length": 2.2, "height": 0.82, "centre": [0.2, 0.41]}
    seen = {}

    def fake(case, **kw):
        seen.update(kw, case=case)
        raise RuntimeError("stop")

    monkeypatch.setattr(job, "run_case", fake)
    with pytest.raises(RuntimeError, match="stop"):
        job.run(config)
    from skiff.kernels.solve.flow.dfg import check_channel

    ch = check_channel(seen["channel"])
    assert (seen["case"], ch.height, ch.centre, ch.length) == ("2d-2", 0.82, (0.2, 0.41), 2.2)
    assert "channel" not in _config("cylinder")   # DFG's channel when not given


@pytest.mark.parametrize("bad, match", [
    ("height=0.1", "must lie inside the channel"),           # the cylinder touches a wall
    ("0.82", r"height=H\[,length=L\]"),
    ("height=x", "must be a number"),
    ("centre=0.2", "two numbers"),
])
def test_a_bad_channel_is_refused_in_one_line(bad, match):
    with pytest.raises(ValueError, match=match) as e:
        _config(f"cylinder --channel {bad}")
    assert "\n" not in str(e.value) and str(e.value).startswith(f"--channel {bad}")
    with pytest.raises(ValueError, match="--channel is an option of cylinder"):
        _config("poisson --channel height=0.82")


def test_np_takes_a_near_nullspace_for_a_matrix_file(tmp_path, monkeypatch):
    import pyamg

    A, B = pyamg.gallery.linear_elasticity((6, 6), format="csr")
    sp.save_npz(tmp_path / "A.npz", A.tocsr())
    np.save(tmp_path / "B.npy", B)
    monkeypatch.chdir(tmp_path)
    req = KIND.prepare(vars(COMMAND.parse("A.npz --np 2 --near-nullspace B.npy")))
    assert "2 ranks by rows" in KIND.check_launch(req.config, ranks=2)
    req = KIND.prepare(vars(COMMAND.parse("A.npz --np 2 --near-nullspace B.npy "
                                          "--max-coarse 10")))
    with pytest.raises(ValueError, match="--max-coarse is read by the one-rank solver only"):
        KIND.check_launch(req.config, ranks=2)


def test_np_takes_a_complex_matrix_file(tmp_path, monkeypatch):
    """Round 46 (h6): the row split solves complex systems by block Jacobi
    (``parallel/test_complex_rows_r46h6.py``); the launch refused every complex file."""
    A = sp.csr_matrix(sp.diags([-1.0, 2.0 - 0.5j, -1.0], [-1, 0, 1], shape=(40, 40)))
    sp.save_npz(tmp_path / "C.npz", A)
    monkeypatch.chdir(tmp_path)
    req = KIND.prepare(vars(COMMAND.parse("C.npz --np 2")))
    assert "2 ranks by rows" in KIND.check_launch(req.config, ranks=2)
    req = KIND.prepare(vars(COMMAND.parse("C.npz --np 2 --precond ilu")))
    # round 47 (h4): the overlap and the coarse level take a complex matrix
    assert "2 ranks by rows" in KIND.check_launch({**req.config, "overlap": 1}, ranks=2)


def test_the_summary_says_why_auto_switched(tmp_path, monkeypatch):
    """Auto's GMRES + AMG stalls on central differences of a strong convection (24^2) and
    the sparse LU solves it: the summary said ``direct + none ... converged in 31
    iterations``; it now says why (the Solution's ``switched``)."""
    import skiff

    n = 24
    h = 1.0 / (n + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h ** 2
    D = sp.diags([-1.0, 1.0], [-1, 1], shape=(n, n)) / (2 * h)
    A = sp.csr_matrix(1e-3 * sp.kronsum(T, T) + sp.kron(sp.identity(n), D))
    lines = KIND.summary(skiff.solve(A, np.ones(n * n)).to_json())
    assert lines[0].startswith("matrix") and "direct + none" in lines[0]
    assert lines[1].startswith("auto switched: gmres stagnated at |r|/|b|"), lines
