"""The detached processes of :mod:`skiff.jobs.holders`, each in a session of its own:

- ``python -m skiff.jobs.reaper hold RUN_DIR``: holds a running job whose launcher exited
  normally, until the job ends (its final status, or its mpiexec gone);
- ``python -m skiff.jobs.reaper cancel RUN_DIR GRACE``: owns a cancel's escalation (SIGTERM,
  then SIGKILL of the process group after the grace period) for ``skiff jobs cancel ID``
  from a terminal, whose CLI exits at once.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .holders import add_holder, remove_holder
from .store import pid_alive, read_json

__all__ = ["main"]


def _hold(run_dir: Path, poll: float = 0.5, limit_s: float = 30 * 24 * 3600) -> int:
    """Hold the job until it ends (final status, or its mpiexec gone), at most ``limit_s``."""
    from .job import Job

    add_holder(run_dir)
    try:
        job = Job.load(run_dir)
        launcher = read_json(run_dir / "process.json", {}).get("pid")
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            if job.refresh().final or not pid_alive(launcher):
                return 0
            time.sleep(poll)
        return 0
    finally:
        remove_holder(run_dir)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) >= 2 and argv[0] == "hold":
        return _hold(Path(argv[1]))
    if len(argv) >= 2 and argv[0] == "cancel":
        from .job import Job
        from .signals import escalate_cancel

        grace = float(argv[2]) if len(argv) > 2 else 5.0
        escalate_cancel(Job.load(Path(argv[1])), grace)
        return 0
    print("usage: python -m skiff.jobs.reaper hold RUN_DIR | cancel RUN_DIR [GRACE]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
