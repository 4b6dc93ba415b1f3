"""Round 47 (h16): the Solve and OCR forms say what their magic line says, by the field.

- The Solve form took a B with a built-in problem (``%solve poisson nob.npy``: the magic
  refuses it; the form launched without it), ``--precond ilu`` on a grid and ``--overlap 1``
  on one rank (refused only after Launch), a notebook matrix without B, a B that is no
  variable, a notebook matrix on ``--np 2``; it refused a notebook preconditioner with a
  notebook matrix (``%solve A b --precond M``: "unknown precond 'M'") that the magic takes;
  a mistyped matrix name got the form's words, not the magic's "did you mean 'A'?".
- ``--overlap``'s message was shown by the precond field (the first field its words name).
- A notebook variable on a process of its own (``%ocr img --runner process``, ``%train mlp
  data --runner process``): the forms took it, the launch refused it after the click.
- The OCR form refused every notebook variable holding an image ("no such file, folder or
  pattern: 'img'") that ``%ocr img`` reads, and a mistyped one lacked the magic's "nor a
  notebook variable (did you mean 'img'?)".

Oracle: the magic itself (``%solve ... --dry-run``, ``%ocr ... --dry-run`` in IPython), and
SciPy's ``spsolve`` for the solve the form launches."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from IPython.core.interactiveshell import InteractiveShell

from tests.helpers.magics import dry_run_refusal


@pytest.fixture
def shell(monkeypatch, runs_dir):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    rng = np.random.default_rng(3)
    n = 30
    A = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    monkeypatch.setitem(ip.user_ns, "A", A)
    monkeypatch.setitem(ip.user_ns, "b", rng.standard_normal(n))
    monkeypatch.setitem(ip.user_ns, "M", sp.diags(1.0 / A.diagonal(), format="csr"))
    img = np.full((24, 80), 255, np.uint8)
    monkeypatch.setitem(ip.user_ns, "img", img)
    monkeypatch.setitem(ip.user_ns, "pages", [img, img])
    return ip


def _fill(form, typed: dict) -> None:
    for field in form.fields.values():  # every field back to its start, then the case's
        if field.built and field.dest not in typed and field.raw() != field._initial():
            field.widget.value = field._initial()
    form.set(**typed)


def test_the_solve_form_says_what_the_magic_says(shell, capsys):
    from skiff.widgets.panels import solve_form

    form = solve_form()
    cases = [  # magic line, the form's fields, the field that shows the refusal
        ("poisson nob.npy --grid 16x16", dict(problem="poisson", b="nob.npy", grid="16x16"),
         "b"),
        ("poisson --precond ilu", dict(problem="poisson", precond="ilu"), "precond"),
        ("poisson --overlap 1", dict(problem="poisson", overlap="1"), "overlap"),
        ("poisson --precond M", dict(problem="poisson", precond="M"), "precond"),
        ("A", dict(problem="A"), "b"),
        ("A bb", dict(problem="A", b="bb"), "b"),
        ("Aa b", dict(problem="Aa", b="b"), "problem"),
        ("A b --np 2", dict(problem="A", b="b", np="2"), None),
    ]
    for line, typed, where in cases:
        said = dry_run_refusal(shell, "solve", line)
        assert said is not None, line
        _fill(form, typed)
        assert form.values is None and form.launch_button.disabled, (line, form.errors)
        shown = [*form.errors.values(), *([form.status.value] if form.status.value else [])]
        assert said in shown, (line, said, shown)
        if where is not None:
            assert form.errors.get(where) == said, (line, form.errors)
        # nothing typed is lost on the error
        assert {k: form.fields[k].raw() for k in typed} == typed, line
    capsys.readouterr()

    # a notebook preconditioner with a notebook matrix: the magic takes it, the form too
    assert dry_run_refusal(shell, "solve", "A b --precond M --method cg") is None
    _fill(form, dict(problem="A", b="b", precond="M", method="cg", rtol="1e-10"))
    assert form.values is not None, (form.errors, form.status.value)
    assert form.magic == "%solve A b --method cg --precond M --rtol 1e-10"
    job = form.launcher(form, dict(form.values))  # what Launch runs (its view left out)
    job.wait(timeout=60)
    assert job.status == "done", job.status
    x = np.asarray(job.value.x)
    ref = spla.spsolve(shell.user_ns["A"].tocsc(), shell.user_ns["b"])
    assert np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)


def test_the_ocr_form_takes_a_notebook_image(shell, capsys):
    from skiff.widgets.panels import ocr_form

    form = ocr_form()
    for typed in ("img", "pages", "img pages"):
        assert dry_run_refusal(shell, "ocr", typed) is None, typed
        form.set(inputs=typed)
        assert form.values is not None, (typed, form.errors, form.status.value)
        assert form.magic == f"%ocr {typed}"
        assert form.cli is None  # no terminal reads a notebook variable
    for typed in ("imgg", "img nosuch.png"):
        said = dry_run_refusal(shell, "ocr", typed)
        assert said is not None, typed
        form.set(inputs=typed)
        assert form.values is None and form.launch_button.disabled, typed
        assert form.errors == {"inputs": said}, (typed, form.errors)
        assert form.fields["inputs"].raw() == typed

    # a notebook image on a process of its own: refused by the field that asked for it, in
    # the magic's words (the form took it; the launch refused it after the click)
    said = dry_run_refusal(shell, "ocr", "img --runner process")
    assert said is not None
    form.set(inputs="img", runner="process")
    assert form.values is None and form.errors == {"runner": said}, form.errors
    form.set(runner="auto")
    assert form.values is not None, form.errors
    capsys.readouterr()


def test_the_train_form_keeps_notebook_data_on_this_kernel(shell, monkeypatch, capsys):
    from skiff.widgets.panels import train_form

    X = np.random.default_rng(0).standard_normal((16, 3)).astype("float32")
    monkeypatch.setitem(shell.user_ns, "data", (X, (X[:, 0] > 0).astype("int64")))
    said = dry_run_refusal(shell, "train", "mlp data --runner process")
    assert said is not None
    form = train_form()
    form.set(model="mlp", data="data", runner="process")
    assert form.values is None and said in form.errors.values(), form.errors
    assert {k: form.fields[k].raw() for k in ("model", "data", "runner")} == \
        {"model": "mlp", "data": "data", "runner": "process"}
    capsys.readouterr()
