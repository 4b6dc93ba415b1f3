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
