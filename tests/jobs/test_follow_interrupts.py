"""Ctrl-C while following a job (the CLI, `--wait`): the interrupt is recorded and the loop
cancels, so SIGINT delivered twice back to back (``timeout -s INT`` signals the process and
then its group) cancels once wherever it lands. With Python's own KeyboardInterrupt a second
signal could land between catching the first and asking for the cancel: the job was never
cancelled and its thread kept the process running (seen in CI under load)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from skiff.jobs.follow import follow


class FakeJob:
    """Stops once cancelled; its first wait delivers SIGINT ``signals`` times at once."""

    def __init__(self, signals: int, gap: float = 0.0):
        self.signals, self.gap = signals, gap
        self.cancels, self.waits = 0, 0

    @property
    def done(self) -> bool:
        return self.cancels > 0

    def cancel(self, grace: float = 5.0) -> None:
        self.cancels += 1

    def wait(self, timeout=None):
        self.waits += 1
        if self.waits == 1:
            for _ in range(self.signals):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(self.gap)
        if self.waits > 200:
            raise AssertionError("follow kept waiting")
        if timeout is not None and not self.done:
            time.sleep(min(timeout, 0.01))
            raise TimeoutError


@pytest.mark.parametrize("signals,gap", [(1, 0.0), (2, 0.0), (3, 0.0), (2, 0.05)])
def test_interrupts_close_together_cancel_once(signals, gap):
    job = FakeJob(signals, gap)
    called = []
    before = signal.getsignal(signal.SIGINT)
    assert follow(job, on_interrupt=lambda: called.append(1)) is job
    assert job.cancels == 1 and called == [1]
    assert signal.getsignal(signal.SIGINT) is before   # the handler is put back


def test_the_same_interrupt_landing_while_the_first_is_handled_still_cancels():
    """The race CI met: the second SIGINT arrives while the first is being handled, before
    the cancel is asked (here: inside on_interrupt)."""
    job = FakeJob(1)
    follow(job, on_interrupt=lambda: os.kill(os.getpid(), signal.SIGINT))
    assert job.cancels == 1


def test_a_later_ctrl_c_stops_the_waiting():
    class Slow(FakeJob):
        @property
        def done(self):
            return False  # never stops: the second Ctrl-C must get the user out

        def wait(self, timeout=None):
            self.waits += 1
            if self.waits in (1, 5):   # the second well after `same_s`
                os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            raise TimeoutError

    job = Slow(0)
    with pytest.raises(KeyboardInterrupt):
        follow(job, same_s=0.1)
    assert job.cancels == 1
