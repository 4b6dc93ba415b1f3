"""What a spawned rank's failure does in the parent (:mod:`.spawned`, :mod:`.rank_alarm`):
the exception the parent gets, the notice a failing rank gives to a parent blocked in a bare
``inter.gather``, and the ending of the ranks' process manager, so that Hydra's clean-up does
not kill the parent. Apart from :mod:`.spawned`, which imports :mod:`.rank_alarm`, so that
:mod:`.rank_alarm` can send the notice without a file-level circle."""

from __future__ import annotations

__all__ = ["SpawnedRanksFailed", "ParentNotice", "end_process_manager"]


class SpawnedRanksFailed(RuntimeError):
    """A rank the parent spawned failed while the parent waited for the ranks."""


class ParentNotice:
    """What a failing spawned rank gives to its parent's gather (:mod:`.rank_alarm`):
    unpickling it in the parent ends the ranks' process manager (so that Hydra's clean-up
    does not kill the parent) and raises :class:`SpawnedRanksFailed` out of the gather."""

    def __init__(self, text: str):
        self.text = text

    def __reduce__(self):
        return (_failed_in_parent, (self.text,))


def _failed_in_parent(text: str):
    ended = end_process_manager()
    raise SpawnedRanksFailed(
        f"the spawned ranks stopped: {text} (" + ("their process manager was ended, so that "
                                                  "it does not end this process too: spawn "
                                                  "again after restarting; " if ended else "")
        + "skiff.gather_from_ranks(inter, timeout=...) also bounds a wait on ranks killed "
        "outright)")


def end_process_manager() -> list[int]:
    """End the MPI process manager this process started for its spawned ranks (MPICH's
    ``mpiexec -pmi_args ...``, forked by a singleton's first ``Spawn``) and its proxies, which
    end the ranks they run; the pids ended. Hydra's clean-up after a rank that leaves without
    ``MPI_Finalize`` (the rank alarm's exit) kills every process of the job, the parent
    included (SIGKILL): a notebook's kernel died 3-5 s after a spawned rank failed. Linux
    only (``/proc``); the MPI of this process cannot spawn again afterwards."""
    import os
    import signal

    mine = [pid for pid, argv in _children(os.getpid())
            if argv and os.path.basename(argv[0]).startswith("mpiexec") and "-pmi_args" in argv]
    ended = []
    for pid in mine:  # each stopped, then killed: the manager or a proxy that saw another
        proxies = [child for child, _ in _children(pid)]  # go would clean up, killing the
        ranks = [r for proxy in proxies for r, _ in _children(proxy)]  # parent too
        group = [pid, *proxies, *ranks]
        for p in group:
            _kill(p, signal.SIGSTOP, [])
        for p in group:
            _kill(p, signal.SIGKILL, ended)
    for pid in mine:  # reap our own child, so no zombie stays behind
        try:
            os.waitpid(pid, 0)  # killed: it ends at once
        except (ChildProcessError, OSError):
            pass
    return ended


def _kill(pid: int, sig, ended: list) -> None:
    import os

    try:
        os.kill(pid, sig)
        ended.append(pid)
    except OSError:
        pass


def _children(parent: int) -> list[tuple[int, list[str]]]:
    """(pid, argv) of the live processes whose parent is ``parent`` (Linux /proc; elsewhere
    none)."""
    import os

    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if fields[0] == "Z" or int(fields[1]) != parent:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        except (OSError, IndexError, ValueError):
            continue
        out.append((int(name), argv))
    return out
