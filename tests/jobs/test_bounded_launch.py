"""Bounded launches (issue 15.1, 15.2): no more ranks than cores unless asked, no job that
outlives both its launcher and every watcher, a terminal's cancel that escalates after the
CLI exits, and a local job's MPI traffic on the loopback interface."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from skiff.jobs import Job, launch
from skiff.jobs.holders import add_holder, live_holders, process_start, remove_holder
from skiff.jobs.launch import _hostfile_slots, check_ranks, rank_slots
from skiff.jobs.process import LOOPBACK_ENV, find_mpiexec, mpiexec_command, rank_env
from skiff.jobs.store import pid_alive
from skiff.kernels.backend.devices import cpu_count
from skiff.kinds.train import COMMAND as TRAIN
from tests.jobs.waiting import wait_for as _wait_for


def _need_mpi():
    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))


# 15.1: ranks beyond the cores -----------------------------------------------------------------
def test_more_ranks_than_cores_are_refused_before_anything_starts(runs_dir, monkeypatch):
    monkeypatch.delenv("SLURM_NTASKS", raising=False)
    monkeypatch.delenv("SLURM_NPROCS", raising=False)
    monkeypatch.delenv("HYDRA_HOST_FILE", raising=False)
    monkeypatch.delenv("PBS_NODEFILE", raising=False)
    too_many = cpu_count() + 1
    with pytest.raises(ValueError) as err:
        launch("demo", {"steps": 1}, np=too_many)
    message = str(err.value)
    assert f"--np {too_many} is more ranks than the {cpu_count()} core" in message
    assert "--oversubscribe" in message and "\n" not in message
    assert not runs_dir.exists() or not any(runs_dir.iterdir())   # no run folder was made
    check_ranks(too_many, "process", oversubscribe=True)          # allowed when asked
    check_ranks(too_many, "slurm")                                # the cluster decides there
    check_ranks(cpu_count(), "process")


def test_the_allocation_or_hostfile_bounds_the_ranks(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_NTASKS", "3")
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    assert rank_slots() == (3, "the 3 tasks of Slurm allocation 77")
    with pytest.raises(ValueError, match="more ranks than the 3 tasks of Slurm allocation 77"):
        check_ranks(4, "process")
    monkeypatch.delenv("SLURM_NTASKS")
    hosts = tmp_path / "hosts"
    hosts.write_text("# cluster\nnode1:4\nnode2 slots=2\nnode3\n")
    assert _hostfile_slots(str(hosts)) == 7
    monkeypatch.setenv("HYDRA_HOST_FILE", str(hosts))
    assert rank_slots()[0] == 7


def test_oversubscribe_is_a_launch_option():
    from skiff.grammar.common import split_launch

    _, opts = split_launch(TRAIN.parse("gpt-mini --np 4 --oversubscribe"))
    assert opts["oversubscribe"] is True and opts["np"] == 4
    _, opts = split_launch(TRAIN.parse("gpt-mini"))
    assert opts["oversubscribe"] is False


# 15.1: holders --------------------------------------------------------------------------------
def test_a_holder_is_one_process_not_a_pid(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        add_holder(tmp_path, sleeper.pid)
        add_holder(tmp_path)
        assert sorted(live_holders(tmp_path)) == sorted([sleeper.pid, os.getpid()])
        # the same pid with another start time (a reused pid) does not hold the job
        (tmp_path / "holders" / str(sleeper.pid)).write_text("1")
        assert live_holders(tmp_path) == [os.getpid()]
        assert process_start(sleeper.pid) not in (None, "1")
    finally:
        sleeper.kill()
        sleeper.wait()
    remove_holder(tmp_path)
    assert live_holders(tmp_path) == []


LAUNCH_AND_STAY = (
    "import sys, time\n"
    "from skiff.jobs import launch\n"
    "job = launch('demo', {'steps': 100000, 'sleep': 0.02}, np=2)\n"
    "print(job.id, flush=True)\n"
    "time.sleep(120)\n")


@pytest.mark.mpi
def test_ranks_stop_when_the_launcher_is_killed_and_nobody_watches(runs_dir):
    """The issue's case: the CLI (or kernel) is killed; mpiexec and the ranks must not carry
    on orphaned."""
    _need_mpi()
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCH_AND_STAY], stdout=subprocess.PIPE,
                                text=True)
    try:
        job = Job(runs_dir / launcher.stdout.readline().strip())
        _wait_for(lambda: job.refresh().done >= 2, 60, "the job to run")
        mpiexec = int(__import__("json").loads((job.run_dir / "process.json").read_text())["pid"])
        ranks = [int((job.run_dir / "ranks" / f"{r}.pid").read_text()) for r in range(2)]
    finally:
        launcher.send_signal(signal.SIGKILL)   # no atexit, no hand-over
        launcher.wait()
    _wait_for(lambda: not any(pid_alive(p) for p in ranks), 20, "the ranks to stop")
    _wait_for(lambda: not pid_alive(mpiexec), 10, "mpiexec to end")
    job.refresh()
    assert job.status == "cancelled"
    assert any("the launcher is gone and no watcher holds the job" in e.get("message", "")
               for e in job.events())


def test_a_reattached_watcher_holds_the_job_while_it_follows_it(runs_dir):
    """A process job followed from another process (``Job.load`` then a view or ``follow``)
    records this process as a holder, and lets go when the job ends; a thread job, or a job
    this process runs itself, is not held."""
    from skiff.jobs.events import EventWriter

    job = Job.create("demo", {"steps": 1, "sleep": 0}, target="skiff.kinds.demo:run",
                     runner="process", np=2)
    EventWriter(job.run_dir / "events.jsonl", rank=-1).write("status", status="running")
    watcher = Job(job.run_dir)            # as Job.load gives it in another kernel
    assert watcher.hold() is True
    assert live_holders(job.run_dir) == [os.getpid()]
    assert watcher.hold() is False        # once is enough
    EventWriter(job.run_dir / "events.jsonl", rank=-1).write("status", status="done")
    _wait_for(lambda: live_holders(job.run_dir) == [], 10, "the holder to let go")
    assert Job(job.run_dir).hold() is False   # a finished job is not held

    thread_job = Job.create("demo", {"steps": 1, "sleep": 0}, target="skiff.kinds.demo:run",
                            runner="thread")
    assert Job(thread_job.run_dir).hold() is False
    own = Job.create("demo", {"steps": 1, "sleep": 0}, target="skiff.kinds.demo:run",
                     runner="process")
    own.runner = object()                 # run by this process: its launcher holds it
    assert own.hold() is False


def test_a_view_of_a_reattached_job_holds_it(runs_dir):
    pytest.importorskip("ipywidgets")
    from skiff.jobs.events import EventWriter
    from skiff.widgets.job_view import JobView

    job = Job.create("demo", {"steps": 1, "sleep": 0}, target="skiff.kinds.demo:run",
                     runner="process", np=2)
    EventWriter(job.run_dir / "events.jsonl", rank=-1).write("status", status="running")
    view = JobView(Job(job.run_dir), start=False)
    try:
        assert live_holders(job.run_dir) == [os.getpid()]
    finally:
        view.job.release()
    assert live_holders(job.run_dir) == []


@pytest.mark.mpi
def test_a_reattached_notebook_keeps_the_job_alive_after_its_launcher_dies(runs_dir):
    """The launcher is killed outright (no hand-over): a kernel that reattached to the job
    with ``Job.load`` and follows it keeps the ranks going; when it lets go, they stop.
    (Round 43: also the test of a bare holder record, ``add_holder``, which ``hold`` writes:
    one launch of two ranks for both, checked on the record itself.)"""
    _need_mpi()
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCH_AND_STAY], stdout=subprocess.PIPE,
                                text=True)
    job = Job(runs_dir / launcher.stdout.readline().strip())
    try:
        _wait_for(lambda: job.refresh().done >= 2, 60, "the job to run")
        watcher = Job.load(job.run_dir)
        assert watcher.hold()
        assert os.getpid() in live_holders(job.run_dir)  # the record the watchdog reads
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        assert live_holders(job.run_dir) == [os.getpid()]  # the launcher's names a dead one
        step = job.refresh().done
        _wait_for(lambda: job.refresh().done >= step + 50, 20, "the job to go on")
        assert not job.refresh().final
    finally:
        watcher.release()
        launcher.kill()
    assert os.getpid() not in live_holders(job.run_dir)  # the record removed
    _wait_for(lambda: job.refresh().final, 20, "the unheld job to stop")
    assert job.status == "cancelled"


@pytest.mark.mpi
def test_cancel_from_a_terminal_escalates_after_the_cli_exits(runs_dir):
    """``skiff jobs cancel ID`` returns at once; a job that does not stop at its next step
    (a 60 s step) is still signalled after the grace period (``--grace 2``: the 5 s default
    was most of this test), by the detached reaper."""
    _need_mpi()
    job = launch("demo", {"steps": 2, "sleep": 60}, np=1, runner="process")
    _wait_for(lambda: job.refresh().done >= 1, 60, "the first step")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-m", "skiff", "jobs", "cancel", job.id,
                          "--grace", "2"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert not job.refresh().final          # the CLI is gone, the job not yet
    job.wait(30)
    assert job.status == "cancelled"
    rank0 = int((job.run_dir / "ranks" / "0.pid").read_text())
    assert not pid_alive(rank0)


# 15.2: loopback -------------------------------------------------------------------------------
def test_a_local_job_is_bound_to_the_loopback_interface(tmp_path):
    _need_mpi()
    mpiexec = find_mpiexec()
    cmd = mpiexec_command(mpiexec, 2, tmp_path)
    if "hydra" in subprocess.run([mpiexec, "-info"], capture_output=True, text=True,
                                   timeout=10).stdout.lower():
        assert cmd[cmd.index("-hosts") + 1] == "localhost"
        assert cmd[cmd.index("-iface") + 1] == "lo"
    env = rank_env(2)
    assert all(env[k] == os.environ.get(k, v) for k, v in LOOPBACK_ENV.items())
    assert env["UCX_NET_DEVICES"] == os.environ.get("UCX_NET_DEVICES", "lo")


def _mpiexec_info() -> str:
    try:
        return subprocess.run([find_mpiexec(), "-info"], capture_output=True, text=True,
                              timeout=10).stdout.lower()
    except (OSError, subprocess.SubprocessError):
        return ""


def _listening(pid: int) -> set[str]:
    """Local addresses (``ip:port``) of the listening TCP sockets process ``pid`` holds."""
    import socket
    import struct

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        parts = line.split()
        if parts[3] == "0A" and parts[9] in inodes:       # 0A: LISTEN
            hexip, hexport = parts[1].split(":")
            ip = socket.inet_ntoa(struct.pack("<I", int(hexip, 16)))
            out.add(f"{ip}:{int(hexport, 16)}")
    return out


def test_the_bind_shim_turns_a_wildcard_bind_into_loopback(tmp_path):
    """The library preloaded into hydra: a socket bound to 0.0.0.0 listens on 127.0.0.1; an
    explicit address is left alone."""
    from skiff.jobs.loopback import bind_shim

    if not Path("/proc/self/maps").exists():
        pytest.skip("LD_PRELOAD shims are Linux-only")
    shim = bind_shim()
    if shim is None:
        pytest.skip("no C compiler to build the shim")
    probe = ("import socket\n"
             "a = socket.socket(); a.bind(('0.0.0.0', 0)); a.listen()\n"
             "b = socket.socket(); b.bind(('127.0.0.2', 0)); b.listen()\n"
             "print(a.getsockname()[0], b.getsockname()[0])\n")
    env = dict(os.environ, LD_PRELOAD=shim)
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["127.0.0.1", "127.0.0.2"]
    plain = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           timeout=30, env={k: v for k, v in os.environ.items()
                                            if k != "LD_PRELOAD"})
    assert plain.stdout.split()[0] == "0.0.0.0"


@pytest.mark.mpi
def test_the_launcher_and_the_ranks_listen_on_loopback_only(runs_dir):
    """Every listening socket of a local job, hydra's control port and its proxies' included,
    is on 127.0.0.1; the ranks do not carry the shim."""
    from skiff.jobs.loopback import bind_shim

    _need_mpi()
    if not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp")
    job = launch("demo", {"steps": 100000, "sleep": 0.02}, np=2)
    try:
        _wait_for(lambda: job.refresh().done >= 3, 60, "the job to run")
        launcher = int(__import__("json").loads((job.run_dir / "process.json").read_text())
                       ["pid"])
        ranks = [int((job.run_dir / "ranks" / f"{r}.pid").read_text()) for r in range(2)]
        shared = _listening(launcher)       # hydra's control port, inherited by the ranks
        own = set()
        for pid in ranks:
            own |= _listening(pid) - shared
        assert all(a.startswith("127.") for a in own), own
        if bind_shim() is not None and "hydra" in find_mpiexec() + _mpiexec_info():
            proxies = [int(p) for p in subprocess.run(
                ["pgrep", "-P", str(launcher)], capture_output=True, text=True).stdout.split()]
            everything = shared.union(*(_listening(p) for p in proxies))
            assert everything and all(a.startswith("127.") for a in everything), everything
            for pid in ranks:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                assert not any(e.startswith(b"LD_PRELOAD=") and b"bind-loopback" in e
                               for e in environ)
    finally:
        job.cancel(grace=3)
        job.wait(30)


def test_a_rank_with_peers_leaves_without_mpi_finalize(monkeypatch):
    """MPI_Finalize is collective: a rank that entered it waited for ever for a peer that had
    left unheld (os._exit), keeping mpiexec alive after a cancel. A rank with peers skips it;
    a one-rank worker that is held finalizes as usual."""
    from skiff.jobs import worker

    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                "PMIX_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SKIFF_HELD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(worker, "ORPHANED", __import__("threading").Event())
    assert worker._skip_finalize() is False
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setenv("PMI_SIZE", "2")
    assert worker._skip_finalize() is True
