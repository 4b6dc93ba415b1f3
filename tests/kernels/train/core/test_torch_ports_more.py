"""Four more torch programs (ports/): a hand-written training loop on .grad/.data without an
optimizer, gradient accumulation with RMSprop + OneCycleLR, a fine-tune with frozen layers and
parameter groups (Adagrad, then SGD) and a forward hook, a tied-embedding language model with a
gradient hook and AdamW + CyclicLR. Each runs with torch and, with "torch" renamed "skiff",
with skiff, from torch's initial weights on the same batches: the losses (and what each
logs) agree to 1e-10 in float64."""

from __future__ import annotations

import numpy as np
import pytest

from .test_torch_ports import TOL, program, to_skiff, torch_init


def both(name):
    return program(name, "torch"), program(name, "skiff")


def test_manual_loop_without_an_optimizer():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((48, 6))
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    T, S = both("manual_loop")
    init = torch_init(lambda: T.MLP(6))
    _, lt, nt = T.main(X, y, init=init)
    _, ls, ns = S.main(X, y, init=to_skiff(init))
    assert len(ls) == 12
    np.testing.assert_allclose(ls, lt, **TOL)
    np.testing.assert_allclose(ns, nt, **TOL)


def test_gradient_accumulation_rmsprop_one_cycle():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((72, 5))
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5)
    T, S = both("grad_accum")
    init = torch_init(lambda: T.make_model(5, 3))
    _, lt, rt, nt = T.main(X, y, 3, init=init)
    _, ls, rs, ns = S.main(X, y, 3, init=to_skiff(init))
    assert len(ls) == 27 and len(rs) == 9
    np.testing.assert_allclose(ls, lt, **TOL)
    np.testing.assert_allclose(rs, rt, rtol=1e-13)
    np.testing.assert_allclose(ns, nt, **TOL)


def test_finetune_with_frozen_layers_and_param_groups():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((64, 7))
    y = np.argmax(X[:, :4], axis=1)
    T, S = both("finetune_frozen")
    init = torch_init(lambda: T.Classifier(7, 4))
    _, lt, ft, kt, at, gt = T.main(X, y, 4, init=init)
    _, ls, fs, ks, as_, gs = S.main(X, y, 4, init=to_skiff(init))
    np.testing.assert_allclose(ls, lt, **TOL)
    np.testing.assert_allclose(fs, ft, **TOL)  # what the forward hook saw
    assert ks == kt == 16 * 32 + 16 + 4 * 16 + 4
    assert as_ == pytest.approx(at) and gs == gt


def test_tied_embedding_language_model():
    tokens = np.random.default_rng(4).integers(0, 13, 140)
    T, S = both("tied_lm")
    init = torch_init(lambda: T.TiedLM(13))
    _, lt, pt, nt = T.main(tokens, 13, init=init)
    _, ls, ps, ns = S.main(tokens, 13, init=to_skiff(init))
    assert nt == ns  # the tied weight counted once
    np.testing.assert_allclose(ls, lt, **TOL)
    assert ps == pytest.approx(pt, rel=1e-10)


def test_gan_with_two_optimizers_and_a_frozen_discriminator():
    rng = np.random.default_rng(6)
    real = rng.standard_normal((48, 6)) * 0.5 + 1.0
    noise = rng.standard_normal((48, 4))
    T, S = both("gan")
    init_g, init_d = torch_init(T.G), torch_init(T.D)
    got_t = T.main(real, noise, init_g, init_d)
    got_s = S.main(real, noise, to_skiff(init_g), to_skiff(init_d))
    for a, b in zip(got_s[:4], got_t[:4]):
        assert len(a) == 6
        np.testing.assert_allclose(a, b, **TOL)
    assert got_s[4] == got_t[4]


def test_straight_through_quantisation_with_a_custom_function():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((48, 5))
    y = np.argmax(X[:, :3], axis=1)
    T, S = both("ste_quant")
    init = torch_init(lambda: T.nn.Sequential(T.QLinear(5, 12), T.nn.ReLU(), T.QLinear(12, 3)))
    _, lt = T.main(X, y, init=init)
    _, ls = S.main(X, y, init=to_skiff(init))
    assert len(ls) == 9
    np.testing.assert_allclose(ls, lt, **TOL)


def test_custom_optimizer_and_scheduler_subclasses():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((48, 5))
    y = np.argmax(X[:, 2:], axis=1)
    T, S = both("custom_optim")
    init = torch_init(lambda: T.nn.Sequential(T.nn.Linear(5, 10), T.nn.SiLU(), T.nn.Linear(10, 3)))
    _, lt, rt, nt = T.main(X, y, init=init)
    _, ls, rs, ns = S.main(X, y, init=to_skiff(init))
    assert len(ls) == 9 and ns == nt == 4
    np.testing.assert_allclose(ls, lt, **TOL)
    np.testing.assert_allclose(rs, rt, rtol=1e-13)
