"""`--amg sa|classical|auto` reaches the solver from the terminal, a %solve line and a %%solve
cell's options (round 33: the kernel took `amg=` since classical AMG came in, the front
refused the flag). The oracle is the solver's own line in the run folder's events: the
hierarchy it built (classical names Ruge-Stueben, smoothed aggregation does not)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[2]


def _matrix(path: Path) -> Path:
    """A 2-D diffusion M-matrix with log-normal cell coefficients (20 x 20)."""
    rng = np.random.default_rng(3)
    n = 20
    k = np.exp(rng.normal(0.0, 2.0, (n, n)))
    kx = 2.0 / (1.0 / k[1:, :] + 1.0 / k[:-1, :])
    ky = 2.0 / (1.0 / k[:, 1:] + 1.0 / k[:, :-1])
    idx = np.arange(n * n).reshape(n, n)
    rows = np.concatenate([idx[1:, :].ravel(), idx[:, 1:].ravel()])
    cols = np.concatenate([idx[:-1, :].ravel(), idx[:, :-1].ravel()])
    c = np.concatenate([kx.ravel(), ky.ravel()])
    off = sp.coo_matrix((-c, (rows, cols)), shape=(n * n, n * n))
    off = off + off.T
    A = (off - sp.diags(np.asarray(off.sum(axis=1)).ravel()) + sp.diags(0.01 * k.ravel()))
    sio.mmwrite(str(path), A.tocsr())
    return path.with_suffix(".mtx")


def _solver_line(run_dir: Path) -> str:
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "log" and event.get("message", "").startswith("solver:"):
            return event["message"]
    raise AssertionError("no solver line in the job's events")


@pytest.mark.parametrize("kind,named", [("classical", True), ("sa", False)])
def test_terminal_amg_kind_reaches_the_solver(tmp_path, kind, named):
    mtx = _matrix(tmp_path / "A.mtx")
    out = subprocess.run([sys.executable, "-m", "skiff", "solve", str(mtx), "--precond", "amg",
                          "--amg", kind, "--json"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env={**__import__("os").environ,
                                                      "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["result"]["converged"]
    line = _solver_line(Path(doc["job"]["run_dir"]))
    assert ("Ruge-Stueben" in line) is named, line


def test_amg_kind_is_validated_in_line_and_cell():
    from skiff.kinds.solve import to_config

    config = to_config({"problem": "poisson", "grid": [16, 16], "amg": "classical"})
    assert config["amg"] == "classical"
    assert to_config({"problem": "poisson", "grid": [16, 16]})["amg"] == "auto"
    with pytest.raises(ValueError, match="classical"):   # a cell's option misspelt: the closest
        to_config({"problem": "poisson", "grid": [16, 16],
                   "spec": {"options": {"amg": "clasical"}}})
