"""Round 31 (h14): users' findings in the train front.

3. ``%%train mlp`` said "got MODEL/DATA 'mlp' None on the line": it now says what to write
   instead, and the line it names is one the kind itself takes (the oracle: the same dry run
   with that line, no cell).
"""

from __future__ import annotations

import pytest

from skiff.jobs.launch import dry_run

CELL = "import numpy as np\nmodel = None\ndataset = None\n"


@pytest.mark.parametrize("line, use", [("mlp", "%train mlp DATA"),
                                       ("mlp blobs", "%train mlp blobs")])
def test_a_model_on_a_train_cell_line_says_what_to_write(runs_dir, line, use):
    with pytest.raises(ValueError) as err:
        dry_run("train", line, cell=CELL, front="magic")
    text = str(err.value)
    assert "None" not in text and use in text and "%%train cell that sets model" in text
    if "DATA" not in use:  # the line it names is taken as it stands
        assert dry_run("train", use.removeprefix("%train "), front="magic")["kind"] == "train"
