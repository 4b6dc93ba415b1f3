"""Round 45 (h8's request): ``%train mlp S`` with a SciPy sparse matrix said SciPy's own
words ("sparse array length is ambiguous; use getnnz() or shape[0]"), and ``%train mlp
(S, y)`` said the data "has no targets" though it has them. Both now say the data holds a
sparse matrix and how to pass it dense, in one line, before any job."""

import numpy as np
import pytest
import scipy.sparse as sp
from IPython.core.error import UsageError


@pytest.fixture
def ip():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()  # a worker's shell, as other magic tests make it
    shell.run_line_magic("load_ext", "skiff")
    yield shell
    InteractiveShell.clear_instance()


@pytest.mark.parametrize("cell", ["S", "pair"])
def test_a_sparse_matrix_as_data_is_said_in_one_line(ip, cell, tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    S = sp.random(20, 4, density=0.5, format="csr", random_state=0)
    ip.user_ns.update(S=S, pair=(S, np.arange(20) % 2))
    with pytest.raises(UsageError) as err:
        ip.run_line_magic("train", f"mlp {cell} --dry-run")
    text = str(err.value)
    assert "sparse matrix" in text and "toarray()" in text and "\n" not in text, text
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
