"""Round 27: the solve kind tells the options a job refuses typed from its tables
(``Kind.typed_refusals``) instead of preparing the job once per option (0.5 ms each
for a built-in problem; a matrix file was read again by each, 2.1 s for 800k entries, cut by
a budget after which every option was listed). The oracle is the probe it replaces: the
kind's own prepare with that one option typed (``Kind.probe_refusals``, no budget)."""

import argparse
import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from skiff.grammar.common import GIVEN, split_launch
from skiff.kinds import get


def _values(words: list[str]) -> dict:
    k = get("solve")
    values, _ = split_launch(argparse.Namespace(**vars(k.command.parse(words, prog="solve"))))
    values[GIVEN] = sorted(k.command.given(words))
    return values


def _laplacian(n: int) -> sp.csr_matrix:
    t = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return sp.kronsum(t, t).tocsr()


def _untyped(values: dict) -> list[str]:
    return [n for n, v in values.items()
            if not n.startswith("_") and n not in values[GIVEN] and v is not None]


CASES = [
    (["poisson", "--grid", "16x16"], {}),
    (["diffusion", "--grid", "16x16"], {}),
    (["jump", "--grid", "16x16", "--contrast", "10"], {}),
    (["convection", "--grid", "16x16"], {}),
    (["body", "--grid", "16x16"], {}),
    (["poisson", "--grid", "8x8x8", "--method", "mg", "--bc", "neumann",
      "--compatibility", "project"], {}),
    (["cylinder"], {}),
    (["cylinder", "--case", "2d-2", "--dt", "0.01"], {}),
    (["train-nose"], {}),
    (["A", "b"], "matrix"),
    (["A", "b", "--method", "gmres", "--restart", "20"], "matrix"),
    (["G"], "grid"),
    ("FILE", "file"),
]


@pytest.mark.parametrize("words, ns", CASES, ids=lambda c: " ".join(c) if isinstance(c, list)
                         else str(c))
def test_the_table_answers_as_the_probe(words, ns, tmp_path):
    k = get("solve")
    user_ns = {}
    if ns == "matrix":
        A = _laplacian(8)
        user_ns = {"A": A, "b": A @ np.ones(A.shape[0])}
    elif ns == "grid":
        from skiff.kernels.solve.problems import grid_problem

        user_ns = {"G": grid_problem((8, 8), source=1.0)}
    elif ns == "file":
        scipy.io.mmwrite(tmp_path / "A.mtx", _laplacian(8))
        words = [str(tmp_path / "A.mtx"), "--rtol", "1e-6"]
    values = _values(words)
    k.prepare(dict(values), user_ns=dict(user_ns))  # the job itself is taken
    names = _untyped(values)
    table = k.typed_refusals(dict(values), names, user_ns=user_ns)
    probe = k.probe_refusals(dict(values), names, user_ns=user_ns, budget_s=float("inf"))
    assert table is not None
    assert sorted(table) == sorted(probe)
    assert probe and set(probe) != set(names)  # some refused, some read: a real question


def test_a_cell_spec_is_still_asked_through_prepare():
    values = _values([])
    assert get("solve").typed_refusals(values, _untyped(values), cell="domain: 8x8") is None


def test_a_matrix_file_is_read_once_and_its_options_told_exactly(tmp_path, monkeypatch,
                                                                 capsys):
    """A dry run of a matrix file read it once per option it asked about; now once. What
    ``options`` leaves out is what the solve kind refuses typed (asked with --cycle)."""
    from skiff.cli import USAGE, main
    from skiff.kernels.solve import files

    monkeypatch.setattr("skiff.kinds.base.PROBE_BUDGET_S", 0.0)  # no probe could answer
    path = tmp_path / "A.mtx"
    scipy.io.mmwrite(path, _laplacian(8))
    reads = []
    real = files.read_matrix
    monkeypatch.setattr(files, "read_matrix", lambda *a, **kw: reads.append(a) or real(*a, **kw))
    assert main(["solve", str(path), "--dry-run", "--json"]) == 0
    options = json.loads(capsys.readouterr().out)["options"]
    assert len(reads) == 1
    assert main(["solve", str(path), "--cycle", "V", "--dry-run"]) == USAGE
    assert "--cycle is not read" in capsys.readouterr().err
    assert "cycle" not in options and "grid" not in options
    assert main(["solve", str(path), "--rtol", "1e-8", "--dry-run"]) == 0
    capsys.readouterr()
    assert "rtol" in options
