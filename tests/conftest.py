"""Shared test set-up: markers, a private runs folder per test, GPU gating."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.hookimpl(trylast=True)  # after pytest's own faulthandler set-up: this one's file
def pytest_configure(config):
    """Say why an xdist worker ended when something in it ended it: a crash, a SIGTERM to its pid
    (every thread's stack, then the default action) or ``os._exit`` called in it (the
    caller's stack). CI twice saw a worker die with no word ("node down: Not properly
    terminated") and the run then hang (pytest-xdist's loadfile restart). A worker's stderr
    is captured during a test, so each writes to a file the controller prints when the
    worker goes down (:func:`pytest_testnodedown`); a SIGKILL (the OOM killer) leaves it
    empty, which tells that apart."""
    name = os.environ.get("PYTEST_XDIST_WORKER")
    if not name and getattr(config.option, "dist", None) in ("loadfile", "loadscope") \
            and _file_costs():
        # the workers hand over their files costliest first (pytest_collection_modifyitems):
        # xdist must keep that order, not put the files of most tests first (its default)
        config.option.loadscopereorder = False
    if not name:
        if getattr(config.option, "numprocesses", None):
            import tempfile

            os.environ["SKIFF_TEST_WORKER_NOTES"] = tempfile.mkdtemp(prefix="skiff-workers-")
        return
    folder = os.environ.get("SKIFF_TEST_WORKER_NOTES")
    if not folder or not os.path.isdir(folder):
        return
    import faulthandler
    import signal
    import traceback

    note = open(os.path.join(folder, f"{name}-{os.getpid()}.txt"), "w")  # noqa: SIM115
    _WORKER_NOTE.append(note)
    try:  # a crash (SIGSEGV, SIGABRT...) and a SIGTERM: every thread's stack
        faulthandler.enable(file=note, all_threads=True)
        faulthandler.register(signal.SIGTERM, file=note, all_threads=True, chain=True)
    except (ValueError, OSError, RuntimeError, AttributeError):
        pass
    real, me = os._exit, os.getpid()

    def _exit(code):
        if os.getpid() == me:  # not a forked child's own exit
            try:
                note.write(f"os._exit({code}) called from\n")
                traceback.print_stack(file=note)
                note.flush()
            except (OSError, ValueError):
                pass
        real(code)

    os._exit = _exit


_WORKER_NOTE: list = []


def _sigpipe_ignored() -> bool:
    """Whether this process ignores SIGPIPE (the kernel's view: a C library's ``sigaction``
    too, which ``signal.getsignal`` does not see)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> 12 & 1)
    except (OSError, ValueError, IndexError):
        pass
    return True


def pytest_runtest_logfinish(nodeid, location):
    """SIGPIPE ignored again after a test that gave it its default action (death): Python
    ignores it, but something in the suite reset it in the xdist workers, and a write to a
    pipe whose reader had gone (``tail -n 0`` reads nothing and exits) then ended the worker
    with no word (CI, rounds 33-34: "node down", then the run hung). Noted in the worker's
    note with the test after which it was found. (xdist worker) Also note the test after
    which MPI first lives in this worker: an in-process ``mpi4py.MPI`` gives the worker MPI's
    thread, signal handlers and shutdown."""
    import signal
    import sys

    if hasattr(signal, "SIGPIPE") and sys.platform.startswith("linux") and \
            not _sigpipe_ignored():
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        if _WORKER_NOTE:
            try:
                _WORKER_NOTE[0].write(f"SIGPIPE's default action was set by {nodeid} (or a "
                                      "thread it left): ignored again\n")
                _WORKER_NOTE[0].flush()
            except (OSError, ValueError):
                pass

    if _WORKER_NOTE and len(_WORKER_NOTE) == 1 and "mpi4py.MPI" in sys.modules:
        _WORKER_NOTE.append(nodeid)
        try:
            _WORKER_NOTE[0].write(f"mpi4py.MPI imported in this worker by {nodeid}\n")
            _WORKER_NOTE[0].flush()
        except (OSError, ValueError):
            pass


def pytest_unconfigure(config):
    folder = os.environ.get("SKIFF_TEST_WORKER_NOTES")
    if folder and not os.environ.get("PYTEST_XDIST_WORKER"):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def pytest_testnodedown(node, error):
    """(xdist controller) A worker that went down unexpectedly: print what it noted."""
    folder = os.environ.get("SKIFF_TEST_WORKER_NOTES")
    if not error or not folder or not os.path.isdir(folder):
        return
    import sys

    name = node.gateway.id
    for entry in sorted(os.listdir(folder)):
        if entry.startswith(f"{name}-"):
            with open(os.path.join(folder, entry), errors="replace") as fh:
                text = fh.read()[-20000:]
            sys.stderr.write(f"\n[{name}] {error}; its last words ({entry}): "
                             f"{text or '(none: killed by SIGKILL, the OOM killer?)'}\n")


# a test file not in tests/file_costs.txt (a new one) counts this many seconds a test
DEFAULT_SECONDS_PER_TEST = 0.2
_COSTS: list = []


def _file_costs() -> dict:
    """{test file relative to the repository: seconds} from ``tests/file_costs.txt``, read
    by ``tools/test_costs.py``'s reader (which writes it from a full run's junit xml); {}
    without it."""
    if not _COSTS:
        import importlib.util

        tool = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "tools", "test_costs.py")
        try:
            spec = importlib.util.spec_from_file_location("skiff_tools_test_costs", tool)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            table = module.read_table()
        except (OSError, ImportError):
            table = {}
        _COSTS.append(table)
    return _COSTS[0]


def _costliest_files_first(config, items) -> None:
    """(xdist worker) The items reordered file by file, the costliest file first, each
    file's tests in their own order. Under ``--dist loadfile`` a file is one unit of work
    and xdist hands the units out in this order (the controller keeps it, see
    :func:`pytest_configure`), so the long files (notebooks, browser, MPI launches) start
    early and the run ends on short ones, the two workers together: xdist's own order (most
    tests first) left the long one- and two-test files to the end, where one worker ran the
    last of them alone (round 43, h4: ``tools/test_costs.py --simulate``)."""
    costs = _file_costs()
    if not costs or not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    root = str(config.rootpath)
    paths = [os.path.relpath(str(item.path), root).replace(os.sep, "/") for item in items]
    first: dict = {}
    count: dict = {}
    for i, path in enumerate(paths):
        first.setdefault(path, i)
        count[path] = count.get(path, 0) + 1
    cost = {p: costs.get(p, DEFAULT_SECONDS_PER_TEST * n) for p, n in count.items()}
    order = sorted(range(len(items)), key=lambda i: (-cost[paths[i]], first[paths[i]], i))
    items[:] = [items[i] for i in order]


def pytest_collection_modifyitems(config, items):
    _costliest_files_first(config, items)
    from skiff.kernels.backend import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no GPU (cupy sees none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def runs_dir(tmp_path, monkeypatch):
    """Every test writes its run folders under its own temporary folder."""
    path = tmp_path / "skiff-runs"
    monkeypatch.setenv("SKIFF_RUNS", str(path))
    # the key that signs run folders' code (skiff.jobs.trust): per test, never the user's
    monkeypatch.setenv("SKIFF_SECRET_FILE", str(tmp_path / "skiff-secret"))
    # the calibrations 2-rank jobs keep (round 47 h8): per test, never the user's cache, so
    # a test's first job on ranks runs its micro-run whatever ran before
    monkeypatch.setenv("SKIFF_CALIBRATION_CACHE", str(tmp_path / "skiff-calibration"))
    return path


@pytest.fixture(autouse=True)
def work_threads_restored():
    """A test that sets the elementwise thread count (``skiff.set_num_threads``) leaves the
    next test in the same process the environment's."""
    from skiff.kernels.backend import split

    before = split._override
    yield
    split._override = before


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def xp(request):
    """The array module for each backend (the GPU case skips without a GPU)."""
    if request.param == "cpu":
        import numpy

        return numpy
    from skiff.kernels.backend import cupy

    return cupy()


# names IPython itself keeps in a shell's namespace (outputs ``_``/``_3``, inputs ``_i3``, the
# module's dunders): never a test's
_IPYTHON_OWN = __import__("re").compile(r"_+|__\w+__|_i{1,3}|_i?\d+")


class ProcessState:
    """What one test module may change in this process and the next module must not see:
    the names in the shared IPython shell's namespace (``InteractiveShell.instance()``, the
    one every magic test uses), the global random generators (Python's, numpy's legacy one,
    torch's and skiff's process-wide one), the default float dtype of torch and skiff and
    skiff's default device, ``sys.path``, the working folder, the ``SKIFF_*`` variables of
    ``os.environ``, skiff's registries of kinds and built-in models and data sets.
    :meth:`take` notes them, :meth:`restore` puts them back as they were. Only the modules
    already imported are looked at: nothing is imported here."""

    def __init__(self) -> None:
        self.shell = None
        self.names: dict = {}
        self.kept: dict = {}

    @classmethod
    def take(cls) -> ProcessState:
        import sys

        state = cls()
        shell = _shared_shell()
        if shell is not None:
            state.shell = shell
            state.names = {k: v for k, v in shell.user_ns.items() if _a_users_name(shell, k)}
        kept = state.kept
        kept["sys.path"] = list(sys.path)
        kept["cwd"] = os.getcwd()
        kept["env"] = {k: v for k, v in os.environ.items() if k.startswith("SKIFF_")}
        import random

        kept["random"] = random.getstate()
        modules = sys.modules
        if "numpy" in modules:
            kept["numpy"] = modules["numpy"].random.get_state()
        torch = modules.get("torch")
        if torch is not None and hasattr(torch, "get_rng_state"):
            kept["torch"] = (torch.get_rng_state(), torch.get_default_dtype())
        rng = modules.get("skiff.kernels.train.core.random")
        if rng is not None:
            kept["skiff.random"] = (rng._rng, rng._rng.bit_generator.state, rng._initial[0])
        dtype = modules.get("skiff.kernels.train.core.default_dtype")
        if dtype is not None:
            kept["skiff.dtype"] = dtype.FLOAT
        meta = modules.get("skiff.kernels.train.core.meta_r41")
        if meta is not None:
            kept["skiff.device"] = meta._DEPTH.default
        for name, attrs in _REGISTRIES:
            module = modules.get(name)
            if module is not None:
                for attr in attrs:
                    kept[f"{name}.{attr}"] = dict(getattr(module, attr))
        return state

    def restore(self) -> list[str]:
        """Put back what :meth:`take` noted; returns what had changed (``user_ns['bad']``,
        ``sys.path``, ...). A random generator is set back without a word: seeding one is
        what a test does, leaving it seeded is this guard's to undo."""
        import sys

        changed = []
        shell = _shared_shell()
        if shell is not None:
            ns = shell.user_ns
            before = self.names if shell is self.shell else {}
            for name in [k for k in ns if _a_users_name(shell, k) and k not in before]:
                del ns[name]
                changed.append(f"user_ns[{name!r}]")
            for name, value in before.items():
                if ns.get(name, ns) is not value:
                    ns[name] = value
                    changed.append(f"user_ns[{name!r}]")
        kept = self.kept
        if sys.path != kept["sys.path"]:
            sys.path[:] = kept["sys.path"]
            changed.append("sys.path")
        if os.getcwd() != kept["cwd"]:
            os.chdir(kept["cwd"])
            changed.append("cwd")
        env = {k: v for k, v in os.environ.items() if k.startswith("SKIFF_")}
        for name in set(env) | set(kept["env"]):
            if env.get(name) != kept["env"].get(name):
                if name in kept["env"]:
                    os.environ[name] = kept["env"][name]
                else:
                    del os.environ[name]
                changed.append(f"os.environ[{name!r}]")
        import random

        random.setstate(kept["random"])
        modules = sys.modules
        if "numpy" in kept:
            modules["numpy"].random.set_state(kept["numpy"])
        if "torch" in kept:
            torch = modules["torch"]
            torch.set_rng_state(kept["torch"][0])
            if torch.get_default_dtype() != kept["torch"][1]:
                torch.set_default_dtype(kept["torch"][1])
                changed.append("torch's default dtype")
        if "skiff.random" in kept:
            rng = modules["skiff.kernels.train.core.random"]
            rng._rng, state, rng._initial[0] = kept["skiff.random"]
            rng._rng.bit_generator.state = state
        if "skiff.dtype" in kept:
            dtype = modules["skiff.kernels.train.core.default_dtype"]
            if dtype.FLOAT != kept["skiff.dtype"]:
                dtype.FLOAT = kept["skiff.dtype"]
                changed.append("skiff's default dtype")
        if "skiff.device" in kept:
            meta = modules["skiff.kernels.train.core.meta_r41"]
            if meta._DEPTH.default != kept["skiff.device"]:
                meta._DEPTH.default = kept["skiff.device"]
                changed.append("skiff's default device")
        for name, attrs in _REGISTRIES:
            for attr in attrs:
                registry = kept.get(f"{name}.{attr}")
                now = getattr(modules[name], attr) if registry is not None else None
                if registry is not None and now != registry:
                    now.clear()
                    now.update(registry)
                    changed.append(f"{name}.{attr}")
        return changed


# skiff's registries a test may add to (with monkeypatch.setitem, which this guard backs up)
_REGISTRIES = (("skiff.kinds", ("KINDS",)),
               ("skiff.kernels.train.models.registry",
                ("BUILTIN_MODELS", "DEFAULT_DATA", "BUILTIN_DATA")))


def _shared_shell():
    """The process's one ``InteractiveShell.instance()`` if one was made (None otherwise)."""
    import sys

    module = sys.modules.get("IPython.core.interactiveshell")
    if module is None or not module.InteractiveShell.initialized():
        return None
    return module.InteractiveShell.instance()


def _a_users_name(shell, name: str) -> bool:
    return name not in shell.user_ns_hidden and not _IPYTHON_OWN.fullmatch(name)


@pytest.fixture(scope="module", autouse=True)
def module_leaves_no_state():
    """Each test module leaves the process as it found it (:class:`ProcessState`): under
    xdist one process runs many files one after another, in an order that changes with the
    file costs, and a name one file left in the shared shell was read by the next (round 46's
    CI: a job named ``bad`` became the echo kind's word). Module-scoped fixtures (a module's
    ``shell``, the names its tests share on purpose) are set up after this one and torn down
    before it, so they keep working inside their module."""
    state = ProcessState.take()
    yield
    state.restore()
