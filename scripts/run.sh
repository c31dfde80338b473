#!/usr/bin/env bash
# The project's main job (README "Run"). Until the desktop app lands, this builds the `k3`
# command and generates from the bundled tiny same-graph model (or from K3_MODEL_DIR, a
# folder holding a real checkpoint's config.json and shards).
set -euo pipefail
cd "$(dirname "$0")/.."
model="${K3_MODEL_DIR:-fixtures/tiny-mxfp4}"
cargo build --release --locked -p k3
ids="${K3_PROMPT_IDS:-$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["prompt_ids"])))' fixtures/tiny-mxfp4/golden/golden.json)}"
exec ./target/release/k3 run --model "$model" --ids "$ids" --gen "${K3_GEN:-20}" "$@"
