"""Round 27: the solve kind owns the table of options it refuses typed
(``SolveKind.typed_refusals``, by the one rule ``check_options_apply`` raises from) instead
of a shared module reading solve's private tables. The oracle is the kind's
own prepare with that one option typed (``Kind.probe_refusals``, no budget), swept over
every built-in problem, a notebook matrix and a GridProblem, with every option set."""

import argparse

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.grammar.common import GIVEN, split_launch
from skiff.kinds import get
from skiff.kinds import solve as solve_kind

# options some problem refuses, with no value set by default: each one set (not typed) that
# the job itself takes untyped is a question
EVERY = [["--case", "2d-2"], ["--dt", "0.01"], ["--t-end", "1"], ["--resolution", "40"],
         ["--re", "50"], ["--method", "cg"], ["--maxiter", "50"], ["--velocity", "20,5"],
         ["--compatibility", "project"], ["--save", "out.npz"], ["--contrast", "100"],
         ["--grid", "16x16"]]


def _values(words: list[str]) -> dict:
    k = get("solve")
    values, _ = split_launch(argparse.Namespace(**vars(k.command.parse(words, prog="solve"))))
    values[GIVEN] = []  # set, not typed: what a table is asked about
    return values


def _laplacian(n: int) -> sp.csr_matrix:
    t = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return sp.kronsum(t, t).tocsr()


SYSTEMS = [p for p in solve_kind.PROBLEMS if p != "custom"] + ["A", "G"]


@pytest.mark.parametrize("problem", SYSTEMS)
def test_the_kinds_own_table_answers_as_the_probe_for_every_option(problem):
    k = get("solve")
    user_ns = {}
    words = [problem]
    if problem == "A":
        A = _laplacian(6)
        user_ns = {"A": A, "b": A @ np.ones(A.shape[0])}
        words = ["A", "b"]
    elif problem == "G":
        from skiff.kernels.solve.problems import grid_problem

        user_ns = {"G": grid_problem((8, 8), source=1.0)}
    for pair in EVERY:  # keep each one the job takes set and untyped
        try:
            k.prepare(_values(words + pair), user_ns=dict(user_ns))
        except Exception:  # noqa: BLE001
            continue
        words = words + pair
    values = _values(words)
    k.prepare(dict(values), user_ns=dict(user_ns))  # the job itself is taken
    names = [n for n, v in values.items() if not n.startswith("_") and v is not None]
    assert len(set(solve_kind._CHECKED) & set(names)) >= 15
    table = k.typed_refusals(dict(values), names, user_ns=user_ns)
    probe = k.probe_refusals(dict(values), names, user_ns=user_ns, budget_s=float("inf"))
    assert table is not None
    assert sorted(table) == sorted(probe)
    assert probe and set(probe) != set(names)


def test_the_table_is_the_kinds_not_a_shared_module():
    """The solve kind holds its table; a kind without one (train) answers None: probed."""
    assert type(get("solve")).typed_refusals is not type(get("train")).typed_refusals
    assert get("train").typed_refusals({"steps": 5}, ["steps"]) is None
