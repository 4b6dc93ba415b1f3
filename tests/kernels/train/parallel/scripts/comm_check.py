"""Every collective on this rank's world checked against numpy on the data of all ranks.

Each rank's data comes from a seed of its rank, so every rank can compute the expected result
of every collective itself.
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.parallel import Layout, ProcessGroups, world


def data(rank, n=12):
    return np.random.default_rng(100 + rank).standard_normal(n).astype(np.float32)


def check(comm):
    p, r = comm.size, comm.rank
    every = np.stack([data(q) for q in range(p)])
    out = {"rank": r, "size": p}
    out["allreduce"] = bool(np.allclose(comm.allreduce(data(r)), every.sum(0), atol=1e-5))
    out["allreduce_max"] = bool(np.array_equal(comm.allreduce(data(r), "max"), every.max(0)))
    out["allreduce_mean"] = bool(np.allclose(comm.allreduce(data(r), "mean"), every.mean(0),
                                             atol=1e-6))
    h = comm.iallreduce_(data(r))
    out["iallreduce"] = bool(np.allclose(h.wait(), every.sum(0), atol=1e-5))
    rs = comm.reduce_scatter(data(r))
    k = 12 // p
    out["reduce_scatter"] = bool(np.allclose(rs, every.sum(0)[r * k:(r + 1) * k], atol=1e-5))
    out["allgather"] = bool(np.array_equal(comm.allgather(data(r)), every))
    mine = data(r, n=r + 1)
    got, counts = comm.allgatherv(mine)
    out["allgatherv"] = bool(np.array_equal(got, np.concatenate([data(q, q + 1)
                                                                 for q in range(p)])))
    out["allgatherv_counts"] = counts == [q + 1 for q in range(p)]
    b = comm.broadcast(data(r), root=p - 1)
    out["broadcast"] = bool(np.array_equal(b, data(p - 1)))
    # alltoallv: rank r sends (j + r) % 3 rows of 2 to rank j, each row tagged (r, j)
    rows, counts = [], []
    for j in range(p):
        c = (j + r) % 3
        counts.append(c)
        rows += [[r, j]] * c
    send = np.array(rows, dtype=np.int64).reshape(-1, 2)
    recv, rcounts = comm.alltoallv(send, counts)
    expect = [[q, r] for q in range(p) for _ in range((r + q) % 3)]
    out["alltoallv"] = recv.tolist() == expect and rcounts == [(r + q) % 3 for q in range(p)]
    if p > 1:  # ring of send/recv, blocking and non-blocking
        right, left = (r + 1) % p, (r - 1) % p
        hs = comm.isend(data(r), right, tag=7)
        got = comm.irecv(data(r), left, tag=7).wait()
        hs.wait()
        out["isend_irecv"] = bool(np.array_equal(got, data(left)))
        if r % 2 == 0:
            comm.send(data(r), right, tag=3)
            got = comm.recv((data(r).shape, np.float32), left, tag=3)
        else:
            got = comm.recv((data(r).shape, np.float32), left, tag=3)
            comm.send(data(r), right, tag=3)
        out["send_recv"] = bool(np.array_equal(got, data(left)))
    out["bcast_object"] = comm.bcast_object({"r": r}, root=0) == {"r": 0}
    out["agree_stop"] = comm.agree_stop(r == 0) is True and comm.agree_stop(r != 0) is False
    comm.barrier()
    comm.reset_stats()
    comm.allreduce(np.zeros(1000, dtype=np.float32))
    out["allreduce_bytes"] = comm.bytes_sent
    return out


def groups(comm, tp, pp, ep):
    lay = Layout(dp=comm.size // (tp * pp), tp=tp, pp=pp, ep=ep)
    g = ProcessGroups(comm, lay)
    # the sum of world ranks over each group identifies its members
    ident = {}
    for name in ("dp", "tp", "pp", "ep", "expert_dp"):
        c = getattr(g, name)
        ident[name] = [c.size, int(c.allreduce(np.array([comm.rank], dtype=np.int64))[0]),
                       c.rank]
    return {"coords": g.coords, "groups": ident}


if __name__ == "__main__":
    comm = world()
    res = check(comm)
    tp, pp, ep = (int(v) for v in sys.argv[1:4]) if len(sys.argv) > 3 else (1, 1, 1)
    res.update(groups(comm, tp, pp, ep))
    print("RESULT " + json.dumps(res), flush=True)
