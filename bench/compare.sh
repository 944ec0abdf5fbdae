#!/usr/bin/env bash
# One command, one machine: Kiln native, Kiln on Dawn (Node + webgpu), PyTorch (if python3 has
# torch) and TF.js on Dawn, in turn; then the ratios. Needs `make npm` (pkg/) and a release
# build of `kiln` (KILN=path overrides). Results land in OUT (default target/bench).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-target/bench}"
KILN="${KILN:-target/release/kiln}"
SECS="${BENCH_SECONDS:-3}"
mkdir -p "$OUT"
"$KILN" bench --seconds "$SECS" ${BENCH_ARGS:-} --json "$OUT/kiln.json" | tee "$OUT/kiln.txt"
node bench/dawn_bench.mjs --seconds "$SECS" ${BENCH_ARGS:-} --json "$OUT/dawn.json" | tee "$OUT/dawn.txt"
if python3 -c 'import torch' 2>/dev/null; then
  PYTHONUNBUFFERED=1 python3 bench/torch_reference.py --seconds "$SECS" --json "$OUT/torch.json" | tee "$OUT/torch.txt"
fi
# TFJS may name a bundled copy of bench/tfjs_reference.mjs (for machines without node_modules).
if [[ -n ${TFJS:-} || -d node_modules/@tensorflow/tfjs ]]; then
  node "${TFJS:-bench/tfjs_reference.mjs}" --seconds "$SECS" --json "$OUT/tfjs.json" | tee "$OUT/tfjs.txt"
fi
node bench/compare.mjs "$OUT" | tee "$OUT/compare.txt"
