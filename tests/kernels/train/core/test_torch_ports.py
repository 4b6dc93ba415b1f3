"""Five classic torch tutorial programs (ports/: an MNIST-style CNN, a character LSTM/GRU
language model, a Transformer text classifier, a VAE, a tabular regression with TensorDataset
and DataLoader), each run with torch and, with every "torch" of its text replaced by "skiff",
with skiff: from torch's initial weights, on the same batches, without dropout, the loss
curves agree to 1e-10 in float64."""

from __future__ import annotations

import copy
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import skiff

PORTS = Path(__file__).parent / "ports"
TOL = {"rtol": 1e-10, "atol": 1e-12}


def program(name: str, lib: str) -> types.ModuleType:
    """The program ``ports/<name>.py`` for ``lib`` ("torch", or "skiff": the text renamed)."""
    text = (PORTS / f"{name}.py").read_text()
    if lib == "skiff":
        text = text.replace("torch", "skiff")
    mod = types.ModuleType(f"{lib}_{name}")
    exec(compile(text, f"{PORTS / name}.py ({lib})", "exec"), mod.__dict__)  # noqa: S102
    return mod


def torch_init(make):
    torch.manual_seed(3)
    return {k: v.clone() for k, v in make().double().state_dict().items()}


def to_skiff(state):
    return {k: skiff.tensor(v) for k, v in state.items()}  # a torch tensor copies


def test_mnist_cnn(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((96, 1, 14, 14)), rng.integers(0, 10, 96)
    Xt, yt = rng.standard_normal((48, 1, 14, 14)), rng.integers(0, 10, 48)
    T, S = program("mnist_cnn", "torch"), program("mnist_cnn", "skiff")
    init = torch_init(T.Net)
    _, lt, tt, _ = T.main(X, y, Xt, yt, init=init, dropout=False, epochs=3,
                          path=tmp_path / "t.pt")
    _, ls, ts, same = S.main(X, y, Xt, yt, init=to_skiff(init), dropout=False, epochs=3,
                             path=tmp_path / "s.pt")
    assert len(ls) == 18
    np.testing.assert_allclose(ls, lt, **TOL)
    np.testing.assert_allclose(np.array(ts), np.array(tt), **TOL)  # test loss, accuracy
    assert same  # skiff.save / skiff.load of the state dict
    _, ls, _, _ = S.main(X, y, Xt, yt, epochs=1, path=tmp_path / "d.pt")  # with dropout
    assert np.isfinite(ls).all()


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_char_rnn(cell):
    text = np.random.default_rng(0).integers(0, 11, 400)
    T, S = program("char_rnn", "torch"), program("char_rnn", "skiff")
    init = torch_init(lambda: T.CharLM(11, cell=cell))
    _, lt, _ = T.main(text, 11, init=init, cell=cell)
    _, ls, sample = S.main(text, 11, init=to_skiff(init), cell=cell)
    assert len(ls) == 20
    np.testing.assert_allclose(ls, lt, **TOL)
    assert len(sample) == 21 and all(0 <= c < 11 for c in sample)  # skiff.multinomial


def test_transformer_classifier():
    rng = np.random.default_rng(0)
    X = rng.integers(1, 20, (48, 10))
    for i, n in enumerate(rng.integers(3, 11, 48)):
        X[i, n:] = 0  # padding
    y = X[:, 0] % 3
    T, S = program("transformer_classifier", "torch"), program("transformer_classifier", "skiff")
    init = torch_init(lambda: T.Classifier(20))
    with warnings.catch_warnings():  # torch's nested-tensor fast path is a prototype
        warnings.simplefilter("ignore")
        _, lt, lrt, at = T.main(X, y, init=init, dropout=False)
    _, ls, lrs, acc = S.main(X, y, init=to_skiff(init), dropout=False)
    np.testing.assert_allclose(ls, lt, **TOL)
    np.testing.assert_allclose(lrs, lrt, rtol=1e-14)  # LambdaLR warmup and decay
    assert acc == at
    # the positional encoding built by item assignment is torch's (float32, up to 1 ulp)
    pe_t, pe_s = T.PositionalEncoding(16).pe.numpy(), S.PositionalEncoding(16).pe.numpy()
    assert pe_s.dtype == np.float32
    np.testing.assert_allclose(pe_s, pe_t, atol=2e-7)
    _, ls, _, _ = S.main(X, y, steps=3)  # with dropout
    assert np.isfinite(ls).all()


def test_vae(monkeypatch):
    X = (np.random.default_rng(0).random((80, 64)) < 0.3).astype(np.float64)
    T, S = program("vae", "torch"), program("vae", "skiff")
    init = torch_init(T.VAE)

    def shared_noise(lib):  # the same eps for both: torch's and skiff's generators differ
        g = np.random.default_rng(5)
        return lambda t, **kw: lib.tensor(g.standard_normal(tuple(t.shape)))

    monkeypatch.setattr(torch, "randn_like", shared_noise(torch))
    _, lt, _ = T.main(X, init=init)
    monkeypatch.undo()
    skiff.randn_like  # noqa: B018  (loads skiff.api's name before it is replaced)
    monkeypatch.setattr(skiff, "randn_like", shared_noise(skiff))
    _, ls, shape = S.main(X, init=to_skiff(init))
    assert len(ls) == 10 and shape == (8, 64)
    np.testing.assert_allclose(ls, lt, **TOL)


def test_tabular_dataloader_early_stop():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(6)
    X = rng.standard_normal((96, 6))
    y = np.tanh(X @ w) + 0.1 * rng.standard_normal(96)
    Xv = rng.standard_normal((40, 6))
    yv = np.tanh(Xv @ w) + 0.1 * rng.standard_normal(40)
    T, S = program("tabular", "torch"), program("tabular", "skiff")
    init = torch_init(lambda: T.make_model(6))
    _, lt, vt, bt = T.main(X, y, Xv, yv, init=init, shuffle=False, p=0.0, epochs=4)
    _, ls, vs, bs = S.main(X, y, Xv, yv, init=to_skiff(init), shuffle=False, p=0.0, epochs=4)
    assert len(ls) == 24
    np.testing.assert_allclose(ls, lt, **TOL)
    np.testing.assert_allclose(vs, vt, **TOL)
    assert bs == pytest.approx(bt, rel=1e-10)
    # shuffled (skiff's order, not torch's) with dropout, until early stopping
    _, ls, vs, best = S.main(X, y, Xv, yv, epochs=30, patience=2)
    assert len(vs) < 30 and best == min(vs) and best < vs[0]


def test_state_dict_copies():
    S = program("tabular", "skiff")
    m = S.make_model(3)
    saved = copy.deepcopy(m.state_dict())
    assert set(saved) == {"0.weight", "0.bias", "3.weight", "3.bias"}
