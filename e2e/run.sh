#!/usr/bin/env bash
# Runs the end-to-end test against a built app binary, in a real window under Xvfb, driven by
# tauri-driver + WebKitWebDriver. The app's data folder is a fresh temporary directory.
# Usage: bash e2e/run.sh target/debug/k3-desktop
set -euo pipefail
cd "$(dirname "$0")/.."
app=$(realpath "$1")
data=${K3_E2E_DATA_DIR:-$(mktemp -d)}
log=target/e2e-screenshots/tauri-driver.log
mkdir -p target/e2e-screenshots
export K3APP_DATA_DIR="$data"
unset K3_MODEL_DIR
tauri-driver --port 4444 > "$log" 2>&1 &
driver=$!
trap 'kill $driver 2>/dev/null || true; [ -n "${K3_E2E_DATA_DIR:-}" ] || rm -rf "$data"' EXIT
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/4444) 2>/dev/null && break; sleep 0.1; done
node e2e/chat.e2e.mjs "$app"
