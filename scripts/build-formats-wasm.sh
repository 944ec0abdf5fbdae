#!/usr/bin/env bash
# Trunk's post_build hook (Trunk.toml; it runs before the minifier): the page's second wasm,
# kiln_formats — the library with the Cargo feature `formats` (the export folder for PyTorch /
# Hugging Face, both ways), which the page's first-load wasm leaves out (≈ 47 KB gzipped).
# js/formats.js loads it the first time a run is exported or an export folder opened. A release
# build (`make build-page`) uses Cargo's `web` profile and wasm-opt -Os, as Trunk does for the
# first wasm; `trunk serve` the dev profile.
set -euo pipefail
: "${TRUNK_STAGING_DIR:?build-formats-wasm: Trunk runs this script as a post_build hook}"
cd "$(dirname "$0")/.."
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
if [[ ${TRUNK_PROFILE:-debug} == release ]]; then profile=web; else profile=dev; fi
folder=$([[ $profile == web ]] && echo web || echo debug)

cargo build --profile "$profile" --target wasm32-unknown-unknown --lib --no-default-features --features formats
out="$TRUNK_STAGING_DIR/formats"
rm -rf "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name kiln_formats \
  "$TARGET_DIR/wasm32-unknown-unknown/$folder/kiln.wasm"
if [[ $profile == web ]]; then
  [[ "$(wasm-opt --version)" == *"version 132"* ]] || { echo "build-formats-wasm: expected wasm-opt version 132 (node_modules/.bin first on PATH)" >&2; exit 1; }
  wasm-opt -Os "$out/kiln_formats_bg.wasm" -o "$out/kiln_formats_bg.wasm"
fi
echo "build-formats-wasm: $out/kiln_formats_bg.wasm, $(stat -c %s "$out/kiln_formats_bg.wasm") bytes"
