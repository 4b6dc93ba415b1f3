"""Round 34 (h8): two solve options that were dropped without a word are refused in one line
with the fix, in the terminal, the magic and the Solve panel:

- ``poisson --velocity 1,2`` solved Poisson without convection (``--velocity`` is the
  ``convection`` problem's and a ``%%solve`` cell's);
- ``--restart M`` with a method that is not GMRES (``poisson --restart 10``: CG; the
  ``convection`` problem: BiCGSTAB).

The oracle that each was dropped: the kernel given the option gives the very same problem or
iterates (``build_problem`` with and without the velocity; CG with restart 10 and 30)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from skiff.jobs.launch import dry_run
from skiff.kernels.solve import Solver
from skiff.kernels.solve.entry import build_problem


def test_velocity_of_another_problem_is_refused(runs_dir):
    plain = build_problem({"problem": "poisson", "grid": [16, 16]})
    moved = build_problem({"problem": "poisson", "grid": [16, 16], "velocity": [1.0, 2.0]})
    assert repr(plain) == repr(moved)            # the kernel reads no velocity for poisson
    assert plain.velocity is None and moved.velocity is None
    for front in ("cli", "magic"):
        with pytest.raises(ValueError, match=r"--velocity is an option of convection and a "
                                             r"%%solve cell; problem 'poisson' does not read"):
            dry_run("solve", "poisson --grid 16x16 --velocity 1,2", front=front)
    config = dry_run("solve", "convection --grid 16x16 --velocity 1,2")["config"]
    assert config["velocity"] == [1.0, 2.0]
    cell = "domain: 16x16\nsource: 1\nvelocity: 1, 0"
    assert dry_run("solve", "--method gmres", cell=cell, front="magic")["config"]["velocity"]


def _matrix(n: int = 12):
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return sp.kronsum(T, T).tocsr()


def test_restart_without_gmres_is_refused(runs_dir, tmp_path):
    A = _matrix()
    b = np.ones(A.shape[0])
    one = Solver(A, method="cg", precond="jacobi", restart=10).solve(b, rtol=1e-10)
    two = Solver(A, method="cg", precond="jacobi", restart=30).solve(b, rtol=1e-10)
    assert one.iterations == two.iterations and np.array_equal(one.x, two.x)  # dropped
    for words, method in (("poisson --grid 16x16 --restart 10", "cg"),
                          ("convection --grid 16x16 --restart 10", "bicgstab"),
                          ("A b --method cg --restart 10", "cg")):
        with pytest.raises(ValueError, match=rf"--restart is GMRES's restart length, and "
                                             rf"the method is {method}: add --method gmres"):
            dry_run("solve", words, user_ns={"A": A, "b": b}, front="magic")
    # GMRES, or a matrix's method left to the solver (auto: GMRES when nonsymmetric)
    assert dry_run("solve", "poisson --grid 16x16 --method gmres --restart 10")[
        "config"]["restart"] == 10
    assert dry_run("solve", "A b --restart 10", user_ns={"A": A, "b": b},
                   front="magic")["config"]["restart"] == 10
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    assert dry_run("solve", f"{tmp_path / 'A.mtx'} --restart 10")["config"]["restart"] == 10
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_the_panel_says_both(runs_dir):
    from skiff.widgets.panels import solve_form

    form = solve_form()
    form.set(problem="poisson", grid="16x16", restart="10")
    assert "--restart is GMRES's" in "".join(form.errors.values())
    assert form.launch_button.disabled
    form.set(method="gmres")
    assert form.errors == {} and not form.launch_button.disabled
    form.set(velocity="1,2")
    assert "--velocity is an option of convection" in "".join(form.errors.values())


# geometric multigrid's options where no geometric multigrid runs

def test_mg_options_without_multigrid_are_refused(runs_dir):
    from skiff.kernels.solve import poisson

    p = poisson((16, 16))
    # the oracle that they are dropped: jacobi-CG with cycle W / pre 3 is jacobi-CG
    one = Solver(p, method="cg", precond="jacobi").solve(rtol=1e-8)
    two = Solver(p, method="cg", precond="jacobi", cycle="W", pre=3, post=3).solve(rtol=1e-8)
    assert one.iterations == two.iterations and np.array_equal(one.x, two.x)
    with pytest.raises(ValueError, match=r"--cycle is geometric multigrid's, and --method cg "
                                         r"--precond jacobi runs none: use --precond mg"):
        dry_run("solve", "poisson --grid 16x16 --cycle W --precond jacobi")
    with pytest.raises(ValueError, match=r"--pre, --post are geometric multigrid's, and "
                                         r"--method direct runs none"):
        dry_run("solve", "poisson --grid 16x16 --pre 3 --post 3 --method direct")
    with pytest.raises(ValueError, match="--cycle is geometric multigrid's"):   # a GridProblem
        dry_run("solve", "G --cycle W --precond jacobi", user_ns={"G": p}, front="magic")
    # read where multigrid runs: the default preconditioner on grids, mg, fmg
    for words in ("poisson --grid 16x16 --cycle W", "poisson --grid 16x16 --method mg "
                  "--cycle W --pre 3", "poisson --grid 16x16 --precond amg --smoother schwarz"):
        dry_run("solve", words)
    from skiff.widgets.panels import solve_form

    form = solve_form()
    form.set(problem="poisson", grid="16x16", precond="jacobi", cycle="W")
    assert "geometric multigrid's" in "".join(form.errors.values())
    form.set(precond="mg")
    assert form.errors == {}
