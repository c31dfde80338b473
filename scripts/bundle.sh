#!/usr/bin/env bash
# Builds the desktop app's .deb (release build through the Tauri CLI pinned in ui/) and checks
# that it holds the binary, the desktop entry, an icon and the bundled demo model.
# Prints the path of the .deb. Needs scripts/deps.sh run first.
# CI bundles the release build and runs the e2e journeys on its binary (issue 44: 430 s to build
# from nothing on the 2-core AMD EPYC; it was ~13 min on the Zen 1 machines before).
# `--debug` bundles the dev-profile build instead (target/debug/k3-desktop: opt-level 2 with
# debug assertions, the profile every Rust test runs in), for a quick look at the package. The
# debug binary is built with the workspace's feature set (`cargo build --workspace`, as
# `cargo test --workspace` resolves it: Tauri's custom-protocol is on in Cargo.toml), so after
# the tests it only links, and `tauri bundle` packages it; `tauri build -p k3-desktop` alone
# resolved other features and rebuilt Tauri, zbus and rustix (~4 min).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
if [ "${1:-}" = --debug ]; then
  profile=debug
fi
if [ "$profile" = debug ]; then
  # The UI the binary embeds (built already in a test run: building it again would only make
  # the app recompile).
  [ -f ui/dist/index.html ] || npm --prefix ui run build
  cargo build --workspace --locked --bins --examples
  (cd src-tauri && ../ui/node_modules/.bin/tauri bundle --debug --bundles deb)
else
  (cd src-tauri && ../ui/node_modules/.bin/tauri build --bundles deb)
fi
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
