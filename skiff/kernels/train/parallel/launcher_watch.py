"""Notice that the process which started this rank is gone, and ask the run to stop.

A rank of a local job is a child of MPICH's ``hydra_pmi_proxy``. That proxy ignores SIGTERM
and SIGINT (its handler acts on SIGPIPE and SIGTSTP only), and a proxy killed outright
(SIGKILL, the out-of-memory killer) leaves its ranks to init: they trained on to the last
step, nobody to stop them, while the job was said failed (round 32, h11: a tiny ERNIE LoRA
fine-tune ran 24 s on after its proxy was SIGKILLed at step 58 of 300). A rank can see it:
its parent pid changes (to init, or to a subreaper). :func:`watch_parent` polls
``os.getppid()`` in a daemon thread and calls ``on_gone(old_parent)`` once when it differs
from the one at the start; the caller asks its run to stop at the next step boundary, so the
run writes its checkpoint as on a cancel and ``resume`` goes on from there.
"""

from __future__ import annotations

import os
import threading

__all__ = ["watch_parent"]


def watch_parent(on_gone, *, period: float = 0.25, parent: int | None = None
                 ) -> threading.Event:
    """Call ``on_gone(parent_pid)`` once (from a daemon thread) when this process's parent
    has changed from ``parent`` (default: the one now; give the one seen at the process's
    start, so that a launcher killed before the watch begins is seen too); the Event
    returned ends the watch when set."""
    parent = os.getppid() if parent is None else int(parent)
    done = threading.Event()

    def watch():
        while not done.wait(period):
            if os.getppid() != parent:
                done.set()
                on_gone(parent)
                return

    threading.Thread(target=watch, daemon=True, name="skiff-launcher-watch").start()
    return done
