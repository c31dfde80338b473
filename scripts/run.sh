#!/usr/bin/env bash
# The project's main job (README "Run"). Until the desktop app lands, this builds the `k3`
# command and opens an interactive chat with the bundled tiny same-graph model (or with
# K3_MODEL_DIR, a folder holding a real checkpoint's config.json, shards and tokenizer files).
set -euo pipefail
cd "$(dirname "$0")/.."
model="${K3_MODEL_DIR:-fixtures/tiny-mxfp4}"
cargo build --release --locked -p k3
exec ./target/release/k3 chat --model "$model" --max-tokens "${K3_MAX_TOKENS:-64}" "$@"
