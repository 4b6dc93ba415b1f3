"""Round 48 (h14, requested in skiff/kinds/solve.py): ``solve A.mtx B.npy --np 2`` with an
(n, k) B was refused before the job ("the row split solves one right-hand side: drop --np for
several") while the ranks' job now solves each column (``rows_job``, one setup; a ``B.mtx``
went through already). The launch check takes it; a B of the wrong length is still the
job's to refuse. Oracle: the launch's own decomposition (every row on one rank)."""

import numpy as np

from skiff.kinds.solve import _check_row_launch


def test_a_b_of_three_columns_is_launched_over_two_ranks(tmp_path):
    np.save(tmp_path / "B.npy", np.ones((256, 3)))
    config = {"grid": [256], "b": str(tmp_path / "B.npy")}
    line = _check_row_launch(config, 2)
    assert "2 ranks by rows of the matrix (128, 128 rows)" in line
    assert [d["cells"] for d in config["decomposition"]["subdomains"]] == [128, 128]
