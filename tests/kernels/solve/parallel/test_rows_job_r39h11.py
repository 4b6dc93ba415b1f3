"""Round 39 (h11): ``solve A.mtx [b.npy] --np 2`` as a job: the matrix split over the job's
MPI ranks by rows (``parallel/rows_job.py``), rank 0 reporting the residual through the
job's reporter, the Solution (x, true residual, iterations, ``subdomains``) in the run
folder, a cancel stopping every rank with the last iterate, and a method the split does
not run refused in one line before any run folder. Oracle: SciPy's ``spsolve``.

Ranks are threads here (an in-process stand-in for the mpi4py calls the solver makes), but
for the one CLI run on 2 MPI ranks (marked ``mpi``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as spla

pytest.importorskip("mpi4py")

from .thread_ranks import on_threads, shuffled_laplacian  # noqa: E402

ROOT = Path(__file__).resolve().parents[4]


_matrix = shuffled_laplacian


class _Reporter:
    """What the job's reporter receives (metrics, progress, info); ``stop_at``: the
    iteration from which ``should_stop`` says yes (a cancel)."""

    def __init__(self, rank, stop_at=None):
        self.rank, self.world_size, self.stop_at = rank, 2, stop_at
        self.metrics, self.infos, self.logs, self.step = [], {}, [], 0

    def metric(self, name, value, step=None):
        self.metrics.append((name, value, step))
        self.step = step

    def progress(self, *a, **k):
        pass

    def info(self, **k):
        self.infos.update(k)

    def log(self, text):
        self.logs.append(text)

    def should_stop(self):
        return self.stop_at is not None and self.step >= self.stop_at

    def check(self):
        pass


def _on_two(fn):
    return on_threads(2, fn, outcomes=True)


@pytest.mark.parametrize("convect, asked, method", [
    (0.0, "auto", "cg"), (0.8, "auto", "bicgstab"), (0.8, "gmres", "gmres")])
def test_two_ranks_report_on_rank_0_and_hold_spsolves_x(convect, asked, method):
    from skiff.kernels.solve.parallel.rows_job import RowJobSolver

    A = _matrix(convect=convect)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    reps = [_Reporter(0), _Reporter(1)]

    def rank(comm):   # auto: cg when symmetric; GMRES(10): several restart cycles
        s = RowJobSolver(A, method=asked, comm=comm, restart=10)
        return s.method, s.solve(b, rtol=1e-10, reporter=reps[comm.Get_rank()])

    (m0, sol), (m1, other) = _on_two(rank)
    assert m0 == m1 == method and other is None
    ref = spla.spsolve(A.tocsc(), b)
    assert np.abs(sol.x - ref).max() <= 1e-7 * np.abs(ref).max()
    true = np.linalg.norm(b - A @ sol.x) / np.linalg.norm(b)
    assert sol.converged and abs(sol.relative_residual - true) <= 1e-3 * true + 1e-15
    assert sol.iterations == len(sol.residuals) - 1 > 5
    assert sol.info["ranks"] == 2 and [d["index"] for d in sol.info["subdomains"]] == [
        [[0, 128]], [[128, 256]]]
    steps = [s for name, _, s in reps[0].metrics if name == "residual"]
    assert steps[:3] == [1, 2, 3] and steps[-1] == sol.iterations   # every iteration
    assert reps[1].metrics == []   # rank 0 reports
    if method == "gmres":   # maxiter counts restart cycles, as SciPy's
        assert sol.cycles == -(-sol.iterations // 10) > 2 and sol.scipy_info == 0


@pytest.mark.parametrize("method", ["bicgstab", "gmres"])
def test_a_cancel_stops_both_ranks_and_keeps_the_last_iterate(method):
    from skiff.kernels.backend.report import JobCancelled
    from skiff.kernels.solve.parallel.rows_job import RowJobSolver

    A = _matrix(convect=0.8)
    b = np.ones(A.shape[0])
    reps = [_Reporter(0, stop_at=6), _Reporter(1)]
    out = _on_two(lambda comm: RowJobSolver(A, method=method, comm=comm).solve(
        b, rtol=1e-12, reporter=reps[comm.Get_rank()]))
    assert all(isinstance(e, JobCancelled) for e in out), out
    x, its = out[0].arrays["x"], int(out[0].arrays["iteration"])
    assert its == 6 and x.shape == (A.shape[0],)
    true = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    assert abs(out[0].partial["residual"] - true) <= 1e-10
    assert out[0].partial["ranks"] == 2 and 1e-6 < true < 1


@pytest.mark.parametrize("words, needle", [
    ("--method minres", "--method minres is not split by rows; a matrix file on several "
                        "ranks runs cg, bicgstab, gmres"),
    ("--precond chebyshev", "--precond chebyshev is not split by rows; a matrix file on "
                            "several ranks takes --precond jacobi, ilu (block Jacobi"),
    ("--stop scipy --method cg", "--stop scipy runs on one rank"),
])
def test_what_the_row_split_does_not_run_is_one_line_before_any_run(words, needle, tmp_path,
                                                                    runs_dir):
    from skiff.jobs import submit

    sp.save_npz(tmp_path / "A.npz", _matrix(n=6))
    with pytest.raises(ValueError) as err:
        submit("solve", f"{tmp_path / 'A.npz'} --np 2 {words}")
    message = str(err.value)
    assert needle in message and "\n" not in message
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_a_complex_matrix_file_is_refused_before_the_ranks_start(tmp_path, runs_dir):
    """It was launched and failed on the ranks; the file's header says it is complex. Round
    46 (h6): the row split solves complex systems by block Jacobi; an overlap is refused.
    Round 47 (h4): an overlap and a coarse level take it, and COCG over the ranks: COCG with
    ILUT (not complex symmetric) is refused before the ranks start."""
    from skiff.jobs import submit

    sp.save_npz(tmp_path / "C.npz", (_matrix(n=6) * (1 + 0.5j)).tocsr())
    with pytest.raises(ValueError) as err:
        submit("solve", f"{tmp_path / 'C.npz'} --np 2 --precond ilut --method cocg")
    assert "--precond ilut is not symmetric and COCG" in str(err.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


@pytest.mark.mpi
def test_cli_np_2_on_a_matrix_market_file_is_spsolves_x(tmp_path, monkeypatch, capsys):
    from skiff.cli import main
    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    A = _matrix(convect=0.8)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    scipy.io.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    # python -m skiff in this process (round 42 h14: one interpreter fewer), its 2 ranks MPI's
    for key, value in (("SKIFF_RUNS", str(tmp_path / "runs")), ("OPENBLAS_NUM_THREADS", "1"),
                       ("OMP_NUM_THREADS", "1"), ("PYTHONPATH", str(ROOT))):
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["solve", "A.mtx", "b.npy", "--np", "2", "--rtol", "1e-10", "--save", "x.npz",
                 "--wait", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.out[-2000:] + out.err[-2000:]
    doc = json.loads(out.out)
    res = doc["job"], doc["result"]
    assert res[0]["status"] == "done" and res[0]["ranks"] == 2
    assert res[1]["method"] == "bicgstab" and res[1]["converged"] and res[1]["ranks"] == 2
    assert [d["cells"] for d in res[1]["subdomains"]] == [128, 128]
    with np.load(tmp_path / "x.npz") as z:
        x = z["field"].ravel()
    ref = spla.spsolve(A.tocsc(), b)
    assert np.abs(x - ref).max() <= 1e-7 * np.abs(ref).max()
    run = Path(res[0]["run_dir"])
    curve = (run / "artifacts" / "convergence.csv").read_text().splitlines()
    assert len(curve) == res[1]["iterations"] + 2   # header, the start, each iteration
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    steps = [e for e in events if e.get("type") == "metric"]
    assert len(steps) >= res[1]["iterations"]   # the residual of each, from rank 0 only
    assert abs(res[1]["relative_residual"] - np.linalg.norm(b - A @ x) / np.linalg.norm(b)) \
        <= 1e-3 * res[1]["relative_residual"]


def test_gmres_by_rows_is_scipys_gmres_on_the_right_preconditioned_system():
    """GMRES(10) with Jacobi on the right: the Krylov space of SciPy's gmres of ``A D^-1``
    (no M), so the same residual each inner iteration and the same restart cycles."""
    from skiff.kernels.solve.parallel.rows import RowSolver

    A = _matrix(convect=0.8)
    n = A.shape[0]
    b = np.random.default_rng(1).standard_normal(n)
    d = A.diagonal()
    AD = spla.LinearOperator((n, n), matvec=lambda v: A @ (v / d))
    ref: list = []
    _, info = spla.gmres(AD, b, rtol=1e-10, restart=10, maxiter=100,
                         callback=ref.append, callback_type="pr_norm")
    res = RowSolver(A, method="gmres", restart=10).iterate(b, rtol=1e-10, maxiter=100)
    mine = np.array(res.history[1:]) / res.bnorm
    assert info == 0 and res.converged and len(mine) == len(ref) > 20
    assert np.abs(np.log10(mine) - np.log10(ref)).max() < 1e-4
    assert res.iterations == -(-len(ref) // 10)   # restart cycles
