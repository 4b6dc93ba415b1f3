"""Round 44 (h15): the forms and the notebook's variables.

- The Train form's data picker offered ``In`` (IPython's list of the cells' inputs, a list
  of strings: a text data set to ``is_dataset``), ``Out`` likewise: IPython's own names are
  left out now (``user_ns_hidden``).
- With a notebook variable as the data (or a notebook matrix in the Solve form), the form's
  terminal line was ``python -m skiff train mlp data --steps 5``, which a terminal reads
  as a file or a built-in named ``data`` and refuses: it says there is no terminal
  equivalent now (``form.cli`` is None); the magic line is as before.

Oracle for the terminal: ``python -m skiff``'s own refusal of the line the form showed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main
from skiff.widgets.panels import solve_form, train_form


@pytest.fixture
def ns(monkeypatch):
    ip = InteractiveShell.instance()
    ip.run_cell("1 + 1")  # In and Out hold something, as in a notebook that ran a cell
    rng = np.random.default_rng(0)
    X = rng.standard_normal((32, 3)).astype("float32")
    monkeypatch.setitem(ip.user_ns, "data", (X, (X[:, 0] > 0).astype("int64")))
    monkeypatch.setitem(ip.user_ns, "A", sp.eye(20, format="csr") * 2.0)
    monkeypatch.setitem(ip.user_ns, "rhs", np.ones(20))  # %solve A needs its B (round 47)
    return ip.user_ns


def test_ipython_names_are_not_offered_as_data(ns):
    form = train_form()
    offered = list(form.fields["data"].widget.options)
    assert "data" in offered
    assert not {"In", "Out", "exit", "quit", "get_ipython"} & set(offered), offered


def test_a_notebook_variable_has_no_terminal_line(ns, runs_dir, capsys):
    form = train_form()
    form.set(model="mlp", data="data", steps=5)
    assert form.values is not None, (form.errors, form.status.value)
    assert form.magic == "%train mlp data --steps 5"
    # what the form showed before, run in a terminal: refused (no file or data set 'data')
    assert main(["train", "mlp", "data", "--steps", "5", "--dry-run"]) == 2
    assert "data" in capsys.readouterr().err
    assert form.cli is None
    assert "data is a notebook variable" in form.cli_line.value, form.cli_line.value

    solve = solve_form()
    solve.set(problem="A", b="rhs")
    assert solve.values is not None, (solve.errors, solve.status.value)
    assert solve.cli is None and "A, rhs are notebook variables" in solve.cli_line.value

    form.set(data="")  # the model's own data: a terminal runs it
    assert form.cli == "python -m skiff train mlp --steps 5"
