"""Shared test set-up: markers, a private runs folder per test, GPU gating."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


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
