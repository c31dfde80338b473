#!/usr/bin/env bash
# Builds the planner's WebAssembly module (plan-wasm/, profile `wasm`: opt-level s, LTO,
# panic = abort, stripped) and copies it to ui/public/k3_plan.wasm, where Vite serves and
# bundles it and Vitest and cli/tests/plan_wasm.rs read it. Run by `npm run build` and
# `npm test` in ui/ (their pre-scripts); the .wasm is built, never committed.
# Needs the wasm32 standard library: `rustup target add wasm32-unknown-unknown` (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
target=wasm32-unknown-unknown
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$target"; then
  echo "build-wasm: the $target target is missing: rustup target add $target" >&2
  exit 1
fi
t0=$(date +%s%N)
cargo build --locked --quiet -p k3-plan-wasm --lib --target "$target" --profile wasm
out="${CARGO_TARGET_DIR:-target}/$target/wasm/k3_plan_wasm.wasm"
mkdir -p ui/public
cp "$out" ui/public/k3_plan.wasm
echo "build-wasm: ui/public/k3_plan.wasm, $(stat -c %s ui/public/k3_plan.wasm) bytes, $(( ($(date +%s%N) - t0) / 1000000 )) ms"
