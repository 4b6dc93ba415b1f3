"""%solve and %%solve through a real IPython shell, and python -m skiff solve."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job
from skiff.kernels.solve import Solution


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_builtin_poisson_line(shell):
    job = shell.run_line_magic(
        "solve", "poisson --grid 64x64 --method cg --precond mg --rtol 1e-9 --device cpu "
                 "--wait -o sj")
    assert isinstance(job, Job) and shell.user_ns["sj"] is job
    assert job.status == "done", job.error
    sol = job.value
    assert isinstance(sol, Solution) and sol.converged and sol.field.shape == (64, 64)
    x = (np.arange(64) + 0.5) / 64
    exact = np.sin(np.pi * x)[:, None] * np.sin(np.pi * x)[None, :]
    assert np.abs(sol.field - exact).max() < 1e-3
    assert job.result["converged"] is True and job.result["iterations"] == sol.iterations
    assert "residual" in job.state.metrics
    assert job.artifact_path("field") is not None
    assert job.artifact_path("convergence") is not None
    assert job.config["grid"] == [64, 64] and job.config["precond"] == "mg"


def test_notebook_matrix_and_rhs(shell):
    rng = np.random.default_rng(0)
    A = sp.diags([-1.0, 2.2, -1.0], [-1, 0, 1], shape=(400, 400)).tocsr()
    shell.user_ns.update(A=A, b=rng.standard_normal(400))
    job = shell.run_line_magic("solve", "A b --precond amg --rtol 1e-10 --wait")
    assert job.status == "done", job.error
    ref = spla.spsolve(A.tocsc(), shell.user_ns["b"])
    np.testing.assert_allclose(job.value.x, ref, rtol=1e-8)


def test_cell_spec_with_body_and_jump(shell, tmp_path):
    out = tmp_path / "u.vtk"
    cell = """
    domain: 48x32 extent 1.5x1
    coefficient: 1 + 99*(x > 0.75)
    boundaries: x-=dirichlet 1; x+=dirichlet 0; y-=neumann; y+=neumann
    source: 0
    body: hypot(x - 0.5, y - 0.5) - 0.2
    solver: cg mg rtol=1e-9
    """
    job = shell.run_cell_magic("solve", f"--wait --save {out}", cell)
    assert job.status == "done", job.error
    sol = job.value
    assert sol.converged and sol.field.shape == (48, 32)
    # the same problem built by hand and solved by scipy
    from skiff.kernels.solve import grid_problem

    x = (np.arange(48) + 0.5) / 32
    y = (np.arange(32) + 0.5) / 32
    X, Y = np.meshgrid(x, y, indexing="ij")
    p = grid_problem((48, 32), k=lambda x, y: 1 + 99 * (x > 0.75), source=0.0,
                     sdf=np.hypot(X - 0.5, Y - 0.5) - 0.2, extent=(1.5, 1.0),
                     bc={"x-": ("dirichlet", 1.0), "x+": ("dirichlet", 0.0), "y-": "neumann",
                         "y+": "neumann"})
    ref = spla.spsolve(p.matrix().tocsc(), p.rhs.ravel()).reshape(48, 32)
    np.testing.assert_allclose(sol.field, ref, rtol=1e-6, atol=1e-8)
    assert out.is_file() and out.read_bytes().startswith(b"# vtk DataFile")


def test_usage_errors(shell):
    with pytest.raises(UsageError, match="unknown problem 'heat'"):
        shell.run_line_magic("solve", "heat")
    with pytest.raises(UsageError, match="invalid choice: 'sor'"):
        shell.run_line_magic("solve", "poisson --method sor")
    with pytest.raises(UsageError, match="expected a grid"):
        shell.run_line_magic("solve", "poisson --grid big")
    with pytest.raises(UsageError, match="unknown name 'open'"):
        shell.run_cell_magic("solve", "", "domain: 8x8\nsource: open('f')")
    with pytest.raises(UsageError, match="needs a 'domain"):
        shell.run_cell_magic("solve", "", "source: 1")
    shell.user_ns["notmatrix"] = "hello"
    with pytest.raises(UsageError, match="str"):
        shell.run_line_magic("solve", "notmatrix")


def test_failed_solve_is_a_failed_job(shell):
    shell.user_ns["Aind"] = sp.diags(np.r_[np.ones(5), -np.ones(5)]).tocsr()
    shell.user_ns["bind"] = np.ones(10)
    job = shell.run_line_magic("solve", "Aind bind --method cg --precond none --wait")
    assert job.status == "failed" and "not positive definite" in (job.error or "")


def test_a_non_symmetric_notebook_matrix_is_solved_by_default(shell):
    """No --method: a notebook matrix gets 'auto' (GMRES here, as the matrix is not
    symmetric); --method cg is refused at once with the entry that breaks symmetry."""
    A = sp.diags([-1.3, 2.0, -0.7], [-1, 0, 1], shape=(300, 300)).tocsr()
    shell.user_ns["Ans"], shell.user_ns["bns"] = A, np.ones(300)
    job = shell.run_line_magic("solve", "Ans bns --device cpu --wait")
    assert job.status == "done", job.error
    assert job.result["method"] == "gmres" and job.result["converged"] is True
    assert np.allclose(A @ job.value.x, 1.0, atol=1e-6)
    job = shell.run_line_magic("solve", "Ans bns --method cg --device cpu --wait")
    assert job.status == "failed" and "needs a symmetric matrix" in (job.error or "")


def test_cli_json(tmp_path, monkeypatch, capsys):
    # in this process (tests/cli/in_process.py; round 42: a new interpreter was ~1 CPU s of
    # imports); the document alone on stdout is checked in a real process by tests/cli
    from tests.cli.in_process import run_main

    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    proc = run_main("solve", "poisson", "--grid", "64x64", "--device", "cpu", "--json",
                    capsys=capsys)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["job"]["status"] == "done"
    assert doc["result"]["converged"] is True and doc["result"]["shape"] == [64, 64]
    assert doc["result"]["relative_residual"] <= 1e-8
    assert doc["result"]["error"] < 1e-3


@pytest.mark.mpi
def test_process_job_on_two_ranks(shell):
    job = shell.run_line_magic("solve", "poisson --grid 32x32 --np 2 --wait")
    assert job.status == "done", job.error
    assert job.result["converged"] is True and job.result["shape"] == [32, 32]


def test_grammar_render_and_spec():
    from skiff.kinds.solve import COMMAND, parse_spec, to_config

    values = {**COMMAND.defaults(), "problem": "poisson", "grid": (512, 512), "method": "gmres"}
    assert COMMAND.render(values) == "%solve poisson --grid 512x512 --method gmres"
    assert COMMAND.render(values, style="cli").startswith("python -m skiff solve poisson")
    spec = parse_spec("domain: 32x32x16  # 3D\nboundaries: x-=dirichlet 1+y; y+=neumann\n"
                      "solver: bicgstab amg rtol=1e-6")
    assert spec["bc"] == {"x-": ["dirichlet", "1+y"], "y+": ["neumann", "0"]}
    config = to_config({**COMMAND.defaults(), "spec": spec})
    assert config["problem"] == "custom" and config["grid"] == [32, 32, 16]
    assert config["method"] == "bicgstab" and config["precond"] == "amg"
    assert config["rtol"] == 1e-6
    with pytest.raises(ValueError, match="unknown method 'sor': choose from cg"):
        to_config({**COMMAND.defaults(), "spec": {**spec, "method": "sor"}})
    with pytest.raises(ValueError, match="unknown side 'w'"):
        parse_spec("domain: 8x8\nboundaries: w=dirichlet")


@pytest.mark.parametrize("line, needle", [
    ("poison --grid 16x16", "unknown problem 'poison' (did you mean 'poisson'?)"),
    ("poisson --grid 512", "expected a grid of 2 or 3 sizes of at least 2"),
    ("poisson --grdi 16x16", "(did you mean '--grid'?)"),
])
def test_mistakes_suggest_and_start_nothing(shell, line, needle, runs_dir):
    from skiff.jobs import list_run_dirs

    with pytest.raises(UsageError) as err:
        shell.run_line_magic("solve", line)
    assert needle in str(err.value)
    assert list_run_dirs(runs_dir) == []


def test_a_notebook_matrix_with_np_is_one_clear_line(shell, runs_dir):
    shell.user_ns.update(A=sp.identity(20, format="csr") * 2.0, b=np.ones(20))
    with pytest.raises(UsageError, match="solved on one rank only .* drop --np"):
        shell.run_line_magic("solve", "A b --np 2")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def _scipy_iterations(fn, A, b, **kw):
    count = []
    x, info = fn(A, b, callback=lambda xk: count.append(1), **kw)
    return x, info, len(count)


def test_precond_notebook_variable_as_scipys_M(shell):
    """%solve A b --precond M: a notebook LinearOperator, function, matrix or pyamg
    preconditioner is SciPy's M; the iterations are SciPy's with the same M."""
    import pyamg

    n = 300
    A = sp.diags([-1.0, 2.3, -1.1], [-1, 0, 1], shape=(n, n)).tocsr()
    S = (sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) +
         sp.diags(np.linspace(0.01, 0.2, n))).tocsr()
    b = np.random.default_rng(4).standard_normal(n)
    ilu = spla.spilu(A.tocsc(), drop_tol=1e-2)
    Milu = spla.LinearOperator(A.shape, matvec=ilu.solve)
    Mamg = pyamg.smoothed_aggregation_solver(S).aspreconditioner(cycle="V")
    shell.user_ns.update(An=A, Sn=S, bn=b, Milu=Milu, Mamg=Mamg,
                         Mjac=lambda r: r / S.diagonal(), Mdiag=sp.diags(1 / A.diagonal()))
    for system, mname, method, M in (("An", "Milu", "bicgstab", Milu),
                                     ("Sn", "Mamg", "cg", Mamg),
                                     ("Sn", "Mjac", "cg", shell.user_ns["Mjac"]),
                                     ("An", "Mdiag", "bicgstab", shell.user_ns["Mdiag"])):
        matrix = shell.user_ns[system]
        job = shell.run_line_magic(
            "solve", f"{system} bn --method {method} --precond {mname} --rtol 1e-9 --wait")
        assert job.status == "done", job.error
        assert job.config["precond"] == "user" and job.config["precond_variable"] == mname
        fn = spla.cg if method == "cg" else spla.bicgstab
        if not hasattr(M, "shape"):   # scipy takes a function as a LinearOperator
            M = spla.LinearOperator(matrix.shape, matvec=M)
        x_ref, info, its = _scipy_iterations(fn, matrix, b, M=M, rtol=1e-9)
        assert info == 0 and job.value.converged
        assert abs(job.value.iterations - its) <= 1, (mname, job.value.iterations, its)
        exact = spla.spsolve(matrix.tocsc(), b)
        np.testing.assert_allclose(job.value.x, exact, atol=1e-7 * np.abs(exact).max())


def test_precond_variable_errors_name_the_fix(shell):
    n = 50
    A = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(n, n)).tocsr()
    shell.user_ns.update(Ae=A, be=np.ones(n), word="amg", Mbig=sp.eye(n + 1),
                         Mok=sp.eye(n))
    with pytest.raises(UsageError, match="holds a str, not a preconditioner"):
        shell.run_line_magic("solve", "Ae be --precond word")
    with pytest.raises(UsageError, match="no variable 'Mnope'"):
        shell.run_line_magic("solve", "Ae be --precond Mnope")
    with pytest.raises(UsageError, match=r"shape \(51, 51\)"):
        shell.run_line_magic("solve", "Ae be --precond Mbig")
    with pytest.raises(UsageError, match="goes with a notebook matrix"):
        shell.run_line_magic("solve", "poisson --grid 16x16 --precond Mok")
    with pytest.raises(UsageError, match="takes no preconditioner"):
        shell.run_line_magic("solve", "Ae be --method direct --precond Mok")


def test_gmres_maxiter_counts_restart_cycles_as_scipy(shell):
    n = 200
    A = sp.diags([-1.4, 2.2, -0.6], [-1, 0, 1], shape=(n, n)).tolil()
    A[0, n - 1] = 0.3
    A = A.tocsr()
    shell.user_ns.update(Ag=A, bg=np.ones(n))
    job = shell.run_line_magic(
        "solve", "Ag bg --method gmres --precond none --restart 5 --maxiter 3 --rtol 1e-12 --wait")
    assert job.status == "done", job.error
    x_ref, info = spla.gmres(A, np.ones(n), restart=5, maxiter=3, rtol=1e-12)
    assert info == 3 and not job.value.converged and job.value.scipy_info == info
    assert job.result["iterations"] == 15 and "3 restart cycles" in job.result["status"]
    np.testing.assert_allclose(job.value.x, x_ref, rtol=1e-9, atol=1e-12)


def test_notebook_saddle_point_and_complex_symmetric(shell, runs_dir):
    """Round 28: a bmat saddle point from the notebook takes MINRES with the block
    preconditioner, a complex symmetric matrix COCG (spsolve's x both); --precond saddle on
    a Laplacian is a usage error before any run folder."""
    m = 16
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    L = sp.kronsum(T, T).tocsr()
    B = sp.diags([1.0, -1.0], [0, 1], shape=(m * m // 2, m * m))
    K = sp.bmat([[L, B.T], [B, None]]).tocsr()
    H = (L - 0.5 * sp.identity(m * m) + 1j * sp.diags(np.linspace(0.1, 1.0, m * m))).tocsr()
    shell.user_ns.update(K28=K, bK28=np.ones(K.shape[0]), H28=H,
                         bH28=np.ones(m * m, dtype=complex), L28=L)
    for a, b, method in (("K28", "bK28", "minres"), ("H28", "bH28", "cocg")):
        job = shell.run_line_magic("solve", f"{a} {b} --rtol 1e-10 --wait")
        assert job.status == "done", job.error
        sol = job.value
        assert sol.converged and sol.method == method
        A = shell.user_ns[a]
        ref = spla.spsolve(A.tocsc(), shell.user_ns[b])
        assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    before = set(runs_dir.iterdir()) if runs_dir.exists() else set()
    with pytest.raises(UsageError, match="--precond saddle is for a real symmetric"):
        shell.run_line_magic("solve", "L28 --precond saddle")
    assert (set(runs_dir.iterdir()) if runs_dir.exists() else set()) == before
