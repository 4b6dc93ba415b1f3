"""A user's notebook: %train on their own variables, a tuple expression, %%train cells that use
notebook variables, resume from a checkpoint folder."""

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 4)).astype(np.float32)
    ip.user_ns.update(X=x, y=(x[:, 0] > 0).astype(np.int64))
    return ip


def _weights(model):
    return {k: v.copy() for k, v in model.state_dict().items()}


def test_tuple_variable_and_tuple_expression_train_the_same(shell):
    import skiff
    from skiff.kernels.train.core import random as train_random

    results = []
    for data in ("ds", "(X, y)", "(X[:96], y)"):
        train_random.seed(5)
        shell.user_ns["m"] = skiff.models.MLP(4, 2, (8,))
        shell.user_ns["ds"] = (shell.user_ns["X"], shell.user_ns["y"])
        before = _weights(shell.user_ns["m"])
        job = shell.run_line_magic("train", f"m {data} --epochs 2 --lr 0.01 --wait")
        assert job.status == "done", job.error
        after = _weights(shell.user_ns["m"])
        assert any(not np.array_equal(before[k], after[k]) for k in before)  # in place
        results.append(after)
    for other in results[1:]:
        for k in results[0]:
            np.testing.assert_array_equal(other[k], results[0][k])


def test_a_bad_data_expression_names_the_missing_variable(shell):
    with pytest.raises(UsageError, match=r"DATA '\(X, nope\)': name 'nope' is not defined"):
        shell.run_line_magic("train", "m (X, nope) --steps 2")


def test_train_cell_sees_notebook_variables_and_returns_the_model(shell):
    shell.user_ns.pop("model", None)
    job = shell.run_cell_magic(
        "train", "--steps 6 --lr 0.01 --wait",
        "model = skiff.models.MLP(4, 2, (8,))\ndataset = (X, y)\nval_dataset = (X, y)\n")
    assert job.status == "done", job.error
    model = shell.user_ns["model"]
    assert type(model).__name__ == "MLP" and model is job.value.model
    # the delivered model is the trained one: its accuracy is what the job reported
    logits = model(shell.user_ns["X"]).numpy()
    acc = float((logits.argmax(1) == shell.user_ns["y"]).mean())
    assert job.value.val_history[-1]["val_accuracy"] == pytest.approx(acc)


def test_resume_continues_the_step_count(shell, tmp_path):
    job = shell.run_line_magic("train", f"mlp --steps 4 --checkpoint-dir {tmp_path} --wait")
    assert job.status == "done", job.error
    job2 = shell.run_line_magic("train",
                                f"mlp --steps 7 --checkpoint-dir {tmp_path} --resume --wait")
    assert job2.status == "done", job2.error
    steps = [row["step"] for row in job2.result["history"]]
    assert steps == list(range(1, 8))  # 1-4 restored from the checkpoint, 5-7 trained
    assert job2.result["history"][:4] == job.result["history"]


def test_a_list_expression_and_a_lone_array(shell):
    import skiff

    shell.user_ns["m"] = skiff.models.MLP(4, 2, (8,))
    job = shell.run_line_magic("train", "m [X, y] --steps 3 --wait")
    assert job.status == "done", job.error
    with pytest.raises(UsageError, match=r"DATA 'X' is one array, and the model has no "
                                         r"loss\(batch\).*%train m \(X, y\)"):
        shell.run_line_magic("train", "m X --steps 2")


def test_a_model_class_instead_of_an_instance_is_named(shell):
    import skiff

    shell.user_ns["MLP"] = skiff.models.MLP
    with pytest.raises(UsageError, match=r"MODEL 'MLP' is a class; train an instance"):
        shell.run_line_magic("train", "MLP (X, y) --steps 2")
