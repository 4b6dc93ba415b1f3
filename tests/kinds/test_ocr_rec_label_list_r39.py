"""Round 39: ``train ocr-rec --data a.txt,b.txt`` (PaddleOCR's ``label_file_list``) reaches the
fine-tune as both files (the kernel reads them as one set since h9's round 39 change,
tests/kernels/ocr_train/test_user_rows_r39h9.py); the front refused the joined string as
one missing path. A part that does not exist is named alone."""

import json
import subprocess
import sys


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "skiff", "train", "ocr-rec", *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def test_two_label_files_reach_the_job_as_absolute_paths(tmp_path):
    (tmp_path / "a.txt").write_text("a.png\tAB\n")
    (tmp_path / "b.txt").write_text("b.png\tCD\n")
    out = _cli("--data", "a.txt,b.txt", "--steps", "1", "--dry-run", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    labels = json.loads(out.stdout)["config"]["labels"]
    assert labels.split(",") == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    (tmp_path / "b.txt").unlink()
    out = _cli("--data", "a.txt,b.txt", "--steps", "1", "--dry-run", cwd=tmp_path)
    assert out.returncode == 2 and "no such file or folder" in out.stderr
