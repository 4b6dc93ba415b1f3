"""Round 45 (h8): the Train form's data picker offers what ``%train`` takes, nothing else.

It offered every notebook value with ``len()`` and items (``is_dataset``): for the mlp a bare
array, a 1-D token array, a list of words, a ``(X,)`` tuple (no targets: "has no targets
for the mlp to learn") and a sparse matrix (its ``len()`` raises) - each picked, then refused
at Launch. The choices follow the model field (gpt-mini takes a bare token array), and a
value typed in is refused in the form with the magic's own words.

Oracle: ``%train MODEL NAME --steps 1 --dry-run`` run through IPython (taken or refused)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from IPython.core.interactiveshell import InteractiveShell

from skiff.widgets.panels import train_form

NAMES = ("pair", "pairs", "bare", "tokens", "words", "only_x", "sparse")


@pytest.fixture
def ns(monkeypatch, runs_dir):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((24, 3)).astype("float32")
    y = (X[:, 0] > 0).astype("int64")
    values = {"pair": (X, y), "pairs": [(X[i], y[i]) for i in range(24)], "bare": X,
              "tokens": np.arange(200) % 17, "words": ["to", "be"], "only_x": (X,),
              "sparse": sp.random(24, 3, density=0.5, format="csr", random_state=0)}
    for name, value in values.items():
        monkeypatch.setitem(ip.user_ns, name, value)
    return ip


def _magic_takes(ip, model: str, name: str) -> bool:
    return ip.run_cell(f"%train {model} {name} --steps 1 --dry-run", silent=True).success


@pytest.mark.parametrize("model", ["mlp", "gpt-mini"])
def test_the_picker_offers_what_the_magic_takes(ns, model):
    form = train_form()
    form.set(model=model)
    offered = set(form.fields["data"].widget.options) & set(NAMES)
    taken = {name for name in NAMES if _magic_takes(ns, model, name)}
    assert taken, "the magic took none: nothing to compare"
    assert offered == taken, (model, sorted(offered), sorted(taken))


def test_a_value_typed_in_is_refused_with_the_magics_words(ns, capsys):
    form = train_form()
    form.set(model="mlp", data="bare", steps=1)
    assert form.values is None, "a bare array taken for the mlp"
    said = " ".join([form.status.value, *form.errors.values()])
    assert "has no targets for the mlp to learn" in said, said
    form.set(data="pair")
    assert form.values is not None, form.status.value
    form.set(data="sparse")
    assert form.values is None, "a sparse matrix taken"
