#!/usr/bin/env bash
# The fuzz step of CI (RELIABILITY §3–4; ARCHITECTURE "Fuzzing"): installs cargo-fuzz when
# missing, builds every target of fuzz/ once (nightly, libFuzzer + ASan, debug assertions
# and overflow checks), then runs each target for K3_FUZZ_SECONDS (default 30; K3_FUZZ_JOBS at a time, one per core by default) over its
# committed corpus fuzz/corpus/<target>, failing on any crash, timeout (> 1 s per input;
# chat_template 10 s, see unit_timeout) or out-of-memory (> 2 GB). Prints each target's executions and coverage.
# New corpus entries and crash artifacts go to a temp dir, never into the repository; on a
# failure that dir is kept and its path printed.
# Env: K3_FUZZ_SECONDS (per target), K3_FUZZ_TARGETS (space-separated subset),
#      CARGO_TARGET_DIR (the build goes to $CARGO_TARGET_DIR/fuzz, default fuzz/target).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${K3_FUZZ_SECONDS:-30}
start=$(date +%s)

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
# cargo fuzz needs nightly flags; a stable toolchain can be told it is nightly
# (RELIABILITY §4: both verified).
if cargo +nightly --version >/dev/null 2>&1; then
    fuzz=(cargo +nightly fuzz)
else
    export RUSTC_BOOTSTRAP=1
    fuzz=(cargo fuzz)
fi
target_dir=${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/fuzz}
target_dir=${target_dir:-fuzz/target}
triple=x86_64-unknown-linux-gnu

"${fuzz[@]}" build --fuzz-dir fuzz --target-dir "$target_dir"
built=$(date +%s)
echo "fuzz build: $((built - start)) s"

# Seconds one input may take: 1 (RELIABILITY §3), except chat_template, whose minijinja
# runs over 10x slower under ASan and debug assertions than in the release engine (its
# worst seed: 1.2 s here, < 0.1 s in the test profile, where tests/fuzz_findings.rs holds
# it under 1 s).
unit_timeout() { if [ "$1" = chat_template ]; then echo 10; else echo 1; fi; }
# Largest input: libFuzzer's guess from the corpus (0), except trunk_codec, whose every input
# is one coded block decoded four times and checked against the bit-by-bit reference: at
# 6 KB inputs it ran 568 inputs/s, at 1 KiB 1,160, with the same coverage in 15 s (a block
# is 1 MiB of raw bytes, so no input of either size reaches a second one).
max_len() { if [ "$1" = trunk_codec ]; then echo 1024; else echo 0; fi; }

work=$(mktemp -d)
keep=0
trap '[ "$keep" = 1 ] || rm -rf "$work"' EXIT
targets=${K3_FUZZ_TARGETS:-$("${fuzz[@]}" list --fuzz-dir fuzz)}
# Runs one target; its status (ok or FAILED) goes to $work/$t.status, its output to $work/$t.log.
run_target() {
    local t=$1 status=ok
    mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
    # The target's words (fuzz/make_dicts.py), where its input has any.
    local dict=()
    [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
    # The first corpus dir receives new inputs: the temp one. The committed one is read.
    "$target_dir/$triple/release/$t" "$work/corpus/$t" "fuzz/corpus/$t" "${dict[@]}" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout="$(unit_timeout "$t")" -max_len="$(max_len "$t")" -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/$t/" >"$work/$t.log" 2>&1 || status=FAILED
    echo "$status" >"$work/$t.status"
}

# Each libFuzzer run is one process on one core: K3_FUZZ_JOBS of them at a time (default: one
# per core), so the step takes the targets' seconds divided by the cores, not their sum.
jobs=${K3_FUZZ_JOBS:-$(nproc)}
for t in $targets; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    run_target "$t" &
done
wait

failed=()
summary=()
for t in $targets; do
    status=$(cat "$work/$t.status" 2>/dev/null || echo FAILED)
    [ "$status" = ok ] || failed+=("$t")
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
    cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$work/$t.log" | tail -1 || true)
    line=$(printf '%-18s %-6s %12s execs  %s' "$t" "$status" "${execs:-?}" "${cov:-}")
    echo "$line"
    summary+=("$line")
    if [ "$status" = FAILED ]; then
        grep -E 'ERROR|panicked|SUMMARY|Test unit written' "$work/$t.log" | head -20 || true
    fi
done

echo "fuzz wall time: $(($(date +%s) - start)) s (build $((built - start)) s, ${seconds} s per target, $jobs at a time)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    keep=1
    echo "fuzz: ${failed[*]} failed; logs and crash inputs are in $work" >&2
    exit 1
fi
