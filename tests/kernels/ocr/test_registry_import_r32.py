"""A registered OCR model set (``train ocr-rec --register NAME``: ``~/.skiff/ocr-models.json``)
is read when ``skiff.kernels.ocr`` is imported: that import failed with NameError
(``carries_alphabet`` not yet defined) on every later start once any set was registered,
`%ocr` and `python -m skiff ocr` included (round 32). A damaged entry leaves out that set,
not the import."""

import json
import os
import subprocess
import sys

from skiff.kernels.ocr.models import MODEL_SETS

CHECK = ("import skiff.kernels.ocr.models as m; s = m.available_model_sets(); "
         "print(','.join(s))")


def _run(tmp_path, registry):
    path = tmp_path / "ocr-models.json"
    path.write_text(json.dumps(registry))
    env = {**os.environ, "SKIFF_OCR_MODELS": str(path)}
    return subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_registered_set_imports_and_is_listed(tmp_path):
    rec = MODEL_SETS["ch"].path("rec")  # the shipped recognizer stands in for a fine-tune's
    done = _run(tmp_path, {"meters": {"base": "ch", "rec": str(rec), "dict": None}})
    assert done.returncode == 0, done.stderr
    assert "meters" in done.stdout.strip().split(",")


def test_a_damaged_entry_leaves_only_itself_out(tmp_path):
    rec = MODEL_SETS["ch"].path("rec")
    # a registry edited by hand: the path written as a number
    done = _run(tmp_path, {"broken": {"base": "ch", "rec": 123},
                           "good": {"base": "ch", "rec": str(rec)}})
    assert done.returncode == 0, done.stderr
    names = done.stdout.strip().split(",")
    assert "good" in names and "broken" not in names
