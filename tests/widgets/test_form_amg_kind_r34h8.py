"""Round 34 (h8), as a panel user: the Solve tab with ``--amg classical`` on a problem that
geometric multigrid preconditions (or with ``--precond jacobi`` on a notebook matrix) kept
Launch enabled; the refusal came after the click. The form says it as the field changes.
The oracle: the terminal's ``--dry-run`` verdict on the same line, and the kernel's Solver
taking the same choice."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from skiff.cli import main
from skiff.kernels.solve import Solver
from skiff.widgets.panels import solve_form


def test_amg_kind_refused_next_to_amg(runs_dir, capsys):
    form = solve_form()
    form.set(problem="poisson", grid="32x32", amg="classical")
    assert main(["solve", "poisson", "--grid", "32x32", "--amg", "classical",
                 "--dry-run"]) == 2
    assert "add --precond amg, or drop --amg" in capsys.readouterr().err
    # shown by the field it names first (--precond, the fix), Launch off
    assert len(form.errors) == 1 and "add --precond amg" in "".join(form.errors.values())
    assert form.launch_button.disabled
    form.set(precond="amg")   # as the message says
    assert main(["solve", "poisson", "--grid", "32x32", "--precond", "amg", "--amg",
                 "classical", "--dry-run"]) == 0
    assert form.errors == {} and not form.launch_button.disabled


def test_a_notebook_matrix_in_the_form(runs_dir, monkeypatch):
    import skiff.widgets.panels as panels

    n = 10
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    A = sp.kronsum(T, T).tocsr()
    monkeypatch.setattr(panels, "_user_ns", lambda: {"A": A, "b": np.ones(n * n)})
    form = solve_form()
    form.set(problem="A", b="b", amg="classical")
    Solver(A, precond="auto", amg="classical")   # AMG is a matrix's: taken
    assert form.errors == {} and not form.launch_button.disabled
    form.set(precond="jacobi")
    assert len(form.errors) == 1 and "'jacobi'" in "".join(form.errors.values())
    assert form.launch_button.disabled
