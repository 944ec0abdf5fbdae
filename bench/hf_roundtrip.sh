#!/usr/bin/env bash
# The round trip through PyTorch on a machine with torch and transformers:
#   bench/hf_roundtrip.sh [KILN_BINARY] [PRESET] [WORK_DIR] [STEPS]
# Kiln trains the preset (2,000 steps by default) and exports it; NumPy checks the folder
# (tests/python/check_export.py) and, for a Llama, Transformers does (bench/hf_check.py); the
# folder's train.py continues under torchrun on one GPU (NCCL) and on two CPU processes
# (gloo); each result imports back into Kiln, whose validation loss is printed beside
# PyTorch's. A benchmark: it prints figures and asserts only what the two checks assert.
set -euo pipefail
kiln=$(realpath "${1:-target/release/kiln}")
preset=${2:-llama-tiny}
work=${3:-/tmp/kiln-roundtrip}
steps=${4:-2000}
here=$(dirname "$(realpath "$0")")
rm -rf "$work" && mkdir -p "$work"
"$kiln" train "$preset" --steps "$steps" --save "$work/kiln.safetensors" | grep -E '^validation'
"$kiln" export "$work/kiln.safetensors" --to "$work/export" > /dev/null
python3 "$here/../tests/python/check_export.py" "$work/export" | tail -1
if [[ -f "$work/export/config.json" ]]; then
  python3 "$here/hf_check.py" "$work/export" --device cuda 2>/dev/null | tail -1
fi
python3 -m torch.distributed.run --nproc_per_node=1 "$work/export/train.py" "$work/export" --steps 200 --log-every 50 --out "$work/gpu1" 2>&1 | grep '^{'
"$kiln" import "$work/gpu1" --save "$work/gpu1.safetensors" | grep imported
python3 -m torch.distributed.run --nproc_per_node=2 "$work/export/train.py" "$work/export" --steps 40 --log-every 10 --cpu --out "$work/cpu2" 2>&1 | grep '^{'
"$kiln" import "$work/cpu2" --save "$work/cpu2.safetensors" | grep imported
