"""Waiting in tests for something a job or process does, with a bound and a clear failure."""

import time


def wait_for(predicate, timeout, what):
    """Poll ``predicate`` every 50 ms until it is true; fail naming ``what`` after ``timeout``
    seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
