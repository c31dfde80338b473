#!/usr/bin/env bash
# The project's test command (README "Test"). On a fresh Debian machine it installs what is
# missing (scripts/deps.sh test), then: the UI's type check, build and unit tests (Vitest);
# formatting and lints; every Rust test (engine, CLI, desktop app: IPC, history, worker,
# contract); the kernel twins again in the release profile; every fuzz target for 30 s
# (scripts/fuzz.sh: nightly, cargo-fuzz installed when missing); the .deb bundle (release
# build, contents checked); and the end-to-end test of that release binary in a real window
# under Xvfb.
# Fixtures are in the repository and ../shared/fixtures/released beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$(date +%s)

(cd ui && npm run build && npx vitest run) 2>&1 | tee "$logs/ui.log"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked 2>&1 | tee "$logs/cargo.log"
# The kernel twins once more as the app ships them (release profile): SIMD codegen — stack
# realignment, inlining — differs between profiles, and a release-only crash has happened.
cargo test --release --locked -p k3-tests kernels_twins 2>&1 | tee "$logs/kernels-release.log"
# Every fuzz target over its committed corpus (K3_FUZZ_SECONDS each, default 30); any crash fails.
bash scripts/fuzz.sh 2>&1 | tee "$logs/fuzz.log"
bash scripts/bundle.sh
cargo build --locked -p k3-tests --example fake_hub
xvfb-run -a -s "-screen 0 1280x800x24" bash e2e/run.sh target/release/k3-desktop 2>&1 | tee "$logs/e2e.log"

echo "test wall time: $(( $(date +%s) - start )) s"
# cargo prints one "test result" line per test binary; Vitest one "Tests" line; the e2e
# script "N passed, N failed". Close with the totals so the summary is the last line.
sed 's/\x1b\[[0-9;]*m//g' "$logs/ui.log" "$logs/cargo.log" "$logs/kernels-release.log" "$logs/e2e.log" | awk '
  /^test result:/ { p += $4; f += $6; s += $8 }
  /^ *Tests +[0-9]+ passed/ { for (i = 1; i <= NF; i++) if ($i ~ /^passed/) p += $(i-1) }
  /^ *Tests .*[0-9]+ failed/ { for (i = 1; i <= NF; i++) if ($i ~ /^failed/) f += $(i-1) }
  /^[0-9]+ passed, [0-9]+ failed$/ { p += $1; f += $3 }
  END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }
'
