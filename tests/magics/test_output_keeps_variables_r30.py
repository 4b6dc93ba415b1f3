"""``-o NAME`` naming a variable the same line reads is refused before any job (round 30:
``%train mlp (X, y) -o X`` replaced the notebook's X with the job, and the line run again
said X had no targets); a name the line does not read, a path's words, and a variable
already holding a job are stored as before."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
from IPython.core.error import UsageError

from skiff.jobs import Job, list_run_dirs


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    before = set(ip.user_ns)
    yield ip
    for name in set(ip.user_ns) - before:  # the shell is shared by later tests
        ip.user_ns.pop(name, None)


def test_a_variable_the_line_reads_is_kept(shell, runs_dir):
    x = np.random.default_rng(0).normal(size=(40, 3)).astype("f4")
    y = (x[:, 0] > 0).astype(np.int64)
    a = scipy.sparse.identity(4, format="csr") * 2.0
    shell.user_ns.update(X=x, y=y, A=a, b=np.ones(4))
    for magic, line, name in (("train", "mlp (X, y) --steps 1 -o X", "X"),
                              ("train", "mlp (X, y) --steps 1 --output=y", "y"),
                              ("solve", "A b -o A", "A")):
        before = shell.user_ns[name]
        with pytest.raises(UsageError, match=rf"-o {name} would replace the notebook's "
                                             rf"{name}.*-o {name}_job"):
            shell.run_line_magic(magic, line)
        assert shell.user_ns[name] is before
    assert list_run_dirs() == []  # refused before any job
    job = shell.run_line_magic("train", "mlp (X, y) --steps 1 -o X_job --wait")
    assert job.status == "done" and shell.user_ns["X_job"] is job
    again = shell.run_line_magic("train", "mlp (X, y) --steps 1 -o X_job --wait")
    assert shell.user_ns["X_job"] is again  # a job there is replaced, as before
    assert np.array_equal(shell.user_ns["X"], x)


def test_a_paths_words_are_no_variables(shell, tmp_path, runs_dir):
    table = tmp_path / "data.csv"
    table.write_text("a,b,label\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(30)))
    shell.user_ns["data"] = "a notebook string"
    job = shell.run_line_magic("train", f"mlp {table} --steps 1 -o data --wait")
    assert isinstance(shell.user_ns["data"], Job) and job.status == "done"
