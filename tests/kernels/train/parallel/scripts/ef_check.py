"""Error feedback on real ranks, for every compressor: at each step the all-reduced output is
exactly the mean over ranks of what each rank meant to send minus what it kept back,
``out_t = mean_r(g_t^r + e_{t-1}^r - e_t^r)``; summed over the steps, nothing is lost:
``sum_t out_t + mean_r e_T^r = mean_r sum_t g_t^r``. Prints the worst relative error of each.

    mpiexec -n 2 python ef_check.py STEPS SPEC [SPEC ...]
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.compression import make_compressor

SHAPES = {"w": (16, 12), "b": (12,)}


def grads(rank, step):
    rng = np.random.default_rng([rank, step])
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES.values()]


def kept(comp, name, like):
    """What the compressor kept back for ``name`` (nothing for what it sends whole)."""
    return comp.residuals.get(name, np.zeros_like(like))


def main():
    print("RESULT " + json.dumps(check(int(sys.argv[1]), sys.argv[2:])), flush=True)


def check(steps, specs):
    """Each spec's largest step and total errors and what it keeps back, on this world
    (also run by ``dp_check.py``'s ``ef:STEPS:SPECS`` job, round 43 h10)."""
    comm = world()
    names = list(SHAPES)
    out = {"rank": comm.rank}
    for spec in specs:
        comp = make_compressor(spec)
        sent_sum = [np.zeros(s, np.float64) for s in SHAPES.values()]
        step_err = 0.0
        for t in range(steps):
            g = grads(comm.rank, t)
            before = [kept(comp, n, x).copy() for n, x in zip(names, g)]
            got = comp.reduce(comm, [x.copy() for x in g], names)
            for i, n in enumerate(names):
                meant = comm.allreduce(g[i] + before[i] - kept(comp, n, g[i]), "mean")
                scale = np.abs(got[i]).max()
                step_err = max(step_err, float(np.abs(got[i] - meant).max() / scale))
                sent_sum[i] += got[i]
        total_err = 0.0
        for i, n in enumerate(names):
            want = sum(np.sum([grads(r, t)[i] for t in range(steps)], axis=0, dtype=np.float64)
                       for r in range(comm.size)) / comm.size
            back = comm.allreduce(kept(comp, n, sent_sum[i]).astype(np.float32), "mean")
            total_err = max(total_err, float(np.abs(sent_sum[i] + back - want).max()
                                             / np.abs(want).max()))
        norms = [float(np.linalg.norm(kept(comp, n, np.zeros(1)))) for n in names]
        out[spec] = {"step_err": step_err, "total_err": total_err, "residual_norms": norms}
    return out


if __name__ == "__main__":
    main()
