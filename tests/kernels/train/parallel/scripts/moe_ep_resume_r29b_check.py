"""A GPT MoE checkpointed whole (dp, zero2, one process) and resumed under ep (round 29b).
usage: moe_ep_resume_r29b_check.py DIR

DIR/single holds a one-process checkpoint at step 2 (written by the test). On 2 ranks:
ep 4 steps uninterrupted; dp and zero2 2 steps with a checkpoint, each resumed under ep to
4; the one-process checkpoint resumed under ep to 4. Prints ``RESULT {"rank", "whole",
case: {"losses", "from_step"}}``.
"""

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from moe_ckpt_r29_check import run  # noqa: E402

from skiff.kernels.train.parallel import world  # noqa: E402


def main(root):
    comm = world()
    whole, _ = run("ep", root / "ep_whole", 4)
    out = {"rank": comm.rank, "whole": whole}
    for kind in ("dp", "zero2", "single"):
        ckpt = root / f"{kind}_run"
        if kind == "single":
            if comm.rank == 0:
                shutil.copytree(root / "single", ckpt)
            comm.barrier()
        else:
            run(kind, ckpt, 2)
        losses, from_step = run("ep", ckpt, 4, resume=True)
        out[kind] = {"losses": losses, "from_step": from_step}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
