#!/usr/bin/env bash
# System packages the tests need: Debian's Chromium (browser tests) and fonts (the OCR test
# set renders English and Chinese text). Installed only when missing; needs root and apt.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -e /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc ] || need+=(fonts-noto-cjk)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
[ -e /usr/share/fonts/truetype/dseg/DSEG7Classic-Regular.ttf ] || need+=(fonts-dseg)  # ocr_train
# the hard OCR set (skiff/kernels/ocr/synth_hard.py) draws in fonts the clean set does not use
[ -e /usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf ] || need+=(fonts-liberation2)
[ -e /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ] || need+=(fonts-wqy-zenhei)
[ -e /usr/share/fonts/truetype/arphic/ukai.ttc ] || need+=(fonts-arphic-ukai)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "system-deps: missing ${need[*]} (install them with your package manager)" >&2
  exit 0
fi
echo "system-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
