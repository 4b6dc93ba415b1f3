#!/usr/bin/env bash
# Prepare what tools/gpu-check-offline.sh needs on a GPU machine that reaches no registry:
# .whl/ (cp312 wheels) and .xl/ (Debian packages of gmsh's X and GL libraries). Run here, where
# pip and apt reach their registries; both folders are git-ignored (.git/info/exclude) and
# travel with `carry` (about 57 MiB together, under the 64 MiB a call may carry).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .git/info .whl .xl
for d in /.whl/ /.xl/; do grep -qx "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
plat=(--only-binary=:all: --python-version 3.12 --implementation cp)
for n in 17 24 27 28 31 34; do plat+=(--platform "manylinux_2_${n}_x86_64"); done
plat+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64)
python3 -m pip download -q --no-deps "${plat[@]}" -d .whl \
  mpich==5.0.2 mpi4py==4.1.2 gmsh==4.15.2 scikit-fem==12.0.2 pyclipper==1.4.0
(cd .xl && apt-get download libglu1-mesa libgl1 libglx0 libglvnd0 libopengl0 libxrender1 \
  libxcursor1 libxfixes3 libxext6 libxft2 libfontconfig1 libxinerama1 libx11-6 libfreetype6 \
  libexpat1 libxcb1 libpng16-16 libbrotli1 libxau6 libxdmcp6 libbsd0 libmd0 libgomp1 \
  && for f in *%3a*; do [ -e "$f" ] && mv "$f" "${f//%3a/_}"; done; true)
du -sh .whl .xl
