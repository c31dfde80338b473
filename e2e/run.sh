#!/usr/bin/env bash
# Runs the end-to-end test against a built app binary, in a real window under Xvfb, driven by
# tauri-driver + WebKitWebDriver. The app's data folder is a fresh temporary directory.
# Then the setup wizard's journey against the fake Hugging Face hub (tests/examples/fake_hub,
# built by `cargo test --workspace`; scripts/test.sh places it) with its own fresh data folder.
# Then "I already have the files" on a plain copy of that checkpoint (adopt.e2e.mjs).
# Then the dashboards and Settings › Memory on a synthetic checkpoint with a packed trunk
# (dashboards.e2e.mjs; `k3 synth` + `k3 pack` from target/debug/k3, built by `cargo test`).
# Then the queue journey on the demo model (queue.e2e.mjs: import, SIGKILL mid-queue, pause).
# Then tools in the window (tools.e2e.mjs: an MCP server added, a call allowed, SIGKILL while a
# call waits, denied).
# Usage: bash e2e/run.sh target/release/k3-desktop (CI: the release bundle's binary; a dev build works too)
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

# The app inherits its environment from tauri-driver: each journey with its own environment
# gets a new one.
restart_driver() {
  kill $driver 2>/dev/null || true
  wait $driver 2>/dev/null || true
  tauri-driver --port 4444 >> "$log" 2>&1 &
  driver=$!
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/4444) 2>/dev/null && break; sleep 0.1; done
}

# The queue journey: a fresh data folder on the bundled demo model (it compares its answers with the
# chat journey's golden reply, so it runs after it).
queue_data=$(mktemp -d -p "$PWD/target")
export K3APP_DATA_DIR="$queue_data/app"
restart_driver
node e2e/queue.e2e.mjs "$app" "$queue_data/app"
rm -rf "$queue_data"

# The tools journey: a fresh data folder on the demo model, and the reference MCP filesystem server
# from npm (tools/mcp-servers, installed by scripts/deps.sh test) reading a folder of its own.
tools_data=$(mktemp -d -p "$PWD/target")
mkdir -p "$tools_data/files"
echo "A note for the tools journey." > "$tools_data/files/note.txt"
export K3APP_DATA_DIR="$tools_data/app"
restart_driver
node e2e/tools.e2e.mjs "$app" "$tools_data/app" "$PWD/tools/mcp-servers/node_modules/.bin/mcp-server-filesystem" "$tools_data/files"
rm -rf "$tools_data"

# The setup journey: a throttled hub (0.1 MB/s per file) that drops one connection once, serving
# the demo model's files (so the downloaded copy must answer exactly as the bundled demo did).
hub_bin=target/debug/examples/fake_hub
setup_data=$(mktemp -d)
store=$(mktemp -d -p "$PWD/target")
"$hub_bin" --model k3-demo --rate 0.1 --drop-once model-00003-of-000009.safetensors > "$setup_data/hub.url" &
hub=$!
trap 'kill $driver $hub 2>/dev/null || true; rm -rf "$setup_data" "$store"; [ -n "${K3_E2E_DATA_DIR:-}" ] || rm -rf "$data"' EXIT
for _ in $(seq 1 100); do [ -s "$setup_data/hub.url" ] && break; sleep 0.1; done
export K3APP_DATA_DIR="$setup_data/app" HF_ENDPOINT=$(cat "$setup_data/hub.url") HF_HOME="$setup_data/hf"
export K3APP_REPO=moonshotai/Kimi-K3-tiny K3APP_SPEED_SECONDS=1 K3APP_SPEED_SCRATCH_MB=128
restart_driver
node e2e/setup.e2e.mjs "$app" "$store/Kimi-K3-tiny"

# The adopt journey: a fresh data folder, and a plain copy of the checkpoint the hub serves.
adopt=$(mktemp -d -p "$PWD/target")
trap 'kill $driver $hub 2>/dev/null || true; rm -rf "$setup_data" "$store" "$adopt"; [ -n "${K3_E2E_DATA_DIR:-}" ] || rm -rf "$data"' EXIT
find fixtures/k3-demo -maxdepth 1 -type f -exec cp {} "$adopt/" \;
export K3APP_DATA_DIR="$setup_data/adopt-app"
restart_driver
node e2e/adopt.e2e.mjs "$app" "$adopt"

# The dashboards journey: a synthetic checkpoint whose trunk streams from its packed copy.
synth=$(mktemp -d -p "$PWD/target")
trap 'kill $driver $hub 2>/dev/null || true; rm -rf "$setup_data" "$store" "$adopt" "$synth"; [ -n "${K3_E2E_DATA_DIR:-}" ] || rm -rf "$data"' EXIT
k3=${K3_CLI:-target/debug/k3}
"$k3" synth --out "$synth/model" --vocab 768 --seed 7 > /dev/null
"$k3" pack --model "$synth/model" --out "$synth/model/.k3-desktop/trunk" > /dev/null 2>&1
export K3APP_DATA_DIR="$synth/app" K3_MODEL_DIR="$synth/model"
restart_driver
node e2e/dashboards.e2e.mjs "$app"

# The remote-backend journey: `k3 serve` on loopback with a key, the app added to it in Settings ›
# Backends. Afterwards the key must be in no file of the app's data folder but its own key file
# (the history, the WAL, backends.json, the log).
remote=$(mktemp -d -p "$PWD/target")
trap 'kill $driver $hub ${serve:-} 2>/dev/null || true; rm -rf "$setup_data" "$store" "$adopt" "$synth" "$remote"; [ -n "${K3_E2E_DATA_DIR:-}" ] || rm -rf "$data"' EXIT
remote_key="sk-e2e-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
"$k3" serve --model fixtures/k3-demo --port 0 --api-key "$remote_key" > "$remote/serve.out" 2> "$remote/serve.err" &
serve=$!
for _ in $(seq 1 200); do grep -q '^listening on ' "$remote/serve.out" 2>/dev/null && break; sleep 0.1; done
remote_url="$(sed -n 's/^listening on //p' "$remote/serve.out")/v1"
unset K3_MODEL_DIR
export K3APP_DATA_DIR="$remote/app"
restart_driver
node e2e/remote.e2e.mjs "$app" "$remote_url" "$remote_key"
if grep -rlF --exclude-dir=backend-keys "$remote_key" "$remote/app"; then
  echo "the remote backend's API key was written to the files above" >&2
  exit 1
fi
test -n "$(ls "$remote/app/logs" 2>/dev/null)" || { echo "no app log in $remote/app/logs to check for the key" >&2; exit 1; }
