"""Grammar of ``%jobs`` / ``python -m skiff jobs`` and ``%devices``."""

from __future__ import annotations

from .common import command, json_option, notebook_only

JOB_ACTIONS = ("list", "show", "wait", "cancel", "attach", "trust")


@command("jobs", help="List, show, wait for, cancel or reattach to jobs in the run folders; "
                      "trust ID signs a run folder's code with your key (after reading it).")
@json_option
def JOBS(p):
    p.add_argument("action", nargs="?", default="list", choices=JOB_ACTIONS)
    p.add_argument("job_id", nargs="?", default=None, metavar="ID")
    p.add_argument("--all", action="store_true", help="list every job, not only the last 20")
    p.add_argument("--timeout", type=float, default=None, help="seconds to wait at most")
    notebook_only(p.add_argument("-o", "--output", metavar="NAME", default=None,
                                 help="store the job in the notebook variable NAME"))


@command("devices", help="List the CPU and every GPU with their memory.")
@json_option
def DEVICES(p):
    pass
