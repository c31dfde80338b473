#!/usr/bin/env bash
# The longer fuzz campaign (outside CI; benches/results/fuzz-campaign.md): every target of
# fuzz/, one at a time on one core, for K3_CAMPAIGN_SECONDS each (default 300) or until
# K3_CAMPAIGN_RUNS executions (default: no count; 10000000 for issue 44's campaign), over its
# committed corpus; prints per target the executions, libFuzzer's final cov/ft and whether
# it found anything. Build first (scripts/fuzz.sh builds; K3_FUZZ_SECONDS=0 only builds
# and runs each target once over its corpus).
# Env: K3_CAMPAIGN_SECONDS, K3_CAMPAIGN_RUNS, K3_FUZZ_TARGETS (subset), K3_CAMPAIGN_DIR (default a temp dir:
# grown corpora, logs and any crash inputs are kept there, never in the repository),
# CARGO_TARGET_DIR (as for scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${K3_CAMPAIGN_SECONDS:-300}
runs=${K3_CAMPAIGN_RUNS:+-runs=$K3_CAMPAIGN_RUNS}
out=${K3_CAMPAIGN_DIR:-$(mktemp -d)}
target_dir=${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/fuzz}
bin=${target_dir:-fuzz/target}/x86_64-unknown-linux-gnu/release
targets=${K3_FUZZ_TARGETS:-$(ls fuzz/corpus)}
echo "| target | seconds | executions | exec/s | cov | ft | corpus | findings |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for t in $targets; do
    mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
    timeout=1
    [ "$t" = chat_template ] && timeout=10 # as scripts/fuzz.sh's unit_timeout
    max_len=0
    [ "$t" = trunk_codec ] && max_len=1024 # as scripts/fuzz.sh's max_len
    dict=()
    [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict") # as scripts/fuzz.sh
    began=$(date +%s)
    if "$bin/$t" "$out/corpus/$t" "fuzz/corpus/$t" "${dict[@]}" -max_total_time="$seconds" $runs -rss_limit_mb=2048 -timeout=$timeout -max_len=$max_len \
        -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" >"$out/$t.log" 2>&1; then
        found=none
    else
        found="crash: $(ls "$out/artifacts/$t" | tr '\n' ' ')"
    fi
    took=$(($(date +%s) - began))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$t.log" | tail -1)
    last=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$out/$t.log" | tail -1 || true)
    read -r _ cov _ ft _ corp <<<"${last:-- - - - - -}"
    echo "| \`$t\` | $took | ${execs:-?} | ${rate:-?} | $cov | $ft | $corp | $found |"
done
echo "campaign dir: $out" >&2
