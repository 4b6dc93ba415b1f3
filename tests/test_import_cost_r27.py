"""What a first ``skiff.solve`` loads: only its own home, not the training core (round 27).

``import skiff; skiff.solve(A, b)`` went through skiff.api, which imported every public name's
module at once: the training core and ml_dtypes (about 1 s of a 2 s first solve). Each check
runs in a fresh interpreter (``sys.modules`` there is the evidence) and compares the solution
with SciPy's ``spsolve``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

# modules that only training needs (the training core's tensors and torch's names, ml_dtypes)
TRAINING = ("skiff.kernels.train.core.tensor", "skiff.kernels.train.core.functions",
            "skiff.kernels.train.trainer", "ml_dtypes")


def fresh(code: str) -> dict:
    """Run ``code`` (which sets ``out``) in a new interpreter; ``out`` and the modules loaded."""
    script = ("import json, sys\n" + code +
              "\nout['modules'] = sorted(sys.modules)\nprint(json.dumps(out))\n")
    import skiff  # the child imports this same skiff, wherever it runs from

    root = str(Path(skiff.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def laplacian(n: int) -> sp.csr_matrix:
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")


def test_first_solve_loads_no_training_core_and_matches_spsolve():
    out = fresh("""
import numpy as np, scipy.sparse as sp
import skiff
n = 300
A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
b = np.sin(np.arange(n) / 7.0)
sol = skiff.solve(A, b, rtol=1e-12)
out = {"x": sol.field.tolist(), "converged": bool(sol.converged),
       "same": skiff.solve is skiff.api.solve and skiff.Solver is skiff.api.Solver}
""")
    loaded = set(out["modules"])
    assert not loaded & set(TRAINING), sorted(loaded & set(TRAINING))
    assert not any(m.startswith("skiff.kernels.train") for m in loaded)
    assert out["same"] and out["converged"]
    b = np.sin(np.arange(300) / 7.0)
    expected = spsolve(laplacian(300).tocsc(), b)
    np.testing.assert_allclose(out["x"], expected, rtol=1e-8, atol=1e-8 * np.abs(expected).max())


def test_solver_ocr_and_jobs_names_load_only_their_homes():
    out = fresh("""
import numpy as np, scipy.sparse as sp
import skiff
from skiff.api import Solver  # from-import goes through skiff.api's lazy names too
from skiff.kernels.solve import Solver as home_solver
from skiff.kernels.ocr import ocr as home_ocr
from skiff.jobs import Job as home_job
A = sp.diags([4.0, -1.0, -1.0], [0, -1, 1], shape=(50, 50), format="csr")
solver = skiff.Solver(A, method="cg")
x = [solver.solve(np.full(50, float(k))).field.tolist() for k in (1, 2)]
out = {"x": x, "same": [Solver is home_solver, skiff.ocr is home_ocr, skiff.Job is home_job,
                        skiff.launch is skiff.api.launch, callable(skiff.panel)]}
""")
    assert out["same"] == [True] * 5
    assert not set(out["modules"]) & set(TRAINING)
    A = sp.diags([4.0, -1.0, -1.0], [0, -1, 1], shape=(50, 50), format="csc")
    for k, x in zip((1, 2), out["x"]):
        np.testing.assert_allclose(x, spsolve(A, np.full(50, float(k))), rtol=1e-5)


def test_training_names_and_dir_are_as_before():
    """A training name still loads the training group, and every public name (skiff.api's
    ``__all__``: skiff's own and every name of the training core's torch functions) resolves on
    ``skiff`` to the object of its home module and is listed by ``dir(skiff)``."""
    import skiff
    from skiff.kernels.solve import solve as home_solve
    from skiff.kernels.train.core import functions
    from skiff.kernels.train.core.tensor import Tensor
    from skiff.kernels.train.trainer import Trainer

    names = set(dir(skiff))
    assert set(functions.__all__) <= names and {"solve", "Trainer", "panel", "nn"} <= names
    assert set(skiff.api.__all__) <= names
    assert skiff.Trainer is Trainer and skiff.Tensor is Tensor and skiff.solve is home_solve
    for name in skiff.api.__all__:  # skiff.autograd: the submodule, skiff.api's is torch's
        assert name == "autograd" or getattr(skiff, name) is getattr(skiff.api, name), name
    for name in functions.__all__:
        if name not in skiff.api.NAMES and name != "autograd":  # skiff.autograd: a submodule
            assert getattr(skiff, name) is getattr(functions, name), name
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        skiff.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute '_private'"):
        skiff.api._private  # noqa: B018


def test_training_names_load_no_ml_dtypes_until_bfloat16_is_asked_for():
    """``skiff.Trainer`` / ``skiff.tensor`` do not load ml_dtypes (~0.6 s of every training
    start before); ``skiff.bfloat16`` then is ml_dtypes' bfloat16 and tensors take it, and
    torch rounds a value to bfloat16 as skiff does (the oracle)."""
    out = fresh("""
import skiff
t = skiff.tensor([1.0, 2.0])
before = "ml_dtypes" in sys.modules
b = skiff.tensor([1.00390625, 3.14159]).to(skiff.bfloat16)
import ml_dtypes, numpy as np
out = {"before": before, "same": skiff.bfloat16 == np.dtype(ml_dtypes.bfloat16),
       "values": b.float().tolist(), "listed": "bfloat16" in skiff.api.__all__,
       "in_dir": "bfloat16" in dir(skiff), "trainer": skiff.Trainer.__name__}
""")
    torch = pytest.importorskip("torch")
    want = torch.tensor([1.00390625, 3.14159]).to(torch.bfloat16).float().tolist()
    assert out["before"] is False and out["same"] and out["listed"] and out["in_dir"]
    assert out["values"] == want and out["trainer"] == "Trainer"
