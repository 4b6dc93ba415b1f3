"""The import lines a torch user types, and a hand-written training loop on numpy arrays."""

import subprocess
import sys

import numpy as np


def test_short_import_paths_give_the_real_classes():
    code = (
        "import skiff.nn as nn, skiff.nn.functional as F\n"
        "from skiff.nn import Linear\n"
        "from skiff.optim import AdamW\n"
        "from skiff.data import ArrayDataset\n"
        "from skiff.models import GPT\n"
        "from skiff.kernels.train.core import nn as real_nn, optim\n"
        "from skiff.kernels.train import data, models\n"
        "assert Linear is real_nn.Linear and nn.Module is real_nn.Module\n"
        "assert F.cross_entropy is real_nn.functional.cross_entropy\n"
        "assert AdamW is optim.AdamW and ArrayDataset is data.ArrayDataset\n"
        "assert GPT is models.GPT\n"
        "import skiff\n"
        "assert skiff.nn is nn and skiff.nn.functional is F\n"
        "try:\n"
        "    import skiff.nn.nosuch\n"
        "except ImportError as exc:\n"
        "    assert 'skiff.nn.nosuch' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no ImportError')\n"
        "try:\n"
        "    skiff.nosuch\n"
        "except AttributeError as exc:\n"
        "    assert 'nosuch' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
        "print('fine')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "fine" in out.stdout, out.stderr[-2000:]


def test_a_hand_written_loop_on_float64_numpy_arrays():
    import skiff.nn as nn
    import skiff.nn.functional as F
    from skiff.optim import AdamW

    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 5))  # float64, as numpy makes them
    y = x @ rng.standard_normal((5, 1))
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = AdamW(model.parameters(), lr=1e-2)
    first = None
    for _ in range(150):
        loss = F.mse_loss(model(x), y)
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert all(p.dtype == np.float32 and p.grad.dtype == np.float32
               for p in model.parameters())
    assert loss.item() < 0.02 * first


def test_skiff_seed_makes_the_same_initial_weights():
    import skiff

    skiff.seed(7)
    a = skiff.nn.Linear(4, 3).weight.numpy()
    skiff.seed(7)
    b = skiff.nn.Linear(4, 3).weight.numpy()
    c = skiff.nn.Linear(4, 3).weight.numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_re_export_modules_hold_every_public_name():
    import skiff.data
    import skiff.models
    import skiff.nn
    import skiff.nn.functional
    import skiff.optim

    for mod in (skiff.nn, skiff.nn.functional, skiff.optim, skiff.data, skiff.models):
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert mod.__all__ and missing == [], (mod.__name__, missing)
