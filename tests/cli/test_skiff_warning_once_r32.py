"""A warning skiff raises as a plain ``UserWarning`` (a nose profile whose points were put in
order) is printed in a terminal as skiff's own, one line, once: `solve train-nose --profile
shuffled.csv` printed Python's two lines (file path and source line) twice, once from the
check before the launch and once from the job (round 32)."""

import numpy as np

from skiff.cli import main


def _shuffled_nose(path):
    t = np.linspace(-np.pi / 2, np.pi / 2, 61)
    mm = np.column_stack([11400 * (1 - np.cos(t)), 1900 * (1 + np.sin(t))])
    mm = mm[np.random.default_rng(7).permutation(len(mm))]
    path.write_text("x [mm],y [mm]\n" + "".join(f"{a:.1f},{b:.1f}\n" for a, b in mm))
    return path


def test_profile_order_warning_is_one_line_once(tmp_path, capsys, runs_dir):
    csv = _shuffled_nose(tmp_path / "nose cad.csv")
    code = main(["solve", "train-nose", "--profile", str(csv), "--clearance", "0.15",
                 "--re", "100", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.count("not in order along the outline") == 1, err
    assert "UserWarning" not in err and "skiff: warning:" in err


def test_others_warnings_stay_as_python_shows_them(capsys):
    from skiff.cli import _skiff_warning

    seen = []
    _skiff_warning("numpy said so", RuntimeWarning, "/elsewhere/numpy/core.py", 3,
                   shown=lambda *a: seen.append(a))
    assert seen and seen[0][0] == "numpy said so"  # handed to Python's own display
    assert "skiff: warning" not in capsys.readouterr().err
