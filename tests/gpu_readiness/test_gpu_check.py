"""``make gpu-check`` where no GPU is visible (``CUDA_VISIBLE_DEVICES=""`` hides a real one
too): it says so, writes a short gpu.md saying so, and exits 0 without running anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_without_a_gpu_writes_a_note_and_exits_0(tmp_path):
    out = tmp_path / "gpu.md"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check.py"), "--out",
                           str(out), "--budget", "60"], capture_output=True, text=True,
                          env=env, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "no GPU was found" in proc.stdout
    text = out.read_text()
    assert text.startswith("# GPU check\n") and "No GPU was found:" in text
    assert "## gpu tests" not in text  # nothing was run
    assert len(text.splitlines()) < 10


def test_only_files_with_gpu_tests_are_collected():
    """On the GPU machine a file that imports a package it lacks must not stop the others:
    the check collects only files holding a gpu-marked test or the ``xp`` fixture."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    files = gpu_check.gpu_test_files()
    assert "tests/kernels/solve/test_fused.py" in files            # takes xp
    assert "tests/kernels/train/parallel/test_comm.py" in files    # the gpu marker
    assert "tests/gpu_readiness/test_gpu_check.py" not in files
    assert "tests/kernels/train/test_tables.py" not in files
    for f in files:
        assert gpu_check.GPU_TEST.search((ROOT / f).read_text())


def test_parts_not_asked_for_are_written_as_not_run(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(gpu_check, "find_gpu", lambda: ("Fake GPU (x1)", ""))
    monkeypatch.setattr(gpu_check, "environment", lambda: ["| python | 3 |"])
    monkeypatch.setattr(gpu_check, "run_solve_rows", lambda budget: ["| solve row |"])
    out = tmp_path / "gpu.md"
    assert gpu_check.main(["--parts", "solve", "--out", str(out), "--budget", "60"]) == 0
    text = out.read_text()
    assert "| solve row |" in text
    assert text.count("not run (--parts solve)") == 4   # tests, flow, train, ocr
