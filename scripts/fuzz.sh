#!/usr/bin/env bash
# Runs every cargo-fuzz target for FUZZ_SECONDS (default 30) from the committed seeds, and fails
# on any crash. cargo-fuzz's instrumentation flags are unstable options, so the stable toolchain
# runs them with RUSTC_BOOTSTRAP=1; no sanitizer (-s none): Kiln has no unsafe code of its own,
# so a crash here means a panic, an abort or an over-allocation.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECONDS_EACH="${FUZZ_SECONDS:-30}"
if ! command -v cargo-fuzz >/dev/null; then
  echo "fuzz: cargo install cargo-fuzz 0.13.2 (about 3 min)"
  cargo install -q cargo-fuzz --version 0.13.2 --locked
fi
export RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo fuzz build -s none
passed=0
failed=0
for target in checkpoint config url_state csv_text; do
  work="$(mktemp -d)"
  cp seeds/"$target"/* "$work"/
  # -rss_limit_mb: an input that makes the loader allocate beyond its file fails the run.
  if cargo fuzz run -s none "$target" "$work" -- -max_total_time="$SECONDS_EACH" -rss_limit_mb=1024 -max_len=65536 \
      >"$work.log" 2>&1; then
    echo "fuzz $target: $(grep -o 'Done [0-9]* runs' "$work.log" | tail -1), no crash"
    passed=$((passed + 1))
  else
    echo "fuzz $target: FAILED"; tail -30 "$work.log"
    failed=$((failed + 1))
  fi
  rm -rf "$work" "$work.log"
done
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
