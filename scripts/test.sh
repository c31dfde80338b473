#!/usr/bin/env bash
# The project's test command (README "Test"). On a fresh Debian machine it installs what is
# missing (scripts/deps.sh test), then: the UI's type check, build and unit tests (Vitest);
# hostile model output against that production build in Chromium (ui/tests/browser.mjs);
# formatting and lints; every Rust test (engine, CLI, desktop app: IPC, history, worker,
# contract); the keyring test against a real Secret Service; the kernel twins again in the release profile; every fuzz target for 8 s
# (scripts/fuzz.sh: nightly, cargo-fuzz installed when missing); the other systems
# (scripts/other-systems.sh: the engine under qemu-aarch64, the CLI and engine under Wine,
# the macOS check); the .deb bundle (the release build users install, contents checked); and
# the end-to-end journeys of the binary in that bundle in a real window under Xvfb (chat,
# setup, adopt, dashboards, a remote backend, the queue, tools).
# Fixtures are in the repository and ../shared/fixtures/released beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$(date +%s)
# Each part's wall time, printed at the end (the CI budget is judged part by part).
timings=()
timed() {
  local name=$1 t0
  shift
  t0=$(date +%s)
  if ! "$@"; then
    # A failed part says what the machine had left: a linker or compiler that dies with no
    # message of its own is most often a full disk or memory (CI stop 50: lld failed in the fuzz build).
    echo "part failed: $name after $(( $(date +%s) - t0 )) s; disk and memory now:" >&2
    df -h . /tmp >&2 || true
    free -m >&2 || true
    return 1
  fi
  timings+=("$name $(( $(date +%s) - t0 )) s")
}

timed "deps (apt, npm ci, pip, tauri-driver)" bash scripts/deps.sh test
ui_tests() { (cd ui && npm run build && npx vitest run) 2>&1 | tee "$logs/ui.log"; }
ui_browser() { node ui/tests/browser.mjs 2>&1 | tee "$logs/browser.log"; }
rust_tests() { cargo test --workspace --locked 2>&1 | tee "$logs/cargo.log"; }
# The kernel twins once more as the app ships them (release profile): SIMD codegen — stack
# realignment, inlining — differs between profiles, and a release-only crash has happened.
# They live in the engine's own test binary so this build needs the engine alone.
# Remote backends' keys in a real Secret Service (gnome-keyring on a private session bus).
keyring_test() { dbus-run-session -- bash scripts/keyring-test.sh 2>&1 | grep -v 'Failed to set fd limit' | tee "$logs/keyring.log"; }
release_twins() { cargo test --release --locked -p k3-kernels --test twins 2>&1 | tee "$logs/kernels-release.log"; }
# The journeys drive the release build users install (issue 44): the .deb's binary, built by
# `tauri build`. Their helpers (the k3 CLI for synth and pack, the fake Hugging Face hub) are the
# dev-profile builds `cargo test` made, which `e2e_helpers` only links.
e2e_helpers() { cargo build --workspace --locked --bins --examples; }
e2e_journeys() { xvfb-run -a -s "-screen 0 1280x800x24" bash e2e/run.sh target/release/k3-desktop 2>&1 | tee "$logs/e2e.log"; }
# Every fuzz target over its committed corpus (K3_FUZZ_SECONDS each: 8 here, so the whole
# run stays well inside CI's budget; the campaign runs them longer); any crash fails.
# The other systems: aarch64 under qemu, Windows under Wine, macOS checked (issue 42).
other_systems() { bash scripts/other-systems.sh 2>&1 | tee "$logs/other.log"; }
fuzz_targets() { K3_FUZZ_SECONDS=${K3_FUZZ_SECONDS:-8} bash scripts/fuzz.sh 2>&1 | tee "$logs/fuzz.log"; }

timed "ui (build + vitest)" ui_tests
timed "ui in Chromium (hostile replies)" ui_browser
timed "cargo fmt" cargo fmt --all --check
timed "cargo clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
# The suite as qemu-aarch64 and Wine build it (scripts/other-systems.sh): the engine's suites alone.
timed "cargo clippy (k3-tests, the engine's suites alone)" cargo clippy -p k3-tests --no-default-features --all-targets --locked -- -D warnings
# The wasm planner's exports exist only on wasm32: lint them there too.
timed "cargo clippy (wasm32)" cargo clippy --locked -p k3-plan-wasm --target wasm32-unknown-unknown -- -D warnings
timed "cargo test" rust_tests
timed "keyring (Secret Service)" keyring_test
timed "kernel twins (release)" release_twins
timed "fuzz (13 targets)" fuzz_targets
timed "other systems (aarch64 qemu, Windows Wine, macOS check)" other_systems
# The helpers build with --workspace, so the features resolve as they did for `cargo test`,
# which built them already: it only links (-p alone would rebuild Tauri, zbus, rustix … with a
# narrower feature set, ~4 min). The release bundle is the one build CI makes of the whole app in
# the release profile (430 s from nothing on this machine kind, docs/decisions/2026-12-06-tests-and-ci.md).
timed "e2e helpers (dev profile)" e2e_helpers
timed "bundle (.deb, release)" bash scripts/bundle.sh
timed "e2e (7 journeys, release build)" e2e_journeys

printf 'part timings: %s\n' "${timings[@]}"
echo "test wall time: $(( $(date +%s) - start )) s"
# cargo prints one "test result" line per test binary; Vitest one "Tests" line; the browser
# test and the e2e script "N passed, N failed". Close with the totals so the summary is the last line.
sed 's/\x1b\[[0-9;]*m//g' "$logs/ui.log" "$logs/browser.log" "$logs/cargo.log" "$logs/keyring.log" "$logs/kernels-release.log" "$logs/other.log" "$logs/e2e.log" | awk '
  /^test result:/ { p += $4; f += $6; s += $8 }
  /^ *Tests +[0-9]+ passed/ { for (i = 1; i <= NF; i++) if ($i ~ /^passed/) p += $(i-1) }
  /^ *Tests .*[0-9]+ failed/ { for (i = 1; i <= NF; i++) if ($i ~ /^failed/) f += $(i-1) }
  /^[0-9]+ passed, [0-9]+ failed$/ { p += $1; f += $3 }
  END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }
'
