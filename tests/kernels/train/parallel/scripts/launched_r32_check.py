"""Round 32: a parent that starts 2 training ranks as their own MPI job
(``parallel.launched.launch_ranks``) instead of ``MPI.COMM_SELF.Spawn``.

usage: launched_r32_check.py parent KIND     (KIND: ok | fail | kill)
       launched_r32_check.py child KIND      (started by the parent)
``fail``: rank 1's dataset raises on row BAD_ROW; ``kill``: rank 1 SIGKILLs itself after
its first step (Spawn's parent was SIGKILLed with it by Hydra). The parent prints ``RESULT
{...}`` per rank or ``FAILED <message>``, then ``ALIVE`` after a pause, and leaves with
``os._exit`` (exit 3 after a failure).
"""

import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import spawn_wait_r30_check as base  # noqa: E402


def leftover_pids():
    """Processes still running this script as a child (none should be, a while after)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{d}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and os.path.abspath(__file__).encode() in argv and b"child" in argv:
            found.append(int(d))
    return found


def child(kind):
    from mpi4py import MPI

    import skiff
    from skiff.kernels.train.parallel.launched import parent
    from skiff.nn import Linear, ReLU, Sequential

    parent()  # every rank, first: joins the parent through its port
    rank = MPI.COMM_WORLD.Get_rank()
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))

    def step_end(metrics):
        if kind == "kill" and rank == 1 and metrics["step"] == 1:
            os.kill(os.getpid(), signal.SIGKILL)

    tr = skiff.Trainer(model, strategy="dp", optimizer="sgd", schedule="constant", lr=0.01,
                       batch_size=base.BATCH, shuffle=False, seed=0, callbacks=[step_end])
    result = tr.train(base.Rows(kind == "fail" and rank == 1), steps=4)
    import numpy as np

    out = {"rank": rank, "losses": result.losses,
           "w": {k: np.asarray(v).tolist() for k, v in model.state_dict().items()}}
    # the parent acknowledges once it holds every part: the rank may then exit at once
    from skiff.kernels.train.parallel.launched import to_parent

    to_parent(out)
    os._exit(0)


def parent(kind):
    from skiff.kernels.train.parallel.launched import launch_ranks
    from skiff.kernels.train.parallel.spawned import SpawnedRanksFailed, gather_from_ranks

    inter = launch_ranks([os.path.abspath(__file__), "child", kind], np=2, timeout=120)
    try:
        results = gather_from_ranks(inter, timeout=90)
    except (SpawnedRanksFailed, TimeoutError) as exc:
        print(f"FAILED {type(exc).__name__}: {exc}", flush=True)
        # a notebook's kernel lives on: nothing may end this process now, nor when the
        # ranks leave (the loop waits for them, bounded; then 0.5 s more for their job's
        # end). Round 46 h3: 0.5 s + polls of 0.1 s + 0.5 s in place of 3 s + polls of 0.5 s
        time.sleep(0.5)
        left, until = leftover_pids(), time.monotonic() + 10  # ranks still leaving: bounded
        while left and time.monotonic() < until:
            time.sleep(0.1)
            left = leftover_pids()
        time.sleep(0.5)
        print("ALIVE " + json.dumps(left), flush=True)
        os._exit(3)
    for res in results:
        if res is not None:
            print("RESULT " + json.dumps(res), flush=True)
    os._exit(0)


if __name__ == "__main__":
    {"parent": parent, "child": child}[sys.argv[1]](sys.argv[2])
