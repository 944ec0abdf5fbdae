#!/usr/bin/env bash
# `make test`'s check of the export folders with code that shares nothing with Kiln: `kiln`
# trains a Llama and an MLP briefly, exports each (`kiln export`), reads each back (`kiln
# import`), and tests/python/check_export.py runs both in NumPy against Kiln's outputs, with
# the Transformers-made fixture (tests/fixtures/hf-foreign) against Transformers' logits.
set -euo pipefail
cargo build -q --bin kiln
kiln=target/debug/kiln
work=target/export-check
rm -rf "$work" && mkdir -p "$work"
for run in "llama-tiny 20" "mlp-spiral 200"; do
  read -r preset steps <<< "$run"
  "$kiln" train "$preset" --steps "$steps" --save "$work/$preset.safetensors" | grep -E '^validation'
  "$kiln" export "$work/$preset.safetensors" --to "$work/$preset" > /dev/null
  "$kiln" import "$work/$preset" --save "$work/$preset-back.safetensors" | grep imported
done
"$kiln" import tests/fixtures/hf-foreign --save "$work/fixture.safetensors" | grep imported
target/pyenv/bin/python tests/python/check_export.py "$work/llama-tiny" "$work/mlp-spiral" tests/fixtures/hf-foreign
