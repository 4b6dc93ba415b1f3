"""The OCR benchmark's whole-process runs find their modules' compiled byte code, as an
installed package does: where ``PYTHONDONTWRITEBYTECODE`` is set (this project's machines),
each skiff process compiled its ~70 modules from source again (round 41, h2: 0.23 CPU s a
process), a cost RapidOCR's installed package never paid."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_whole_runs_keep_byte_code_in_their_folder(tmp_path, monkeypatch):
    from bench_ocr import whole_env  # noqa: E402 - benchmarks/ on the path

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    plain = whole_env("skiff", 2)
    assert plain["PYTHONDONTWRITEBYTECODE"] == "1" and "PYTHONPYCACHEPREFIX" not in plain
    src = tmp_path / "src"
    src.mkdir()
    (src / "h2_module.py").write_text("VALUE = 41\n")
    for env, kept in ((plain, False), (whole_env("skiff", 2, bytecode=tmp_path / "pyc"), True)):
        assert env["SKIFF_OCR_SPIN"] == "0" and env["OPENBLAS_NUM_THREADS"] == "1"
        env = {**env, "PYTHONPATH": str(src)}
        # -S: no site packages, so only the module itself is compiled (a light process)
        subprocess.run([sys.executable, "-S", "-c", "import h2_module"], cwd=tmp_path,
                       env=env, check=True)
        found = [p.name for p in tmp_path.rglob("h2_module*.pyc")]
        assert bool(found) == kept, found
    assert all((tmp_path / "pyc") in p.parents for p in tmp_path.rglob("*.pyc"))
    assert not (src / "__pycache__").exists()  # the sources' own folder is left as it was
    assert os.environ.get("PYTHONDONTWRITEBYTECODE") == "1"  # the caller's env unchanged
