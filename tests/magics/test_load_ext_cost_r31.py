"""``%load_ext skiff`` imports no kernel it does not need (round 31).

Registering the kind magics built every kind's grammar for the magics' ``__doc__``: the OCR
kernels (``skiff.kinds.ocr`` imported ``skiff.kernels.ocr.quantize``, whose package loads
the whole pipeline) and the solve kernels with SciPy, ~1.2 s and ~250 modules before any
magic ran. The usage is now made when ``%train?`` reads it. The evidence is ``sys.modules``
of a fresh interpreter; the help read afterwards is the grammar's own usage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("scipy", "scipy.sparse", "skiff.kernels.ocr", "skiff.kernels.ocr.pipeline",
         "skiff.kernels.solve", "skiff.kernels.train.trainer", "ipywidgets", "PIL")


def fresh(code: str) -> dict:
    script = ("import json, sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
              "shell = InteractiveShell.instance()\nbefore = set(sys.modules)\n"
              "shell.run_line_magic('load_ext', 'skiff')\n"
              "loaded = sorted(set(sys.modules) - before)\nout = {'loaded': loaded}\n"
              + code + "\nprint(json.dumps(out))\n")
    import skiff

    root = str(Path(skiff.__file__).resolve().parents[1])
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_load_ext_imports_no_kernel_and_help_is_the_grammar_usage():
    out = fresh("""
from skiff.kinds import KINDS
names = [n for n, k in KINDS.items() if k.command is not None]
out['names'] = names
from skiff.magics.kinds import magic_usage
out['docs_ok'] = {n: shell.find_magic(n).__doc__ == magic_usage(KINDS[n])
                  for n in names}
out['starts'] = {n: shell.find_magic(n).__doc__.startswith('usage: %' + n) for n in names}
""")
    heavy = sorted(set(out["loaded"]) & set(HEAVY))
    assert heavy == [], heavy
    assert {"train", "solve", "ocr", "chat"} <= set(out["names"])
    assert all(out["docs_ok"].values()) and all(out["starts"].values()), out


def test_magics_still_run_after_a_lazy_load(tmp_path):
    out = fresh(f"""
import os
os.environ['SKIFF_RUNS'] = {str(tmp_path / 'runs')!r}
os.chdir({str(tmp_path)!r})
doc = shell.run_line_magic('solve', 'poisson --grid 8x8 --dry-run')
out['dry'] = dict(doc)['options'].get('grid') if hasattr(doc, 'keys') else str(doc)
import contextlib, io
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    shell.run_line_magic('ocr', '--help')
out['help'] = buf.getvalue()
""")
    assert "8" in str(out["dry"]), out["dry"]
    # the --precision choices come from the OCR kernel's own tuple
    from skiff.kernels.ocr.quantize import PRECISIONS

    assert "{" + ",".join(PRECISIONS) + "}" in out["help"], out["help"][:400]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
