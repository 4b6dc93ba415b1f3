"""Round 39: a ``%%train`` cell that never binds ``model`` or ``dataset`` is refused in one
line before any run folder (it started a job that failed at once and left its folder), in a
notebook and for the terminal's config alike; cells that bind them in any Python way
(tuples, imports, defs, loops) or may bind them unseen (``exec``, ``import *``) still run.
Oracle: Python's own binding rules, checked by running each accepted cell."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.kinds.train import COMMAND as TRAIN
from skiff.kinds.train import to_config as train_config


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_a_cell_without_model_or_dataset_is_refused_before_a_folder(shell, runs_dir):
    with pytest.raises(UsageError) as err:
        shell.run_cell_magic("train", "--steps 3", "import numpy as np\nX = np.ones((4, 2))\n")
    message = str(err.value)
    assert "must define model and dataset; missing: model, dataset" in message
    assert "\n" not in message
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
    with pytest.raises(ValueError, match="missing: dataset$|missing: dataset "):
        train_config({**TRAIN.defaults(), "model": None,
                      "source": "model = 1\ndata = 2\n"})


@pytest.mark.parametrize("source", [
    "model, dataset = 1, 2",
    "import numpy as model\nfrom os import path as dataset",
    "def model(x):\n    return x\nfor dataset in [1]:\n    pass",
    "if (model := 1):\n    [dataset] = [2]",
    "from math import *\nmodel = 1",          # may bind dataset unseen
    "exec('dataset = 2')\nmodel = 1",
])
def test_cells_that_bind_them_still_make_their_job(source):
    ns: dict = {}
    exec(compile(source, "<cell>", "exec"), ns)   # Python binds both (the oracle)
    assert "model" in ns and ("dataset" in ns or "import *" in source)
    config = train_config({**TRAIN.defaults(), "model": None, "source": source + "\n"})
    assert config["source"].startswith(source.split("\n")[0])
