"""A lab table's "10^9/L" read "10~9/L" as a thumbnail (round 46 h5, `bench_ocr_user46.py
--degrade thumbnail`): the caret of a count's power of ten before a per-volume unit is
written back; tildes anything else writes keep theirs. The truth is what the reports print."""

import numpy as np
import pytest

from skiff.kernels.ocr.marks import footnote_marks, power_carets


@pytest.mark.parametrize("read, truth", [
    ("Leukocytes 11.8 10~9/L 4.0-10.0 H", "Leukocytes 11.8 10^9/L 4.0-10.0 H"),
    ("Erythrocytes 4.6 x10~12/L", "Erythrocytes 4.6 x10^12/L"),
    ("WBC 7.2 10~9/l", "WBC 7.2 10^9/l"),
    ("PLT 245 10~3/µL", "PLT 245 10^3/µL"),
    ("CD4 0.61 10~9/L", "CD4 0.61 10^9/L"),
    # other tildes: approximate amounts, CJK ranges, paths, a power no count uses
    ("~10 L per day", "~10 L per day"),
    ("剂量 10~20/ml", "剂量 10~20/ml"),
    ("每日 10~12 mg", "每日 10~12 mg"),
    ("cd ~/data/10~9/Lab", "cd ~/data/10~9/Lab"),
    ("110~9/L", "110~9/L"),
    ("10~15/L", "10~15/L"),
    ("10^9/L", "10^9/L"),
])
def test_power_carets(read, truth):
    assert power_carets(read) == truth
    # as the pipeline runs it on each line (with a crop holding no raised marks)
    assert footnote_marks(read, np.full((24, 200, 3), 255, np.uint8)) == truth
