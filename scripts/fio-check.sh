#!/usr/bin/env bash
# fio-check.sh DIR [SECONDS]: checks `k3 bench disk` against fio on the same file and pattern.
#
# Writes a scratch file in DIR (SIZE, default 4G, O_DIRECT, removed on exit), then ROUNDS
# times (default 3), alternating which goes first:
#   k3 bench disk --path FILE --seconds SECONDS --json          (QD1 and QD16)
#   fio --direct=1 --rw=randread --bs=17547264 --blockalign=4096 --ioengine=psync --numjobs=1
#   fio ... --numjobs=16 --group_reporting
# Our QD16 is 16 threads each issuing blocking pread()s of one expert, so fio's equivalent is
# psync × 16 jobs (not libaio iodepth=16). Prints every figure and the medians, and exits 1
# when a median of ours differs from fio's by more than TOLERANCE percent (default 15).
# K3 names the binary (default: target/debug/k3 under the repository, or $CARGO_TARGET_DIR).
set -euo pipefail

dir=${1:?usage: fio-check.sh DIR [SECONDS]}
secs=${2:-10}
rounds=${ROUNDS:-3}
size=${SIZE:-4G}
tolerance=${TOLERANCE:-15}
root=$(cd "$(dirname "$0")/.." && pwd)
k3=${K3:-${CARGO_TARGET_DIR:-$root/target}/debug/k3}
block=17547264

[ -d "$dir" ] || { echo "fio-check: $dir is not a folder" >&2; exit 2; }
[ -x "$k3" ] || { echo "fio-check: no k3 binary at $k3 (build it, or set K3)" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio-check: fio is not installed" >&2; exit 2; }
command -v jq >/dev/null || { echo "fio-check: jq is not installed" >&2; exit 2; }

file="$dir/.k3-fio-check-$$.bin"
trap 'rm -f "$file"' EXIT
trap 'exit 130' INT TERM

echo "writing $size scratch file $file"
fio --name=prep --filename="$file" --rw=write --bs=16m --size="$size" --direct=1 \
    --ioengine=psync --output=/dev/null

# MB/s (10^6) of fio's random one-expert reads with $1 jobs.
fio_mbps() {
    fio --name="qd$1" --filename="$file" --rw=randread --bs=$block --blockalign=4096 \
        --norandommap --direct=1 --ioengine=psync --numjobs="$1" --group_reporting \
        --time_based --runtime="$secs" --output-format=json |
        jq '.jobs[0].read.bw_bytes / 1e6'
}

k3_qd1=() k3_qd16=() fio_qd1=() fio_qd16=()
run_k3() {
    local out
    out=$("$k3" bench disk --path "$file" --seconds "$secs" --json)
    [ "$(jq .direct <<<"$out")" = true ] || { echo "fio-check: k3 did not read with O_DIRECT" >&2; exit 1; }
    k3_qd1+=("$(jq .qd1.mb_per_s <<<"$out")")
    k3_qd16+=("$(jq .qd16.mb_per_s <<<"$out")")
    printf '  k3   QD1 %8.1f MB/s   QD16 %8.1f MB/s\n' "${k3_qd1[-1]}" "${k3_qd16[-1]}"
}
run_fio() {
    fio_qd1+=("$(fio_mbps 1)")
    fio_qd16+=("$(fio_mbps 16)")
    printf '  fio  QD1 %8.1f MB/s   QD16 %8.1f MB/s\n' "${fio_qd1[-1]}" "${fio_qd16[-1]}"
}

for ((r = 1; r <= rounds; r++)); do
    echo "round $r/$rounds (${secs} s per depth)"
    if ((r % 2)); then run_k3; run_fio; else run_fio; run_k3; fi
done

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

status=0
for qd in 1 16; do
    eval "ours=\$(median \"\${k3_qd$qd[@]}\"); theirs=\$(median \"\${fio_qd$qd[@]}\")"
    verdict=$(awk -v a="$ours" -v b="$theirs" -v t="$tolerance" 'BEGIN {
        d = (a - b) / b * 100; printf "%+.1f %%", d; exit (d > t || d < -t) ? 1 : 0 }') || status=1
    printf 'median QD%-2s  k3 %8.1f MB/s   fio %8.1f MB/s   %s\n' "$qd" "$ours" "$theirs" "$verdict"
done
if ((status)); then
    echo "fio-check: k3 and fio differ by more than ${tolerance} %" >&2
fi
exit $status
