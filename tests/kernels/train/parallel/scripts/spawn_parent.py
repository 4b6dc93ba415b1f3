"""A notebook's way to start ranks: ``MPI.COMM_SELF.Spawn`` of SCRIPT on N processes, which
send their results back over the inter-communicator. usage: spawn_parent.py N SCRIPT"""

import json
import sys

from mpi4py import MPI

n, script = int(sys.argv[1]), sys.argv[2]
inter = MPI.COMM_SELF.Spawn(sys.executable, args=[script, "spawned"], maxprocs=n)
results = inter.gather(None, root=MPI.ROOT)
inter.Disconnect()
for res in results:
    print("RESULT " + json.dumps(res), flush=True)
