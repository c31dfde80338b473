#!/usr/bin/env bash
# Builds the desktop app's .deb (release build through the Tauri CLI pinned in ui/) and checks
# that it holds the binary, the desktop entry, an icon and the bundled demo model.
# Prints the path of the .deb. Needs scripts/deps.sh run first.
# `--debug` bundles the dev-profile build instead (target/debug/k3-desktop: opt-level 2 with
# debug assertions, the profile every Rust test runs in). CI does that: the release build of
# the whole app is ~13 min on a 2-core machine, a quarter of CI's budget, while the package's
# layout and the app in it are the same; the kernels, where release codegen differs, are
# tested in the release profile on their own (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
flags=()
if [ "${1:-}" = --debug ]; then
  profile=debug
  flags=(--debug)
fi
(cd src-tauri && ../ui/node_modules/.bin/tauri build "${flags[@]}" --bundles deb)
deb=$(ls -t "target/$profile/bundle/deb/"*.deb | head -1)
contents=$(dpkg-deb -c "$deb")
for want in " usr/bin/k3-desktop$" " usr/share/applications/.*\.desktop$" " usr/share/icons/hicolor/128x128/apps/k3-desktop.png$" \
  "demo-model/config.json$" "demo-model/model-00009-of-000009.safetensors$" "demo-model/tiktoken.model$"; do
  grep -q -- "$want" <<< "$contents" || { echo "$deb lacks $want" >&2; exit 1; }
done
if grep -q "demo-model/golden" <<< "$contents"; then echo "$deb carries test goldens" >&2; exit 1; fi
# Issue 19: the demo model stays within 30 MB (dpkg-deb -c's third column is the size).
demo_bytes=$(awk '/demo-model\// { sum += $3 } END { print sum + 0 }' <<< "$contents")
if [ "$demo_bytes" -gt 30000000 ]; then echo "$deb: the demo model is $demo_bytes bytes, over 30 MB" >&2; exit 1; fi
echo "demo model in the bundle: $demo_bytes bytes"
echo "bundle ok: $deb ($(stat -c %s "$deb") bytes)"
