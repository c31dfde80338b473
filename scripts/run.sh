#!/usr/bin/env bash
# The project's main job (README "Run"): builds and opens the desktop app. It opens the bundled
# demo model (fixtures/k3-demo: 3.8 M parameters, Kimi K3's graph, trained on Jane Austen), or
# K3_MODEL_DIR when set (a folder with a real checkpoint's config.json, shards and tokenizer files). Missing system packages are installed first
# (scripts/deps.sh run). With no display, the app runs on a virtual one (Xvfb :99).
# `bash scripts/run.sh --cli` opens the terminal chat (`k3 chat`) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --cli ]; then
  shift
  cargo build --release --locked -p k3
  exec ./target/release/k3 chat --model "${K3_MODEL_DIR:-fixtures/k3-demo}" --max-tokens "${K3_MAX_TOKENS:-256}" "$@"
fi
bash scripts/deps.sh run
(cd ui && npm run build)
cargo build --release --locked -p k3-desktop
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "No display found: starting the app on the virtual display :99 (Xvfb)."
  echo "See it with: DISPLAY=:99 import -window root shot.png"
  Xvfb :99 -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
  xvfb=$!
  trap 'kill $xvfb 2>/dev/null || true' EXIT
  export DISPLAY=:99
  sleep 0.5
fi
./target/release/k3-desktop "$@"
