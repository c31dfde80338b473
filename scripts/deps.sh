#!/usr/bin/env bash
# Installs what the desktop app needs on a fresh Debian machine, skipping what is present.
#   bash scripts/deps.sh run    system libraries to build the app, the wasm32 Rust target, the UI's npm packages
#   bash scripts/deps.sh test   the same, plus Xvfb, WebKitWebDriver and tauri-driver for
#                               the end-to-end test in a real window, and Debian's Chromium
#                               for ui/tests/browser.mjs (playwright-core never downloads one),
#                               and gnome-keyring (a Secret Service for scripts/keyring-test.sh),
#                               the OpenAI and Anthropic Python clients, Claude Code and the
#                               reference MCP servers (npm),
#                               and for scripts/other-systems.sh qemu-user, the aarch64 and
#                               mingw-w64 cross compilers, Wine and the three Rust targets
# Needs root (or sudo) only when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-run}"

packages=(libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev libsoup-3.0-dev
  libxdo-dev libssl-dev pkg-config fonts-dejavu-core)
if [ "$mode" = test ]; then
  packages+=(xvfb xauth webkit2gtk-driver chromium gnome-keyring)
  # The other systems (scripts/other-systems.sh): aarch64 under qemu, Windows under Wine.
  packages+=(qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-mingw-w64-x86-64 wine wine64)
fi
if [ "$mode" = run ] && [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  packages+=(xvfb xauth)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v node >/dev/null || { echo "Node.js 20+ and npm are needed for the UI build" >&2; exit 1; }
# The UI build compiles the memory planner to wasm (scripts/build-wasm.sh); a no-op when present.
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
# npm ci only when the lockfile changed since the last install.
if [ ! -f ui/node_modules/.package-lock.json ] || ! cmp -s ui/package-lock.json ui/node_modules/.k3-installed-lock; then
  (cd ui && npm ci --no-audit --no-fund && cp package-lock.json node_modules/.k3-installed-lock)
fi

if [ "$mode" = test ]; then
  # The official OpenAI Python client, for cli/tests/integration/serve.rs (AP-18); CI has PyPI. A
  # Debian system Python refuses plain pip installs (PEP 668): then say so explicitly.
  if ! python3 -c "import openai" 2>/dev/null; then
    python3 -m pip install --quiet "openai>=1.40" 2>/dev/null \
      || python3 -m pip install --quiet --break-system-packages "openai>=1.40"
  fi
  # And Anthropic's, for the same tests' /v1/messages tool loop.
  if ! python3 -c "import anthropic" 2>/dev/null; then
    python3 -m pip install --quiet "anthropic>=0.40" 2>/dev/null \
      || python3 -m pip install --quiet --break-system-packages "anthropic>=0.40"
  fi
  # A real agent client for the same tests: Claude Code's native binary, from npm (its
  # install script only copies that binary; the test runs it from its platform package).
  if [ ! -f tools/agents/node_modules/.package-lock.json ] \
    || ! cmp -s tools/agents/package-lock.json tools/agents/node_modules/.k3-installed-lock; then
    (cd tools/agents && npm ci --no-audit --no-fund --ignore-scripts && cp package-lock.json node_modules/.k3-installed-lock)
  fi
  # Real MCP servers for k3-app's tool tests: the reference filesystem and "everything"
  # servers, pinned in tools/mcp-servers (Node runs them; nothing of theirs is built).
  if [ ! -f tools/mcp-servers/node_modules/.package-lock.json ] \
    || ! cmp -s tools/mcp-servers/package-lock.json tools/mcp-servers/node_modules/.k3-installed-lock; then
    (cd tools/mcp-servers && npm ci --no-audit --no-fund --ignore-scripts && cp package-lock.json node_modules/.k3-installed-lock)
  fi
  command -v tauri-driver >/dev/null || cargo install tauri-driver --locked --version 2.1.0
  # The Rust standard libraries of the other systems' targets (no-ops when present).
  for t in aarch64-unknown-linux-gnu x86_64-pc-windows-gnu aarch64-apple-darwin; do
    rustup target list --installed | grep -qx "$t" || rustup target add "$t"
  done
fi
