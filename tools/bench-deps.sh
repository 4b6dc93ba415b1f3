#!/usr/bin/env bash
# System packages only the benchmarks need: Tesseract with English and Simplified Chinese,
# the second peer of benchmarks/bench_ocr.py. Installed only when missing; needs root and apt.
set -euo pipefail
# the PyTorch peer of benchmarks/bench_ocr_finetune.py: onnx2torch without its dependencies
# (it names torchvision, which would bring a second torch; the benchmark stands in for it)
PY=${SKIFF_PYTHON:-.venv/bin/python}; [ -x "$PY" ] || PY=python3
"$PY" -c "import onnx2torch" 2>/dev/null || \
  "$PY" -m pip install -q --no-deps onnx2torch==1.5.15 || echo "bench-deps: onnx2torch not installed" >&2
need=()
command -v tesseract >/dev/null || need+=(tesseract-ocr)
ls /usr/share/tesseract-ocr/*/tessdata/chi_sim.traineddata >/dev/null 2>&1 || need+=(tesseract-ocr-chi-sim)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "bench-deps: missing ${need[*]} (install them with your package manager)" >&2
  exit 0
fi
echo "bench-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
