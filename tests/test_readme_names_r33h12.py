"""What README.md names a new user will type exists: every ``skiff.…`` dotted name (the tour,
"Coming from PyTorch"), the torch names it lists for ``skiff.nn``, ``skiff.nn.functional``,
tensors and schedulers, the docs, make targets and files it points to; and the torch
defaults it promises (``x.var()`` divides by n - 1, ``x.max(1)`` is (values, indices),
``GELU()`` is exact, ``pred == y`` is a bool tensor, attention is not causal unless asked)
hold against torch itself. The oracles: the import system, the Makefile, the files on
disk and torch 2.13 on CPU."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(dotted)


def _dotted_names() -> list[str]:
    names = set()
    for m in re.finditer(r"\bskiff(?:\.[A-Za-z_]\w*)+(?:`?/`?[A-Za-z_]\w*)*", README):
        text = m.group(0).replace("`", "")
        first, *alts = text.split("/")
        names.add(first)
        base = first.rsplit(".", 1)[0]
        names.update(f"{base}.{a}" for a in alts)  # skiff.save/load, RMSprop`/`Adagrad
    return sorted(names)


def test_readme_names_many_dotted_names():
    names = _dotted_names()
    assert len(names) >= 20, names
    assert "skiff.load" in names and "skiff.optim.Adagrad" in names


@pytest.mark.parametrize("name", _dotted_names())
def test_every_dotted_name_resolves(name):
    assert _resolve(name) is not None


NN = ["Linear", "Conv1d", "Conv2d", "ConvTranspose2d", "LSTM", "GRU", "MultiheadAttention",
      "TransformerEncoder", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d",
      "Embedding", "GELU", "CrossEntropyLoss"]
F = ["nll_loss", "l1_loss", "huber_loss", "binary_cross_entropy", "kl_div",
     "scaled_dot_product_attention", "layer_norm", "cross_entropy"]
TENSOR = ["clamp", "softmax", "chunk", "repeat", "std", "index_select", "register_hook",
          "requires_grad_", "max", "var", "zero_"]


def test_torch_names_the_readme_lists():
    import skiff
    import skiff.nn.functional as fn
    from skiff import nn

    missing = [n for n in NN if not hasattr(nn, n)] + [f"F.{n}" for n in F if not hasattr(fn, n)]
    missing += [f"Tensor.{n}" for n in TENSOR if not hasattr(skiff.Tensor, n)]
    missing += [n for n in ("randn_like", "ones_like", "linspace") if not hasattr(skiff, n)]
    sch = skiff.optim.lr_scheduler
    missing += [n for n in ("OneCycleLR", "CyclicLR", "SequentialLR") if not hasattr(sch, n)]
    assert not missing, missing
    assert not hasattr(nn, "NoSuchLayer")  # the check can fail


def test_torch_defaults_the_readme_promises():
    torch = pytest.importorskip("torch")
    import skiff
    import skiff.nn.functional as fn
    from skiff import nn

    a = np.random.default_rng(0).normal(size=(4, 5))
    x, t = skiff.tensor(a), torch.tensor(a)
    np.testing.assert_allclose(np.asarray(x.var()), t.var().numpy(), rtol=1e-12)
    v, i = x.max(1)
    tv, ti = t.max(1)
    np.testing.assert_allclose(np.asarray(v), tv.numpy())
    np.testing.assert_array_equal(np.asarray(i), ti.numpy())
    np.testing.assert_allclose(np.asarray(nn.GELU()(x)), torch.nn.GELU()(t).numpy(),
                               rtol=1e-12, atol=1e-15)
    eq = x.max(1)[1] == skiff.tensor(np.array([0, 1, 2, 3]))
    assert np.asarray(eq).dtype == np.bool_ and np.asarray(eq).shape == (4,)
    q = np.random.default_rng(1).normal(size=(1, 2, 3, 4))
    got = np.asarray(fn.scaled_dot_product_attention(*(skiff.tensor(q),) * 3))
    want = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(q),) * 3).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert f"{x.sum():.4f}" == f"{float(t.sum()):.4f}"


def test_docs_files_and_make_targets_the_readme_names():
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    shown = set(re.findall(r"`make ([a-z][\w-]*)", README))
    assert shown >= {"lab", "test", "bench", "unit", "gpu-check", "labext"}, shown
    assert shown <= targets, shown - targets
    paths = set(re.findall(r"\b((?:docs|tools|benchmarks)/[\w./-]*\w)", README))
    missing = [p for p in sorted(paths) if not (ROOT / p).exists()
               and p != "benchmarks/results/gpu.md"]  # written by make gpu-check
    assert not missing, missing


def test_every_doc_is_listed_in_where_to_read_more():
    # a new user finds the docs from the README: each docs/*.md is named somewhere in it
    unnamed = [p.name for p in sorted((ROOT / "docs").glob("*.md"))
               if f"docs/{p.name}" not in README]
    assert not unnamed, f"README.md does not point to {unnamed}"


def test_where_make_lab_keeps_its_runs_and_port():
    # `make lab` runs JupyterLab with its own SKIFF_RUNS and port: README says both, so a
    # terminal's `python -m skiff jobs` from the repository root can find the lab's jobs
    make = (ROOT / "Makefile").read_text()
    lab = make.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    runs = re.search(r"SKIFF_RUNS=\$\(CURDIR\)/(\S+)", lab).group(1)
    assert f"SKIFF_RUNS={runs} python -m skiff jobs" in README, runs
    port = re.search(r"^LAB_PORT \?= (\d+)", make, re.M).group(1)
    assert f"127.0.0.1:{port}" in README and "LAB_PORT" in README


def test_readme_early_stopping_call_as_written():
    # README: `Trainer(early_stopping=N)` on a DataFrame and Series, with the val_split it
    # names; without a validation set the Trainer refuses (the README line once left it out)
    pd = pytest.importorskip("pandas")
    import skiff
    from skiff import nn

    assert "val_split=0.1" in README
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(80, 4)), columns=list("abcd"))
    target = pd.Series((df.a > 0).astype(int))
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with pytest.raises(ValueError, match="val_split"):
        skiff.Trainer(model, early_stopping=2).train((df, target), epochs=2)
    result = skiff.Trainer(model, early_stopping=2).train((df, target), epochs=2, val_split=0.1)
    assert result.steps > 0 and np.isfinite(result.final_loss)
