#!/usr/bin/env bash
# Where the GPU's time goes, for the next round of GPU work: a cProfile of the gpt-mini
# training step (with per-phase timings, device synchronized between them) and of 0.25 s of the
# DFG 2D-2 stepper at N = 64, and the step's GPU kernels (tools/gpu_kernels.py). Writes
# $OUT/train_prof.json, $OUT/flow_prof.txt and $OUT/train_kernels.txt.
# On the lent GPU: bash tools/gpu-check-offline.sh --exec bash tools/gpu-profile.sh
# Here (CPU): DEV=cpu PY=.venv/bin/python OUT=/tmp/o PYTHONPATH=. bash tools/gpu-profile.sh
set -u
OUT=${OUT:-.}
D=${DEV:-cuda}; PY=${PY:-python3}; W=profile; [ $D = cuda ] && W=profile-gpu
$PY benchmarks/bench_train.py --worker $W --steps 20 > $OUT/train_prof.json 2> $OUT/train_err.txt
$PY -c "
import cProfile, pstats, sys, time, json
sys.argv=['x']
from skiff.kernels.solve.flow import run_case
run_case('2d-2', resolution=64, dt=0.005, t_end=0.05, keep_fields=False, device='$D')
pr=cProfile.Profile(); t=time.perf_counter(); pr.enable()
r=run_case('2d-2', resolution=64, dt=0.005, t_end=0.25, keep_fields=False, device='$D')
pr.disable(); print('wall', time.perf_counter()-t, json.dumps(r.to_json().get('solve_seconds')))
st=pstats.Stats(pr); st.sort_stats('tottime').print_stats(30); st.sort_stats('cumulative').print_stats(45)
" > $OUT/flow_prof.txt 2>&1
$PY tools/gpu_kernels.py 5 > $OUT/train_kernels.txt 2>&1
