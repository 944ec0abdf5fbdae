#!/usr/bin/env bash
# Installs what Kiln's commands need, skipping whatever is already present.
#   scripts/setup.sh test   -> everything `make test` needs
#   scripts/setup.sh serve  -> everything `make serve` needs
# Versions are pinned where the toolchain requires it (see ARCHITECTURE.md):
# wasm-bindgen-cli must equal the wasm-bindgen in Cargo.lock; trunk 0.21.14 only builds --locked.
set -euo pipefail
WANT="${1:-test}"
WASM_BINDGEN_VERSION=0.2.130
TRUNK_VERSION=0.21.14

apt_pkgs=(mesa-vulkan-drivers)
case "$WANT" in
  test) apt_pkgs+=(chromium chromium-driver python3-venv) ;;
  serve) ;;
  *) echo "setup.sh: unknown target '$WANT' (allowed: test, serve)" >&2; exit 2 ;;
esac

missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "setup: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: please install as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

if ! command -v cargo >/dev/null; then
  echo "setup: Rust is missing; install it with rustup (https://rustup.rs), then re-run" >&2
  exit 1
fi
if ! rustup target list --installed | grep -q wasm32-unknown-unknown; then
  echo "setup: rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
if [[ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]]; then
  echo "setup: cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 4 min)"
  cargo install -q wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi
if [[ "$WANT" == serve ]] && [[ "$(trunk --version 2>/dev/null)" != "trunk $TRUNK_VERSION" ]]; then
  # Without its default features (TLS for downloading tools and its update check, which the
  # offline build never uses): 8 min to build here instead of 12.
  echo "setup: cargo install trunk $TRUNK_VERSION (about 8 min)"
  cargo install -q trunk --version "$TRUNK_VERSION" --locked --force --no-default-features
fi

if [[ -f package.json ]] && { [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules ]]; }; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules
fi

# NumPy and safetensors for tests/python/check_export.py, in a virtual environment of Debian's
# Python (rebuilt when the requirements change).
if [[ "$WANT" == test ]] && { [[ ! -x target/pyenv/bin/python ]] || [[ tests/python/requirements.txt -nt target/pyenv ]]; }; then
  echo "setup: python venv target/pyenv (numpy, safetensors)"
  rm -rf target/pyenv
  /usr/bin/python3 -m venv target/pyenv
  target/pyenv/bin/pip install -q --disable-pip-version-check -r tests/python/requirements.txt
  touch target/pyenv
fi
