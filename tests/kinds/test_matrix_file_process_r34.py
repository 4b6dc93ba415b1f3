"""Round 34: ``solve A.npz --runner process`` (one rank in a process of its own: a long solve
that survives its kernel) was refused as "solved on one rank only"; it runs now, and
(round 39) ``--np 2 --method minres`` on a matrix file, which the row split does not run, is
refused in one line, before any job. Oracle:
SciPy's ``spsolve`` of the same system."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve


def _cli(tmp_path, runs, *args, monkeypatch, capsys):
    """``python -m skiff solve ARGS`` in this process, from ``tmp_path`` (``skiff.__main__``
    is ``sys.exit(main())``; the job's rank is still a process of its own): a subprocess
    paid the interpreter's, numpy's and scipy's imports again (round 46)."""
    from skiff.cli import main

    monkeypatch.setenv("SKIFF_RUNS", str(runs))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    status = main(["solve", *args])
    out = capsys.readouterr()
    return SimpleNamespace(returncode=status, stdout=out.out, stderr=out.err)


def test_a_matrix_file_runs_in_a_process_and_minres_is_refused_on_two_ranks(tmp_path,
                                                                         monkeypatch, capsys):
    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no mpiexec: {exc}")
    n = 400
    A = sp.diags([-np.ones(n - 1), 2.5 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]).tocsr()
    b = np.random.default_rng(3).standard_normal(n)
    sp.save_npz(tmp_path / "A.npz", A)
    np.save(tmp_path / "b.npy", b)
    out = _cli(tmp_path, tmp_path / "runs", "A.npz", "b.npy", "--runner", "process",
               "--save", "x.npz", "--wait", "--json", monkeypatch=monkeypatch, capsys=capsys)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["job"]["status"] == "done"
    with np.load(tmp_path / "x.npz") as z:
        x = z[[k for k in z.files if k in ("x", "field")][0]].ravel()
    np.testing.assert_allclose(x, spsolve(A, b), rtol=1e-6, atol=1e-8)
    # round 39 (h11): --np 2 splits a matrix file by rows (test_rows_job_r39h11.py); what
    # that split does not run (MINRES) is refused in one line before any job
    # (in this process: a second CLI process cost ~1 s CPU for one line)
    from skiff.jobs import submit

    runs = tmp_path / "runs2"
    monkeypatch.setenv("SKIFF_RUNS", str(runs))
    with pytest.raises(ValueError) as err:
        submit("solve", f"{tmp_path / 'A.npz'} {tmp_path / 'b.npy'} --np 2 --method minres")
    assert "--method minres is not split by rows" in str(err.value)
    assert "cg, bicgstab, gmres" in str(err.value)
    assert "\n" not in str(err.value) and not runs.exists()
