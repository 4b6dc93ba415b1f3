"""Device arrays between GPU ranks: ``world(device=cuda)`` picks the engine by itself (NCCL
with a GPU per rank, MPI staging through host memory when ranks share one); every collective
checked against numpy on all ranks' data; neighbours that isend to each other and then recv
(the pipeline's steady state) both finish."""

import json

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.backend import cupy, to_numpy
from skiff.kernels.backend.launch_env import local_rank
from skiff.kernels.train.parallel import world


def data(rank, n=12):
    return np.random.default_rng(100 + rank).standard_normal(n).astype(np.float32)


def main():
    cp = cupy()
    gpu = local_rank() % cp.cuda.runtime.getDeviceCount()  # ranks share GPUs if too few
    cp.cuda.Device(gpu).use()
    comm = world(device=f"cuda:{gpu}")
    p, r = comm.size, comm.rank
    every = np.stack([data(q) for q in range(p)])
    out = {"rank": r, "engine": type(comm).__name__}
    out["allreduce"] = bool(np.allclose(to_numpy(comm.allreduce(cp.asarray(data(r)))),
                                        every.sum(0), atol=1e-5))
    h = comm.iallreduce_(cp.asarray(data(r)), "mean")
    out["iallreduce_mean"] = bool(np.allclose(to_numpy(h.wait()), every.mean(0), atol=1e-6))
    k = 12 // p
    out["reduce_scatter"] = bool(np.allclose(to_numpy(comm.reduce_scatter(cp.asarray(data(r)))),
                                             every.sum(0)[r * k:(r + 1) * k], atol=1e-5))
    out["allgather"] = bool(np.array_equal(to_numpy(comm.allgather(cp.asarray(data(r)))), every))
    x = cp.asarray(np.repeat(np.arange(p, dtype=np.float32)[:, None] + 10 * r, 2, axis=1))
    got, counts = comm.alltoallv(x, [1] * p)
    out["alltoallv"] = bool(np.array_equal(to_numpy(got)[:, 0], 10 * np.arange(p) + r))
    peer = r ^ 1
    ok = True
    for i in range(3):  # both send first, then receive
        sent = comm.isend(cp.asarray(data(r) + i), peer, tag=i)
        back = comm.recv(cp.empty(12, dtype=cp.float32), peer, tag=i)
        sent.wait()
        ok &= bool(np.array_equal(to_numpy(back), data(peer) + i))
    out["exchange"] = ok
    comm.barrier()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
