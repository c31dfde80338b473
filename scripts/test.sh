#!/usr/bin/env bash
# The project's test command (README "Test"): formatting, lints, then every test.
# Needs only the Rust toolchain with rustfmt and clippy; fixtures are in the repository and
# ../shared/fixtures/released beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
