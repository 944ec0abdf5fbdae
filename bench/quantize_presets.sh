#!/usr/bin/env bash
# Quantization against full precision on every preset, after `kiln train`'s usual 2,000 steps:
#   [PRESETS="a b"] bench/quantize_presets.sh [KILN_BINARY] [OUT_DIR]
# For each preset: train, then quantize to 8 bits (groups of 64) and 4 bits (groups of 64 and
# 32), printing the report (`kiln quantize`) of each. A benchmark: it asserts nothing.
set -euo pipefail
kiln=${1:-target/release/kiln}
out=${2:-target/quantize}
mkdir -p "$out"
for preset in ${PRESETS:-$("$kiln" presets | awk '{print $1}')}; do
  echo "=== $preset"
  "$kiln" train "$preset" --save "$out/$preset.safetensors" | tail -n +3 | grep -v '^sample\|^And God' | head -3
  for q in "8 64" "4 64" "4 32"; do
    set -- $q
    "$kiln" quantize "$out/$preset.safetensors" --bits "$1" --group "$2" --out "$out/$preset-$1bit-g$2.safetensors" | grep -E 'bit, groups|^bytes|^validation'
  done
done
