#!/usr/bin/env bash
# Builds the npm package `kiln-gpu` into pkg/ (what `make npm` runs):
#   the library for wasm32 (profile `web`: release with fat LTO, one codegen unit) → wasm-bindgen --target web (kiln_wasm.js + kiln_wasm_bg.wasm)
#   → wasm-opt -O from the npm package binaryen@132 (Debian's binaryen 108 breaks Rust 1.95 wasm)
#   → js/kiln.js + js/kiln.d.ts + npm/package.json (version from Cargo.toml) + npm/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
OUT=pkg
WASM_OPT=node_modules/.bin/wasm-opt

[[ -x $WASM_OPT ]] || { echo "build-npm: $WASM_OPT is missing; run 'npm ci' (scripts/setup.sh does)" >&2; exit 1; }
[[ "$($WASM_OPT --version)" == *"version 132"* ]] || { echo "build-npm: expected wasm-opt version 132, got: $($WASM_OPT --version)" >&2; exit 1; }

echo "build-npm: cargo build --profile web --target wasm32-unknown-unknown --lib"
cargo build --profile web --target wasm32-unknown-unknown --lib
rm -rf "$OUT"
mkdir -p "$OUT"
wasm-bindgen --target web --no-typescript --out-dir "$OUT" --out-name kiln_wasm \
  "$TARGET_DIR/wasm32-unknown-unknown/web/kiln.wasm"
before=$(stat -c %s "$OUT/kiln_wasm_bg.wasm")
echo "build-npm: wasm-opt -O ($before bytes)"
$WASM_OPT -O "$OUT/kiln_wasm_bg.wasm" -o "$OUT/kiln_wasm_bg.opt.wasm"
mv "$OUT/kiln_wasm_bg.opt.wasm" "$OUT/kiln_wasm_bg.wasm"
echo "build-npm: optimized to $(stat -c %s "$OUT/kiln_wasm_bg.wasm") bytes"
# A wasm-opt that mangles the module shows up here already (the tests then run it for real).
node -e 'const b = require("fs").readFileSync(process.argv[1]); if (!WebAssembly.validate(b)) { console.error("build-npm: the optimized wasm does not validate"); process.exit(1); }' "$OUT/kiln_wasm_bg.wasm"

cp js/kiln.js js/module.js js/args.js js/full.js js/kiln.d.ts js/kiln-types.d.ts npm/README.md "$OUT/"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
sed "s/\"version\": \"0.0.0\"/\"version\": \"$version\"/" npm/package.json > "$OUT/package.json"
for f in LICENSE LICENSE-MIT LICENSE-APACHE; do [[ -f $f ]] && cp "$f" "$OUT/"; done
echo "build-npm: $OUT/ holds kiln-gpu@$version:"
ls -l "$OUT"
