#!/usr/bin/env bash
# `make test`'s check of the export folders with code that shares nothing with Kiln: `kiln`
# trains a Llama and two MLPs (one with standardized inputs) briefly, exports each (`kiln export`), reads each back (`kiln
# import`), and tests/python/check_export.py runs both in NumPy against Kiln's outputs, with
# the Transformers-made fixture (tests/fixtures/hf-foreign) against Transformers' logits.
set -euo pipefail
cargo build -q --bin kiln
kiln=target/debug/kiln
work=target/export-check
rm -rf "$work" && mkdir -p "$work"
# name, preset, steps, options: the second MLP standardizes its inputs (model.py applies it).
for run in "llama-tiny llama-tiny 20" "mlp-spiral mlp-spiral 200" "mlp-standardized mlp-spiral 200 --standardize"; do
  read -r name preset steps options <<< "$run"
  # shellcheck disable=SC2086 # options: none, or one word
  "$kiln" train "$preset" --steps "$steps" $options --save "$work/$name.safetensors" | grep -E '^validation'
  "$kiln" export "$work/$name.safetensors" --to "$work/$name" > /dev/null
  "$kiln" import "$work/$name" --save "$work/$name-back.safetensors" | grep imported
done
"$kiln" import tests/fixtures/hf-foreign --save "$work/fixture.safetensors" | grep imported
target/pyenv/bin/python tests/python/check_export.py "$work/llama-tiny" "$work/mlp-spiral" "$work/mlp-standardized" tests/fixtures/hf-foreign
