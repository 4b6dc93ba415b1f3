#!/usr/bin/env bash
# `make gpu-check` on a GPU machine that reaches no package registry (the lent H200 of this
# workplace): its own python3 holds numpy, scipy, numba, cupy, torch, pytest and mpi4py; what
# skiff's GPU tests need beyond that travels beside the checkout, prepared on a machine with a
# registry by tools/gpu-carry.sh:
#   .whl/  wheels for cp312: mpich, mpi4py, gmsh, scikit-fem (pip download --no-deps ...)
#   .xl/   Debian .deb files of the X and GL libraries gmsh's library links against
# Only the libraries the machine lacks are taken from .xl, so its own stay in charge.
# Usage: bash tools/gpu-check-offline.sh [BUDGET_SECONDS [gpu_check.py options]]
#   (writes benchmarks/results/gpu.md)
#        bash tools/gpu-check-offline.sh --exec COMMAND...   (COMMAND in the same environment,
#   e.g. a profile: --exec python3 benchmarks/bench_train.py --worker profile-gpu --steps 20)
set -u
exec_mode=
if [ "${1:-}" = "--exec" ]; then exec_mode=1; shift; else budget=${1:-420}; shift || true; fi
py=${PYTHON:-python3}
prefix=/tmp/skiff-extra
$py -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --prefix "$prefix" \
  .whl/*.whl || exit 1
site=$(echo "$prefix"/lib/python3*/site-packages)
libs=/tmp/skiff-xlibs
rm -rf "$libs" /tmp/skiff-debs && mkdir -p "$libs" /tmp/skiff-debs
for f in .xl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /tmp/skiff-debs; done
for so in /tmp/skiff-debs/usr/lib/x86_64-linux-gnu/*.so.* /tmp/skiff-debs/lib/x86_64-linux-gnu/*.so.*; do
  [ -L "$so" ] || continue  # the soname links: copy the ones the machine lacks, with their files
  name=$(basename "$so")
  if ! ldconfig -p | grep -q "^[[:space:]]*$name "; then
    cp -a "$so" "$(readlink -f "$so")" "$libs"/
    echo "gpu-check-offline: $name from .xl"
  fi
done
export PYTHONPATH="$site:$PWD" PATH="$prefix/bin:$PATH"
export LD_LIBRARY_PATH="$prefix/lib:$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
$py -c "import gmsh, skfem; from mpi4py import MPI; print('gpu-check-offline: gmsh', gmsh.__version__, '| MPI', MPI.Get_library_version().splitlines()[0])"
if [ -n "$exec_mode" ]; then exec "$@"; fi
$py tools/gpu_check.py --budget "$budget" "$@"
