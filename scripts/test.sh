#!/usr/bin/env bash
# The project's test command (README "Test"): formatting, lints, then every test.
# Needs only the Rust toolchain with rustfmt and clippy; fixtures are in the repository and
# ../shared/fixtures/released beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
cargo test --workspace --locked 2>&1 | tee "$log"
# cargo prints one "test result" line per test binary (the last ones are empty doc-test
# runs); close with the totals so the summary is the last line.
echo "test wall time: $(( $(date +%s) - start )) s"
awk '/^test result:/ { p += $4; f += $6; s += $8 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
