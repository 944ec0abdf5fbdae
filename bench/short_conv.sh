#!/usr/bin/env bash
# What the short conv does to the sequence tasks: `kiln train` on llama-reverse and
# llama-addition for the presets' 600 steps, with and without `--short-conv`, three seeds
# each; one line per run with the validation loss and accuracy (next-character accuracy over
# the validation split's text). A benchmark: it prints, asserts nothing.
#   bench/short_conv.sh [KILN_BINARY] [STEPS]
set -euo pipefail
kiln=$(realpath "${1:-target/release/kiln}")
steps=${2:-600}
for preset in llama-reverse llama-addition; do
  for conv in "" --short-conv; do
    for seed in 1 2 3; do
      line=$("$kiln" train "$preset" --steps "$steps" --seed "$seed" $conv --save /tmp/short-conv.safetensors | grep '^validation')
      echo "$preset ${conv:-(plain)} seed $seed: $line"
    done
  done
done
