"""Jobs: launch, follow, cancel and reattach to work that lives in a run folder."""

from .events import EventReader, EventWriter, read_events
from .job import Job, JobFailed, live_jobs
from .launch import launch
from .reporter import JobCancelled, NullReporter, Reporter, RunReporter
from .state import JobState
from .store import RunFolderError, list_run_dirs, runs_root

__all__ = [
    "EventReader",
    "EventWriter",
    "Job",
    "JobCancelled",
    "JobFailed",
    "JobState",
    "NullReporter",
    "Reporter",
    "RunFolderError",
    "RunReporter",
    "launch",
    "list_jobs",
    "list_run_dirs",
    "live_jobs",
    "read_events",
    "runs_root",
]


def list_jobs(root=None) -> list[Job]:
    """Every job with a run folder under the runs root, oldest first (reattached)."""
    return [Job.load(d) for d in list_run_dirs(root)]
