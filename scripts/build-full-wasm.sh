#!/usr/bin/env bash
# Trunk's post_build hook (Trunk.toml; it runs before the minifier): the page's second wasm,
# kiln_full — the library with the Cargo features the first-load wasm leaves out: `llama`
# (building and training Llamas) and `formats` (reading checkpoints and quantized files,
# quantizing, and the export folder for PyTorch / Hugging Face, both ways). js/full.js loads it
# the first time a Llama is built, a file opened, or a run quantized or exported. A release build (`make build-page`) uses Cargo's `page` profile and wasm-opt
# -Os, as Trunk does for the first wasm; `trunk serve` the dev profile.
set -euo pipefail
: "${TRUNK_STAGING_DIR:?build-full-wasm: Trunk runs this script as a post_build hook}"
cd "$(dirname "$0")/.."
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
if [[ ${TRUNK_PROFILE:-debug} == release ]]; then profile=page; else profile=dev; fi
folder=$([[ $profile == page ]] && echo page || echo debug)

cargo build --profile "$profile" --target wasm32-unknown-unknown --lib --no-default-features --features formats,llama
out="$TRUNK_STAGING_DIR/full"
rm -rf "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name kiln_full \
  "$TARGET_DIR/wasm32-unknown-unknown/$folder/kiln.wasm"
if [[ $profile == page ]]; then
  [[ "$(wasm-opt --version)" == *"version 132"* ]] || { echo "build-full-wasm: expected wasm-opt version 132 (node_modules/.bin first on PATH)" >&2; exit 1; }
  wasm-opt -Os "$out/kiln_full_bg.wasm" -o "$out/kiln_full_bg.wasm"
fi
echo "build-full-wasm: $out/kiln_full_bg.wasm, $(stat -c %s "$out/kiln_full_bg.wasm") bytes"
