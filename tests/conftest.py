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


def pytest_collection_modifyitems(config, items):
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
