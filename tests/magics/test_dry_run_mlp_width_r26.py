"""Round 26: ``%train mlp (X, y)`` builds the mlp for the data, as a table file's mlp is built
(as wide as X's rows, one output per class): the built-in mlp (2 inputs, 4 classes, made for
blobs) passed the dry run and the launch with 5 features, then failed at step 1 with "MLP
expects inputs of shape (B, 2)". The oracle: PyTorch runs the trained weights on the data."""

import numpy as np
import pytest
import torch
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import list_jobs


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def _data(rows=256, width=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, width)).astype("float32")
    y = np.digitize(X[:, -1], [-0.5, 0.5]).astype("int64")  # the last feature decides
    return X, y


def test_the_dry_run_names_the_mlp_it_builds_for_the_data(shell):
    X, y = _data()
    shell.user_ns.update(X=X, y=y)
    doc = shell.run_line_magic("train", "mlp (X, y) --steps 3 --dry-run")
    assert doc["config"]["mlp"] == {"in_features": X.shape[1],
                                    "out_features": np.unique(y).size}
    assert "  mlp: " in repr(doc) and list_jobs() == []
    shell.user_ns["Y2"] = X[:, :2] * 2.0  # float targets of 2 columns: a regression
    doc = shell.run_line_magic("train", "mlp (X, Y2) --steps 3 --dry-run")
    assert doc["config"]["mlp"] == {"in_features": 5, "out_features": 2}


def test_an_mlp_trains_on_five_features_and_torch_reads_its_weights(shell):
    X, y = _data()
    shell.user_ns.update(X=X, y=y)
    job = shell.run_line_magic("train", "mlp (X, y) --steps 150 --batch-size 64 --lr 0.01 "
                                        "--seed 0")
    job.wait(timeout=120)
    assert job.status == "done", job.error
    model = job.value.model
    layers = [m for m in model.net if hasattr(m, "weight")]
    h = torch.from_numpy(X)
    for i, layer in enumerate(layers):  # weight (out, in), as torch's Linear holds it
        h = torch.nn.functional.linear(h, torch.tensor(np.asarray(layer.weight.numpy())),
                                       torch.tensor(np.asarray(layer.bias.numpy())))
        if i < len(layers) - 1:
            h = torch.relu(h)
    assert tuple(h.shape) == (len(X), 3)
    accuracy = (h.argmax(1).numpy() == y).mean()
    loss = torch.nn.functional.cross_entropy(h, torch.from_numpy(y)).item()
    # the class hangs on the 5th feature: an mlp that read 2 of them would be at chance
    assert accuracy > 0.9, (accuracy, loss)


def test_data_the_mlp_cannot_read_is_refused_before_a_run_folder(shell):
    shell.user_ns.update(x1=np.zeros(8, dtype="float32"), yneg=np.array([-1, 0] * 4),
                         X8=np.zeros((8, 3), dtype="float32"))
    with pytest.raises(UsageError, match=r"X.reshape\(-1, 1\)"):
        shell.run_line_magic("train", "mlp (x1, yneg) --steps 1")
    with pytest.raises(UsageError, match="class ids must be 0 or more"):
        shell.run_line_magic("train", "mlp (X8, yneg) --steps 1")
    assert list_jobs() == []


def test_a_list_of_pairs_counts_its_classes_over_its_rows(shell):
    """A data set of its own (x, label) pairs: the first pair's label said 2 classes where
    there were 3, and the job would fail at the first batch with label 2."""
    X, y = _data(rows=96)
    pairs = [(X[i], int(y[i])) for i in range(len(X))]
    assert pairs[0][1] < y.max()
    shell.user_ns["pairs"] = pairs
    doc = shell.run_line_magic("train", "mlp pairs --steps 3 --dry-run")
    assert doc["config"]["mlp"] == {"in_features": 5, "out_features": np.unique(y).size}
    job = shell.run_line_magic("train", "mlp pairs --steps 3 --batch-size 96")
    job.wait(timeout=120)
    assert job.status == "done", job.error
