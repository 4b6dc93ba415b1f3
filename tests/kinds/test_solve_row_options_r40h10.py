"""Round 40 (h10): the solve kind's ``--precond ilu``, ``--overlap K`` and ``--reorder`` (the
row split's block Jacobi / additive Schwarz / reverse Cuthill-McKee, h7's and h10's kernels,
which the CLI and ``%solve`` could not ask for). ``--precond ilu`` runs on one rank too;
``--overlap`` / ``--reorder`` where no row split reads them are one line before any run
folder. Oracle for the runs: SciPy's ``spsolve``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.jobs import submit
from skiff.jobs.launch import dry_run


def _shuffled(n=12, seed=0):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    perm = np.random.default_rng(seed).permutation(n * n)
    return sp.csr_matrix(sp.kronsum(T, T))[perm][:, perm].tocsr()


def test_precond_ilu_on_one_rank_is_spsolves_x(runs_dir, tmp_path):
    A = _shuffled()
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    job, _ = submit("solve", f"{tmp_path / 'A.mtx'} {tmp_path / 'b.npy'} --precond ilu "
                    f"--rtol 1e-10", front="cli")
    assert job.wait(60).status == "done", job.error
    assert job.config["precond"] == "ilu" and job.value.precond == "ilu"
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(np.asarray(job.value.x).ravel() - ref) <= 1e-8 * np.linalg.norm(ref)


def test_the_row_split_options_reach_the_config(runs_dir, tmp_path):
    sp.save_npz(tmp_path / "A.npz", _shuffled())
    cfg = dry_run("solve", f"{tmp_path / 'A.npz'} --np 2 --precond ilu --overlap 1 "
                           f"--reorder rcm")["config"]
    assert (cfg["precond"], cfg["overlap"], cfg["reorder"]) == ("ilu", 1, "rcm")
    assert "overlap" not in dry_run("solve", f"{tmp_path / 'A.npz'} --np 2")["config"]


@pytest.mark.parametrize("words, needle", [
    ("{A} --overlap 1", "--overlap shapes the split of a matrix file's rows over MPI ranks "
                        "(solve A.mtx --np 2 --precond ilu --overlap 1), and 'A.npz' on one "
                        "rank has no such split: drop --overlap"),
    ("poisson --grid 16x16 --reorder rcm --np 2", "and the built-in grid 'poisson' has no "
                                                  "such split: drop --reorder"),
    ("poisson --grid 16x16 --precond ilu", "--precond ilu factors a matrix's entries "
                                           "(ILU(0)), and 'poisson' is a grid problem"),
    ("{A} --np 2 --overlap 5 --precond amg", "--np 2: --overlap 5; the row split grows each "
                                             "rank's block by 1 to 4 layers"),   # round 41
    ("{A} --np 2 --overlap 1", "--overlap 1 grows each rank's block for --precond ilu or amg "
                               "(additive Schwarz), and the preconditioner is auto"),
    ("{A} --np 2 --precond chebyshev", "takes --precond jacobi, ilu (block Jacobi: ILU(0)"),
])
def test_what_no_split_reads_is_one_line_before_any_run(words, needle, runs_dir, tmp_path):
    sp.save_npz(tmp_path / "A.npz", _shuffled(6))
    with pytest.raises(ValueError) as err:
        submit("solve", words.format(A=tmp_path / "A.npz"))
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


@pytest.mark.mpi
def test_cli_np_2_precond_ilu_overlap_1_is_spsolves_x(tmp_path, monkeypatch, capsys):
    pytest.importorskip("mpi4py")
    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    A = _shuffled(16)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    # ``python -m skiff`` in this process, from the folder of the files (``skiff.__main__``
    # is ``sys.exit(main())``; the ranks are still mpiexec's): a subprocess paid the
    # interpreter's, numpy's and scipy's imports again (round 46)
    from skiff.cli import main

    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    status = main(["solve", "A.mtx", "b.npy", "--np", "2", "--precond", "ilu", "--overlap",
                   "1", "--rtol", "1e-10", "--save", "x.npz", "--wait", "--json"])
    out = capsys.readouterr()
    assert status == 0, out.out[-2000:] + out.err[-2000:]
    res = json.loads(out.out)["result"]
    assert res["converged"] and res["ranks"] == 2 and res["precond"] == "ilu"
    assert "overlap-1 schwarz ilu" in res["solver"] and "rcm-ordered" in res["solver"]
    with np.load(tmp_path / "x.npz") as z:
        x = z["field"].ravel()
    ref = spla.spsolve(A.tocsc(), b)
    assert np.abs(x - ref).max() <= 1e-7 * np.abs(ref).max()
