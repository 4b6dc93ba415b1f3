"""Round 34: a test that leaves SIGPIPE at its default action (death) does not leave the
next test's process to die silently on a write into a closed pipe (CI: an xdist worker died
with no word at ``tail -n 0``, which exits without reading its input, and the run hung).
``tests/conftest.py`` ignores SIGPIPE again after each test. The oracle: a real write into a
pipe whose reader is gone raises BrokenPipeError (Python's own behaviour) in the next test."""

from __future__ import annotations

import os
import signal
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def test_a_test_resets_sigpipe():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # as some library did in the suite


def test_the_next_test_survives_a_closed_pipe():
    from tests.conftest import _sigpipe_ignored

    assert _sigpipe_ignored()
    r, w = os.pipe()
    os.close(r)
    try:
        with pytest.raises(BrokenPipeError):
            os.write(w, b"x")
    finally:
        os.close(w)
