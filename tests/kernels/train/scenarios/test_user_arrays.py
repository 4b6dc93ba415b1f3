"""A user's first hour: their own numpy arrays through ``skiff.Trainer`` in three lines.

References are independent of skiff: least squares (numpy) for regression, the known
separating direction for classification, torch for the loss modules.
"""

import numpy as np
import pytest

import skiff
from skiff import nn
from skiff.kernels.train.core import random as train_random


def _regression(n=512, d=5, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    w = rng.standard_normal(d)
    y = (x @ w + 0.5 + noise * rng.standard_normal(n)).astype(np.float32)
    return x, y


def _lstsq_mse(x, y):
    a = np.hstack([x, np.ones((len(x), 1))]).astype(np.float64)
    coef, *_ = np.linalg.lstsq(a, y.astype(np.float64), rcond=None)
    return float(np.mean((a @ coef - y) ** 2))


class Linear1(nn.Module):
    def __init__(self, d, out=1):
        super().__init__()
        self.fc = nn.Linear(d, out)

    def forward(self, x):
        return self.fc(x)


@pytest.mark.parametrize("target_shape", ["(N,)", "(N,1)"])
def test_regression_on_a_tuple_reaches_least_squares(target_shape):
    x, y = _regression()
    if target_shape == "(N,1)":
        y = y[:, None]
    model = Linear1(x.shape[1])
    trainer = skiff.Trainer(model, lr=0.05, batch_size=64, schedule="constant", clip=None)
    result = trainer.train((x, y), epochs=30)
    pred = trainer.predict(x)
    assert pred.shape == (len(x), 1)
    mse = float(np.mean((pred.reshape(y.shape) - y) ** 2))
    best = _lstsq_mse(x, y.reshape(-1))  # about noise**2 = 0.01
    assert mse < best * 1.5 + 1e-3, (mse, best)
    assert result.final_loss < 10 * best


def _blobs(n=400, d=4, seed=1):
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(d)
    x = rng.standard_normal((n, d))
    margin = x @ direction
    x = x[np.abs(margin) > 0.3].astype(np.float32)
    y = (x @ direction > 0).astype(np.int64)
    return x, y


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_classification_reports_validation_accuracy(dtype):
    x, y = _blobs()
    y = y.astype(dtype)
    model = nn.Sequential(nn.Linear(x.shape[1], 16), nn.ReLU(), nn.Linear(16, 2))
    trainer = skiff.Trainer(model, lr=0.02, batch_size=32)
    result = trainer.train((x, y), epochs=8, val_dataset=(x, y))
    last = result.val_history[-1]
    assert "val_accuracy" in last
    # the reported accuracy is the argmax accuracy of the model's own outputs
    acc = float((trainer.predict(x).argmax(axis=1) == y).mean())
    assert last["val_accuracy"] == pytest.approx(acc)
    assert acc > 0.95
    ev = trainer.evaluate((x, y))
    assert ev["val_accuracy"] == pytest.approx(acc)


def test_list_of_tuples_dict_and_dataset_train_the_same_weights():
    x, y = _regression(n=96)
    y = y[:, None]
    forms = {
        "tuple": (x, y),
        "list of tuples": list(zip(x, y, strict=True)),
        "dict": {"x": x, "y": y},
        "ArrayDataset": skiff.data.ArrayDataset(x, y),
        # a loader is read at its own batch size (16 here, the Trainer's: the same steps)
        "DataLoader": skiff.data.DataLoader(skiff.data.ArrayDataset(x, y), 16),
    }
    weights = {}
    for name, data in forms.items():
        train_random.seed(3)
        model = Linear1(x.shape[1])
        skiff.Trainer(model, lr=0.01, batch_size=16).train(data, epochs=2)
        weights[name] = model.state_dict()["fc.weight"]
    for name, w in weights.items():
        np.testing.assert_allclose(w, weights["tuple"], rtol=1e-6, err_msg=name)
    # a loader of batches of 8: 12 steps an epoch, not the Trainer's 6
    small = skiff.Trainer(Linear1(x.shape[1]), lr=0.01, batch_size=16).train(
        skiff.data.DataLoader(skiff.data.ArrayDataset(x, y), 8), epochs=2)
    assert small.steps == 24


def test_custom_module_with_its_own_loss():
    x, y = _regression(n=256)

    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(x.shape[1], 1)

        def forward(self, x):
            return self.fc(x).reshape(-1)

        def loss(self, batch):
            xb, yb = batch
            return ((self(xb) - yb) ** 2).mean()

    model = WithLoss()
    trainer = skiff.Trainer(model, lr=0.05, batch_size=32, schedule="constant")
    trainer.train((x, y), epochs=20)
    mse = float(np.mean((trainer.predict(x) - y) ** 2))
    assert mse < _lstsq_mse(x, y) * 1.5 + 1e-3


def test_loss_modules_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 3)).astype(np.float32)
    target = rng.integers(0, 3, 6)
    ours = nn.CrossEntropyLoss()(skiff.tensor(logits), skiff.tensor(target)).item()
    ref = torch.nn.CrossEntropyLoss()(torch.tensor(logits), torch.tensor(target)).item()
    assert ours == pytest.approx(ref, rel=1e-5)
    a, b = logits, rng.standard_normal((6, 3)).astype(np.float32)
    ours = nn.MSELoss(reduction="sum")(skiff.tensor(a), skiff.tensor(b)).item()
    ref = torch.nn.MSELoss(reduction="sum")(torch.tensor(a), torch.tensor(b)).item()
    assert ours == pytest.approx(ref, rel=1e-5)
    # and as the Trainer's loss
    x, y = _blobs(n=120)
    result = skiff.Trainer(Linear1(x.shape[1], 2), loss=nn.CrossEntropyLoss(), lr=0.05) \
        .train((x, y), epochs=3)
    assert result.final_loss < result.losses[0]


def test_mistakes_get_one_clear_line():
    x, y = _regression(n=64)
    with pytest.raises(ValueError, match=r"same number of rows; got shapes \(64, 5\), \(10,\)"):
        skiff.Trainer(Linear1(5)).train((x, y[:10]))
    with pytest.raises(TypeError, match=r"must be \(x, y\) pairs, e.g. trainer.train\(\(X, y\)\)"):
        skiff.Trainer(Linear1(5)).train(x)
    with pytest.raises(TypeError, match=r"trainer.evaluate\(\(X, y\)\); trainer.predict\(X\)"):
        skiff.Trainer(Linear1(5)).evaluate(x)   # evaluate with inputs alone: predict is meant
    with pytest.raises(ValueError, match=r"for regression pass float targets"):
        skiff.Trainer(Linear1(5)).train((x, np.arange(64)))
    with pytest.raises(ValueError, match=r"output shape \(32, 3\) does not match targets "
                                         r"shape \(32, 1\)"):
        skiff.Trainer(Linear1(5, 3), batch_size=32).train((x, y[:, None]))
    with pytest.raises(TypeError, match=r"must be \(X, y\) arrays or a dataset.*got int"):
        skiff.Trainer(Linear1(5)).train(5)
    with pytest.raises(ValueError, match=r"class ids must be in \[0, 2\).*got 7"):
        skiff.Trainer(Linear1(5, 2)).train((x, np.full(64, 7)))
    with pytest.raises(TypeError, match=r"got dtype <U3; map words to class ids first: "
                                        r"classes, y = np.unique\(y, return_inverse=True\)"):
        skiff.Trainer(Linear1(5, 2)).train((x, np.where(np.arange(64) % 2, "cat", "dog")))
    # a NaN in the data used to surface as "training diverged at step 14: loss is nan"
    bad = x.copy()
    bad[3, 1], bad[40, 0] = np.nan, np.inf
    with pytest.raises(ValueError, match=r"array 0 of the dataset has 2 NaN or inf value\(s\) "
                                         r"in 2 of its 64 rows \(the first, nan, at row 3, "
                                         r"column 1\)"):
        skiff.Trainer(Linear1(5)).train((bad, y))
    with pytest.raises(ValueError, match=r"array 1 .* 1 NaN .* at row 9\)"):
        skiff.Trainer(Linear1(5)).train((x, np.where(np.arange(64) == 9, np.nan, y)))


def test_bool_labels_and_float_class_labels():
    x, y = _blobs(n=200)
    train_random.seed(0)
    trainer = skiff.Trainer(Linear1(x.shape[1], 2), lr=0.05, batch_size=32)
    result = trainer.train((x, y.astype(bool)), epochs=15, val_dataset=(x, y.astype(bool)))
    acc = float((trainer.predict(x).argmax(1) == y).mean())
    assert result.val_history[-1]["val_accuracy"] == pytest.approx(acc) and acc > 0.9
    with pytest.raises(ValueError, match=r"float targets mean regression \(MSE\); for "
                                         r"classification pass integer class ids"):
        skiff.Trainer(Linear1(x.shape[1], 3)).train((x, y.astype(np.float32)))


def test_a_model_of_two_inputs_trains_on_x1_x2_y():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((256, 3)).astype(np.float32)
    b = rng.standard_normal((256, 2)).astype(np.float32)
    y = (a @ np.array([1.0, -1.0, 2.0]) + b @ np.array([0.5, 3.0])).astype(np.float32)

    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.fa, self.fb = nn.Linear(3, 1), nn.Linear(2, 1, bias=False)

        def forward(self, xa, xb):
            return self.fa(xa) + self.fb(xb)

    trainer = skiff.Trainer(TwoInputs(), lr=0.05, batch_size=32, schedule="constant")
    trainer.train((a, b, y), epochs=25)
    pred = trainer.predict((a, b, y), inputs=2)
    both = np.hstack([a, b])
    assert float(np.mean((pred[:, 0] - y) ** 2)) < _lstsq_mse(both, y) + 1e-3


def test_a_torch_module_is_refused_by_name():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"skiff nn.Module \(build it from skiff.nn\), got "
                                        r"torch.nn.modules.linear.Linear"):
        skiff.Trainer(torch.nn.Linear(3, 1))


def test_verbose_prints_one_line_per_epoch(capsys):
    x, y = _blobs(n=64)
    result = skiff.Trainer(Linear1(x.shape[1], 2), batch_size=16, verbose=True) \
        .train((x, y), epochs=3, val_dataset=(x, y))
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    steps_per_epoch = -(-len(x) // 16)
    for i, (line, val) in enumerate(zip(lines, result.val_history, strict=True)):
        assert line.startswith(f"epoch {i + 1}  step {(i + 1) * steps_per_epoch}/")
        assert f"val_accuracy {val['val_accuracy']:.4g}" in line
    first = np.mean(result.losses[:steps_per_epoch])
    assert f"loss {first:.4g}" in lines[0]
    skiff.Trainer(Linear1(x.shape[1], 2), batch_size=16).train((x, y), epochs=1)
    assert capsys.readouterr().out == ""  # quiet unless asked


def test_a_dataset_class_of_tuples_or_dicts():
    x, y = _blobs(n=120)

    class Pairs:
        def __len__(self):
            return len(x)

        def __getitem__(self, i):
            return x[i], int(y[i])  # a Python int label, as torch-style datasets return

    class Dicts(Pairs):
        def __getitem__(self, i):
            return {"image": x[i], "label": int(y[i])}

    weights = []
    for ds in (Pairs(), Dicts()):
        train_random.seed(1)
        model = Linear1(x.shape[1], 2)
        trainer = skiff.Trainer(model, lr=0.05, batch_size=20)
        result = trainer.train(ds, epochs=6, val_dataset=ds)
        assert result.val_history[-1]["val_accuracy"] > 0.9
        np.testing.assert_allclose(trainer.predict(ds), trainer.predict(x), rtol=1e-6)
        weights.append(model.state_dict()["fc.weight"])
    np.testing.assert_array_equal(weights[0], weights[1])

    class Odd(Pairs):
        def __getitem__(self, i):
            return {"a": x[i], "b": int(y[i])}

    with pytest.raises(TypeError, match=r"needs an input key .* got keys \['a', 'b'\]"):
        skiff.Trainer(Linear1(x.shape[1], 2)).train(Odd())


def test_a_loss_method_of_output_and_target():
    x, y = _regression(n=256)

    class Criterion(nn.Module):  # loss written torch-criterion style, as a method
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(x.shape[1], 1)

        def forward(self, x):
            return self.fc(x)[:, 0]

        def loss(self, output, target):
            return (output - target).abs().mean()  # L1, so MSE would give other weights

    model = Criterion()
    trainer = skiff.Trainer(model, lr=0.05, batch_size=32, schedule="constant")
    trainer.train((x, y), epochs=20)
    l1 = float(np.mean(np.abs(trainer.predict(x) - y)))
    assert l1 < 0.2  # noise 0.1: mean |e| about 0.08 at the optimum


def test_a_list_of_two_arrays_says_to_pass_a_tuple():
    x, y = _regression(n=64)
    with pytest.raises(ValueError, match=r"different shapes \(\(64, 5\), \(64,\)\).*pass a "
                                         r"tuple \(X, y\), not a list \[X, y\]"):
        skiff.Trainer(Linear1(5)).train([x, y])


def test_val_split_keeps_the_last_fraction_apart():
    x, y = _blobs(n=200)
    n = len(x)
    n_val = int(round(n * 0.25))
    train_random.seed(2)
    a = skiff.Trainer(Linear1(x.shape[1], 2), lr=0.05, batch_size=16, shuffle=False)
    ra = a.train((x, y), epochs=2, val_split=0.25)
    train_random.seed(2)
    b = skiff.Trainer(Linear1(x.shape[1], 2), lr=0.05, batch_size=16, shuffle=False)
    rb = b.train((x[:-n_val], y[:-n_val]), epochs=2, val_dataset=(x[-n_val:], y[-n_val:]))
    assert ra.steps == rb.steps == 2 * -(-(n - n_val) // 16)
    assert ra.val_history == rb.val_history
    with pytest.raises(ValueError, match=r"val_split must be a fraction between 0 and 1, "
                                         r"got 1.5"):
        a.train((x, y), val_split=1.5)
    with pytest.raises(ValueError, match="val_dataset or val_split, not both"):
        a.train((x, y), val_dataset=(x, y), val_split=0.1)
