"""A first small solve waits neither for numba nor for matplotlib; it switches to the numba
kernels once they are loaded; the job's pictures are drawn without matplotlib."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.backend.png import colormap, heatmap_png

ROOT = Path(__file__).resolve().parents[3]


def _fresh(code: str, **env) -> dict:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), **env))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def first_use(tmp_path_factory):
    """One fresh process for two checks (round 46: it was two, 1.5-2 CPU s of imports each):
    a first small solve, then a solve job in the same process. The job comes second, as the
    small solve's check needs a process where numba has not been loaded yet; the job's
    pictures are drawn without matplotlib whether numba is loaded or not.

    The job is waited on conditions, never on a clock (the subprocess's 300 s bound only
    stops a hang): the job's end, then the numba load that a small solve starts 0.5 s after
    it ends, so that the process never exits while that daemon thread compiles. It had
    wait(60): with numba's cache cold (after any edit of a solve kernel) the job's true
    residual compiles a numba kernel in the job's thread, and four such children at once on
    two loaded cores took 17-25 s each, so a combined run could pass 60 s."""
    pytest.importorskip("numba")
    return _fresh("""
        import json, sys
        from skiff.jobs import launch
        from skiff.kernels.solve import Solver, poisson, fused
        from skiff.kernels.solve.solver import load_numba
        solver = Solver(poisson((64, 64)))
        first = solver.solve(rtol=1e-10)
        level = solver.mg.levels[0]
        state = {"numba_during_first": "numba" in sys.modules and fused.numba_loaded(),
                 "ref_first": level._apply is fused.apply_const.reference,
                 "iterations_first": first.iterations}
        load_numba()                             # the background load, to its end
        second = solver.solve(rtol=1e-10)        # the same solver: switched at its next cycle
        state["ref_after"] = level._apply is fused.apply_const.reference
        state["iterations_after"] = second.iterations
        state["same"] = float(abs(first.field - second.field).max())
        state["matplotlib"] = "matplotlib" in sys.modules
        job = launch("solve", {"problem": "poisson", "grid": [48, 48], "rtol": 1e-8}).wait()
        after_job = "matplotlib" in sys.modules
        load_numba()
        state["job"] = {"status": job.status, "field": str(job.artifact_path("field")),
                        "conv": str(job.artifact_path("convergence")),
                        "matplotlib": after_job or "matplotlib" in sys.modules}
        print(json.dumps(state))
    """, SKIFF_RUNS=str(tmp_path_factory.mktemp("runs")))


def test_a_small_first_solve_uses_the_references_then_switches_to_numba(first_use):
    got = first_use
    assert got["numba_during_first"] is False and got["ref_first"] is True
    assert got["ref_after"] is False  # numba's twins once loaded
    assert got["iterations_after"] == got["iterations_first"]
    assert got["same"] < 1e-9
    assert got["matplotlib"] is False


def test_a_big_solve_uses_numba_at_once():
    pytest.importorskip("numba")
    got = _fresh("""
        import json
        from skiff.kernels.solve import Solver, poisson, fused
        from skiff.kernels.solve.solver import load_numba
        solver = Solver(poisson((8, 8, 8)))   # small: deferred
        deferred = fused.numba_loaded()
        big = Solver(poisson((520, 520)))     # above DEFER_UNKNOWNS: waits for numba
        print(json.dumps({"deferred": deferred,
                          "ref": big.mg.levels[0]._apply is fused.apply_const.reference}))
    """)
    assert got == {"deferred": False, "ref": False}


def test_numba_disabled_means_references_and_no_background_load():
    got = _fresh("""
        import json, time
        from skiff.kernels.solve import Solver, poisson, fused
        from skiff.kernels.solve.solver import load_numba
        sol = Solver(poisson((64, 64))).solve()
        time.sleep(0.8)
        print(json.dumps({"converged": sol.converged, "loaded": fused.numba_loaded()}))
    """, SKIFF_DISABLE_NUMBA="1")
    assert got == {"converged": True, "loaded": False}


def test_heatmap_png_is_a_png_of_the_field_with_its_scale():
    from PIL import Image

    u = np.outer(np.linspace(0, 1, 40), np.ones(20))   # grows along axis 0 (x)
    data = heatmap_png(u, size=80)
    img = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    lo, hi = colormap(np.array([0.0, 1.0]))
    pad = 8
    # x grows to the right: the left column is the low colour, the right one the high colour
    assert (img[pad + 1, pad] == lo).all() and (img[pad + 1, pad + 79] == hi).all()
    # the colour strip: high at the top, low at the bottom
    strip = img[pad:-pad, -pad - 7]
    assert (strip[0] == hi).all() and (strip[-1] == lo).all()
    with pytest.raises(ValueError, match="2-D"):
        heatmap_png(np.zeros(5))


def test_a_solve_job_writes_its_field_and_residuals_without_matplotlib(first_use):
    got = first_use["job"]
    assert got["status"] == "done" and got["matplotlib"] is False
    assert Path(got["field"]).read_bytes()[:4] == b"\x89PNG"
    rows = Path(got["conv"]).read_text().splitlines()
    assert rows[0] == "iteration,relative_residual" and float(rows[1].split(",")[1]) == 1.0
    assert float(rows[-1].split(",")[1]) <= 1e-8
