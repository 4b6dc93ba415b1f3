"""notebooks/03-distributed.ipynb runs in quick mode: plans, a 2-rank job, a killed rank and a
resumed run."""

from __future__ import annotations

import pytest

from tests.notebook_util import NOTEBOOKS, execute_notebook, outputs_text

pytestmark = [pytest.mark.notebook, pytest.mark.slow, pytest.mark.mpi]


def test_distributed_notebook_is_built_from_its_source():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(NOTEBOOKS / "build.py"), "--check",
                          "03-distributed"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_distributed_notebook_runs(runs_dir):
    nb = execute_notebook("03-distributed.ipynb", timeout=180)
    text = outputs_text(nb)
    assert "quick mode" in text
    assert "Plan for 7b" in text and "Plan for 70b" in text and "B active" in text
    assert "does not fit on 8 x 40.0 GB" in text
    assert "done - 6 steps" in text and "dp=2,tp=1,pp=1" in text
    assert "failed - rank 1" in text
    assert "done - resumed run ended at step 240" in text
    assert "all jobs finished: ['done', 'failed', 'done']" in text
