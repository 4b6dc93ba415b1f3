"""Browser tests: one JupyterLab server per test session (each module gets it in a fresh
server's state: :meth:`LabServer.reset`), one headless Chromium per test module."""

from __future__ import annotations

import os

import pytest

from .lab import CHROMIUM, LabPage, LabServer, launch_browser, shared


def _skip_reason() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (run: make system-deps, as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module")
def lab(request, tmp_path_factory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    server = shared("lab", request, lambda: LabServer(tmp_path_factory.mktemp("lab")).start())
    yield server
    server.close_kernels()  # idle kernels of this module's notebooks: not for the session


@pytest.fixture(scope="module")
def browser(lab, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = launch_browser(p, tmp_path_factory.mktemp("chromium-profile"))
        context.set_default_timeout(60_000)
        yield context
        context.close()


@pytest.fixture
def lab_page(lab, browser):
    page = browser.new_page()
    yield LabPage(page, lab)
    page.close()
