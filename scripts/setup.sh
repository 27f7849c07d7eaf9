#!/usr/bin/env bash
# Installs everything Timbre Studio needs on Debian 12, idempotently: Debian packages, the
# project venv with torch (libtorch for the neural crate), npm packages, and with --test the
# end-to-end tools. Each step is skipped when its inputs have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
want_test_tools=false
[[ "${1:-}" == "--test" ]] && want_test_tools=true
stamps=.stamps
mkdir -p "$stamps"
sudo_if_needed() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

debian_packages=(
  build-essential pkg-config file patchelf curl
  libwebkit2gtk-4.1-dev libjavascriptcoregtk-4.1-dev libsoup-3.0-dev libgtk-3-dev
  libayatana-appindicator3-dev librsvg2-dev libxdo-dev libssl-dev libasound2-dev
  gstreamer1.0-libav gstreamer1.0-plugins-good
  python3 python3-venv python3-pip
  libopus-dev
)
# espeak-ng: real speech for the pitch parity tests.
$want_test_tools && debian_packages+=(xvfb xauth dbus dbus-x11 webkit2gtk-driver alsa-utils xdotool espeak-ng)
# CJK glyphs, so the Chinese, Japanese and Korean e2e screenshots show text, not boxes.
$want_test_tools && debian_packages+=(fonts-wqy-microhei)
# PulseAudio's null sink is the live tests' real-time audio loop (ALSA's default reaches it).
$want_test_tools && debian_packages+=(pulseaudio pulseaudio-utils libasound2-plugins)
missing=()
for pkg in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_if_needed apt-get update -qq
  DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

command -v cargo >/dev/null || { echo "setup: Rust is missing: install it with rustup (https://rustup.rs)" >&2; exit 1; }
# The test build lints through clippy-driver (Makefile, build-test); rustup's minimal profile
# leaves Clippy out.
if ! clippy-driver --version >/dev/null 2>&1; then
  echo "setup: installing Clippy"
  rustup component add clippy
fi
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if ((node_major < 20)); then
  echo "setup: Node.js 20 or newer is needed (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

python_inputs=$(cat requirements.txt requirements-reference.txt | sha256sum | cut -c1-16)
if [[ ! -x .venv/bin/python || "$(cat $stamps/venv 2>/dev/null)" != "$python_inputs" ]]; then
  echo "setup: creating .venv (torch for libtorch; a large download the first time)"
  python3 -m venv .venv
  # uv installs the wheels in parallel and hard-links them from its cache (~/.cache/uv): 35 s
  # the first time, seconds after, against 3 minutes for pip unpacking torch's CUDA libraries.
  .venv/bin/pip install -q --disable-pip-version-check uv==0.13.9
  uv_install() { .venv/bin/uv pip install -q --python .venv/bin/python "$@"; }
  uv_install -r requirements.txt
  # The reference RVC code the training parity tests compare with; only its model and loss
  # modules are imported, so none of its app dependencies (web server, audio devices) are needed.
  uv_install --no-deps -r requirements-reference.txt
  echo "$python_inputs" > $stamps/venv
fi

npm_inputs=$(cat package.json package-lock.json | sha256sum | cut -c1-16)
if [[ ! -d node_modules || "$(cat $stamps/npm 2>/dev/null)" != "$npm_inputs" ]]; then
  echo "setup: installing npm packages"
  # Not `npm ci`: npm 11 leaves other platforms' optional packages out of the lock file it
  # writes, and `npm ci` then refuses that lock. This installs the locked versions, writes nothing.
  npm install --no-save --no-audit --no-fund --loglevel=error
  echo "$npm_inputs" > $stamps/npm
fi

if $want_test_tools && ! tauri-driver --help >/dev/null 2>&1; then
  echo "setup: installing tauri-driver"
  cargo install --locked --quiet tauri-driver --version 2.1.0
fi
