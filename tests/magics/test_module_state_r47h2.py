"""Round 47 (h2): a test module leaves the process as it found it (``tests/conftest.py``'s
``module_leaves_no_state``, :class:`tests.conftest.ProcessState`).

Under xdist one process runs many files one after another; round 46's CI went red when one
file left a job named ``bad`` in the shared ``InteractiveShell.instance()`` and the next read
it in place of the word ``bad``. The guard notes the state at a module's start and puts it
back at its end: here a module's end is played by :meth:`ProcessState.restore`. Oracles: the
meaning skiff's train kind gives a word with and without a notebook variable of that name,
and the numbers each generator draws right after the state was taken."""

from __future__ import annotations

import os
import random
import sys
import types

import numpy as np
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from skiff.kernels.train.core import default_dtype
from skiff.kernels.train.core import random as skiff_random
from skiff.kinds import KINDS
from skiff.kinds.train import COMMAND as TRAIN
from skiff.kinds.train import KIND as TRAIN_KIND
from tests.conftest import ProcessState


def _meaning(shell, word: str) -> str:
    """What the train kind makes of MODEL ``word`` in this shell: the model it names, or the
    first words of its refusal."""
    try:
        request = TRAIN_KIND.prepare(vars(TRAIN.parse(f"{word} --steps 1")),
                                     user_ns=shell.user_ns)
    except Exception as exc:  # noqa: BLE001 - the refusal is the meaning
        return str(exc)[:40]
    return request.config["model"]


def test_the_names_a_module_left_in_the_shared_shell_go_at_its_end(monkeypatch):
    shell = InteractiveShell.instance()
    for name in ("gone_r47h2", "mlp_r47h2"):
        monkeypatch.delitem(shell.user_ns, name, raising=False)
    held = object()
    monkeypatch.setitem(shell.user_ns, "held_r47h2", held)  # there before the module
    alone = _meaning(shell, "mlp_r47h2")
    assert "mlp_r47h2" in alone and alone != "mlp"  # no such model
    state = ProcessState.take()
    try:  # the module: a name of its own, one it changed, one it deleted
        shell.user_ns["mlp_r47h2"] = "mlp"  # a variable holding a built-in model's name
        shell.user_ns["gone_r47h2"] = 1
        shell.user_ns["held_r47h2"] = "changed"
        assert _meaning(shell, "mlp_r47h2") == "mlp"  # the word now means the variable
    finally:
        changed = state.restore()
    assert sorted(changed) == ["user_ns['gone_r47h2']", "user_ns['held_r47h2']",
                               "user_ns['mlp_r47h2']"]
    assert "mlp_r47h2" not in shell.user_ns and "gone_r47h2" not in shell.user_ns
    assert shell.user_ns["held_r47h2"] is held
    assert _meaning(shell, "mlp_r47h2") == alone  # the next module reads the word again


def test_a_shell_made_in_the_module_is_emptied_of_its_names_at_its_end(monkeypatch):
    module = sys.modules["IPython.core.interactiveshell"]
    monkeypatch.setattr(module.InteractiveShell, "_instance", None)  # none made yet
    # a shell puts its namespace's module in sys.modules as __main__ (pickle reads it there):
    # the shared shell's comes back after this test
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    state = ProcessState.take()
    config = Config()
    config.HistoryManager.enabled = False  # no history thread left behind
    shell = InteractiveShell.instance(config=config)  # the module's own, made by its fixture
    assert shell is not state.shell
    builtins = shell.user_ns["__builtins__"]
    shell.user_ns["made_r47h2"] = 1
    assert state.restore() == ["user_ns['made_r47h2']"]
    assert "made_r47h2" not in shell.user_ns and shell.user_ns["__builtins__"] is builtins
    shell.run_cell("x_r47h2 = 2")  # IPython's own names stayed: the shell still runs cells
    assert shell.user_ns["x_r47h2"] == 2


def _draws(torch):
    return (random.random(), np.random.random(), torch.draw(),
            skiff_random.get_generator().random())


def test_generators_dtype_path_env_and_registries_come_back(monkeypatch, tmp_path):
    torch = types.SimpleNamespace(rng=np.random.default_rng(5), dtype="float32")
    torch.draw = lambda: torch.rng.random()
    torch.get_rng_state = lambda: torch.rng.bit_generator.state
    torch.set_rng_state = lambda s: setattr(torch.rng.bit_generator, "state", s)
    torch.get_default_dtype = lambda: torch.dtype
    torch.set_default_dtype = lambda d: setattr(torch, "dtype", d)
    monkeypatch.setitem(sys.modules, "torch", torch)  # a stand-in: importing torch costs ~2 s
    monkeypatch.delenv("SKIFF_R47H2", raising=False)
    monkeypatch.setenv("SKIFF_KEPT_R47H2", "before")
    monkeypatch.chdir(tmp_path)
    kept = random.getstate(), np.random.get_state(), skiff_random._rng, \
        skiff_random._rng.bit_generator.state, skiff_random._initial[0]
    path = list(sys.path)
    try:
        state = ProcessState.take()
        first = _draws(torch)
        state.restore()
        # the module: every generator seeded, float64 the default, a folder on the path...
        random.seed(1)
        np.random.seed(1)
        torch.rng = np.random.default_rng(1)
        skiff_random.seed(1)
        torch.set_default_dtype("float64")
        default_dtype.set_default_dtype(np.float64)
        sys.path.insert(0, str(tmp_path / "scripts"))
        os.environ["SKIFF_R47H2"] = "1"
        os.environ["SKIFF_KEPT_R47H2"] = "after"
        os.chdir(tmp_path.parent)
        KINDS["echo_r47h2"] = TRAIN_KIND
        changed = state.restore()
        assert _draws(torch) == first  # each generator draws what it drew after take()
        assert torch.dtype == "float32" and default_dtype.FLOAT == np.float32
        assert sys.path == path and os.getcwd() == str(tmp_path)
        assert "SKIFF_R47H2" not in os.environ and os.environ["SKIFF_KEPT_R47H2"] == "before"
        assert "echo_r47h2" not in KINDS
        assert set(changed) == {"sys.path", "cwd", "os.environ['SKIFF_R47H2']",
                                "os.environ['SKIFF_KEPT_R47H2']", "torch's default dtype",
                                "skiff's default dtype", "skiff.kinds.KINDS"}
    finally:
        random.setstate(kept[0])
        np.random.set_state(kept[1])
        skiff_random._rng, state_, skiff_random._initial[0] = kept[2:]
        skiff_random._rng.bit_generator.state = state_
        default_dtype.FLOAT = np.dtype(np.float32)
        sys.path[:] = path
        KINDS.pop("echo_r47h2", None)
        os.environ.pop("SKIFF_R47H2", None)
