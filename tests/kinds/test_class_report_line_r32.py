"""Round 32: the summary's per-class line says a class with no held-out row has none.

An image folder of 57 images (bird 5, cat 40, dog 12) under ``--val-split 0.2`` held out
no bird; the summary said "recall bird: 0.000 of 0", as if every held-out bird had been
missed (scikit-learn calls that recall ill-defined, and leaves the class out of the macro
F1). The oracle: the counts by hand from the confusion matrix (true rows, predicted
columns): cat 8 held out, all predicted dog; dog 3, all dog; macro F1 over the classes that
occur (cat, dog) = (0 + 2*(3/11)*1/((3/11)+1)) / 2 = 0.2143.
"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.class_metrics import class_report
from skiff.kinds.train import class_report_line


def test_a_class_with_no_held_out_row_is_said_so():
    matrix = np.array([[0, 0, 0],   # bird: none held out, none predicted
                       [0, 0, 8],   # cat: all 8 taken for dogs
                       [0, 0, 3]])  # dog: 3 of 3
    report = class_report(matrix, ["bird", "cat", "dog"])
    dog_p = 3 / 11
    assert report["f1"] == pytest.approx((0 + 2 * dog_p / (dog_p + 1)) / 2, rel=1e-9)
    line = class_report_line(report)
    assert "0.000 of 0" not in line
    assert "cat: 0.000 of 8, dog: 1.000 of 3" in line
    assert "no held-out rows of bird" in line


def test_the_lowest_recalls_shown_are_of_classes_held_out():
    names = [f"c{i}" for i in range(10)]
    matrix = np.eye(10, dtype=np.int64) * 4
    matrix[0, 0] = 0          # c0: none held out
    matrix[1] = [0, 1, 3, 0, 0, 0, 0, 0, 0, 0]  # c1: recall 1/4
    line = class_report_line(class_report(matrix, names))
    shown = line.split("classes) ")[1].split("; no held-out")[0]
    assert shown.startswith("c1: 0.250 of 4")
    assert "c0:" not in shown and line.endswith("(a larger --val-split, or more rows of them)")
    assert "no held-out rows of c0" in line
