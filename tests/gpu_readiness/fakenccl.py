"""A simulated GPU with streams, events and NCCL point-to-point, for several ranks in one process
(one thread per rank), to check :class:`NCCLComm`'s stream design without a GPU.

What it models, as CUDA and NCCL do:

* a stream runs its operations in order; ``Event.record`` marks the point reached,
  ``Stream.wait_event`` holds the stream until the event's point is done;
* an NCCL ``send`` on a stream completes only together with the matching ``recv`` of the peer
  on the same communicator (the message's pair, in posting order), each at the head of its
  own stream: a send queued behind a receive on one stream waits for that receive;
* the host waits only in ``Event.synchronize``, ``Stream.synchronize`` and ``asnumpy`` (cupy
  copies to the host on the current stream and waits for it).

Bytes move with ``ctypes.memmove`` between the real addresses of the numpy arrays that stand
for device arrays, so a buffer freed before its stream ran would be caught as garbage.
A wait that cannot finish raises :class:`Deadlock` after ``timeout`` seconds.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time
import types
from collections import deque

import numpy as np

from . import fakecupy

ITEMSIZE = {"NCCL_FLOAT32": 4, "NCCL_FLOAT64": 8, "NCCL_FLOAT16": 2, "NCCL_INT32": 4,
            "NCCL_INT64": 8, "NCCL_UINT8": 1}


class Deadlock(AssertionError):
    pass


class GPU:
    """Every stream of every simulated rank, advanced together under one lock."""

    def __init__(self, timeout: float = 3.0):
        self.cond = threading.Condition()
        self.streams: list[Stream] = []
        self.timeout = timeout
        self.launched: list[tuple] = []  # (op, uid, src, dst, stream id) in posting order
        self.log: list[tuple] = []  # (stream id, "record" | "wait" | ..., event) as enqueued
        self.host_waits: list[str] = []  # what the host waited for
        self._ptr = itertools.count(1)
        self._local = threading.local()

    # --- progress ------------------------------------------------------------------------
    def _step(self) -> bool:
        moved = False
        for s in self.streams:
            while s.ops:
                op = s.ops[0]
                if op[0] == "record":
                    op[1].done = True
                elif op[0] == "wait":
                    if not op[1].done:
                        break
                elif op[0] == "send":
                    peer = self._matching_recv(op)
                    if peer is None:
                        break
                    _, _, _, _, src_ptr, nbytes = op
                    dst_ptr, room = peer.ops[0][4], peer.ops[0][5]
                    if room != nbytes:
                        raise AssertionError(f"a send of {nbytes} bytes met a recv of {room}")
                    ctypes.memmove(dst_ptr, src_ptr, nbytes)
                    peer.ops.popleft()
                else:  # a recv waits for its send (completed from the send's side)
                    break
                s.ops.popleft()
                moved = True
        return moved

    def _matching_recv(self, send):
        _, uid, src, dst, _, _ = send
        for s in self.streams:
            head = s.ops[0] if s.ops else None
            if head and head[0] == "recv" and head[1:4] == (uid, src, dst):
                return s
        return None

    def enqueue(self, stream, op) -> None:
        with self.cond:
            self.log.append((stream.ptr, op[0], op[1] if op[0] in ("record", "wait") else None))
            stream.ops.append(op)
            while self._step():
                pass
            self.cond.notify_all()

    def wait_until(self, ready, what: str) -> None:
        self.host_waits.append(what)
        deadline = time.monotonic() + self.timeout
        with self.cond:
            while True:
                while self._step():
                    pass
                if ready():
                    self.cond.notify_all()
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    heads = [s.ops[0][:4] for s in self.streams if s.ops]
                    raise Deadlock(f"{what} never finished; stream heads: {heads}")
                self.cond.wait(min(left, 0.02))

    # --- cupy.cuda's names -----------------------------------------------------------------
    def current_stream(self):
        s = getattr(self._local, "stream", None)
        if s is None:
            s = self._local.stream = Stream(self)
        return s


class Stream:
    def __init__(self, gpu: GPU, non_blocking: bool = False):
        self.gpu, self.ops = gpu, deque()
        self.ptr = next(gpu._ptr)
        gpu.streams.append(self)

    def wait_event(self, event) -> None:
        self.gpu.enqueue(self, ("wait", event))

    def synchronize(self) -> None:
        self.gpu.wait_until(lambda: not self.ops, f"stream {self.ptr}")


class Event:
    def __init__(self, gpu: GPU, **flags):
        self.gpu, self.done = gpu, False

    def record(self, stream=None) -> None:
        self.done = False
        self.gpu.enqueue(stream or self.gpu.current_stream(), ("record", self))

    def synchronize(self) -> None:
        self.gpu.wait_until(lambda: self.done, "an event")


def make_cupy(gpu: GPU) -> types.SimpleNamespace:
    """fakecupy with this GPU's streams and events; ``asnumpy`` waits for the current stream."""
    cp = fakecupy.make()
    cp.cuda = types.SimpleNamespace(
        get_current_stream=gpu.current_stream,
        Stream=lambda non_blocking=False: Stream(gpu, non_blocking),
        Event=lambda **flags: Event(gpu, **flags))
    plain = cp.asnumpy

    def asnumpy(a):
        gpu.current_stream().synchronize()
        return plain(a)

    cp.asnumpy = asnumpy
    return cp


def make_nccl(gpu: GPU) -> types.ModuleType:
    """``cupy.cuda.nccl`` with point-to-point on the simulated streams (collectives are not
    simulated here)."""
    mod = types.ModuleType("cupy.cuda.nccl")
    mod.available = True
    for name in (*ITEMSIZE, "NCCL_SUM", "NCCL_MAX", "NCCL_MIN"):
        setattr(mod, name, name)
    uids = itertools.count(1)
    streams = {s.ptr: s for s in gpu.streams}

    def stream_of(ptr):
        streams.update({s.ptr: s for s in gpu.streams})
        return streams[ptr]

    class NcclCommunicator:
        def __init__(self, ndev, commId, rank):
            self.uid, self.rank, self.size = commId, rank, ndev

        def send(self, sendbuf, count, datatype, peer, stream):
            gpu.launched.append(("send", self.uid, self.rank, peer, stream))
            gpu.enqueue(stream_of(stream), ("send", self.uid, self.rank, peer, sendbuf,
                                            count * ITEMSIZE[datatype]))

        def recv(self, recvbuf, count, datatype, peer, stream):
            gpu.launched.append(("recv", self.uid, peer, self.rank, stream))
            gpu.enqueue(stream_of(stream), ("recv", self.uid, peer, self.rank, recvbuf,
                                            count * ITEMSIZE[datatype]))

        def _collective(name):
            def launch(self, *args):  # recorded, not simulated: completes at once
                gpu.launched.append((name, self.uid, self.rank, None, args[-1]))
            return launch

        allReduce = _collective("allReduce")
        reduceScatter = _collective("reduceScatter")
        allGather = _collective("allGather")
        bcast = _collective("bcast")

    mod.NcclCommunicator = NcclCommunicator
    mod.get_unique_id = lambda: next(uids)
    mod.groupStart = mod.groupEnd = lambda: None
    return mod


class HostPair:
    """The MPI side of a group of ``size`` ranks in threads: ``bcast_object`` through a
    shared slot (the NCCL unique ids)."""

    def __init__(self, shared: dict, rank: int, size: int):
        self.shared, self.rank, self.size = shared, rank, size

    def bcast_object(self, obj, root=0):
        cond = self.shared.setdefault("cond", threading.Condition())
        with cond:
            if self.rank == root:
                self.shared["value"] = obj
                cond.notify_all()
            cond.wait_for(lambda: "value" in self.shared, timeout=5)
            return self.shared["value"]


def run_ranks(fns, timeout: float = 10.0) -> list:
    """Run ``fns[r]()`` in one thread per rank; their results, or the first error raised."""
    results: list = [None] * len(fns)
    errors: list = []

    def call(r):
        try:
            results[r] = fns[r]()
        except BaseException as exc:  # noqa: BLE001 (re-raised in the caller)
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(r,), daemon=True) for r in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    if errors:
        raise errors[0]
    if any(t.is_alive() for t in threads):
        raise Deadlock("a rank's thread never finished")
    return results


def device(a) -> fakecupy.DeviceArray:
    return np.ascontiguousarray(a).view(fakecupy.DeviceArray)
