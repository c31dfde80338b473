#!/usr/bin/env bash
# Builds the desktop app's .deb (release build through the Tauri CLI pinned in ui/) and checks
# that it holds the binary, the desktop entry, an icon and the bundled demo model.
# Prints the path of the .deb. Needs scripts/deps.sh run first. The release binary it builds,
# target/release/k3-desktop, is the one the end-to-end test drives (the shipped artifact).
set -euo pipefail
cd "$(dirname "$0")/.."
(cd src-tauri && ../ui/node_modules/.bin/tauri build --bundles deb)
deb=$(ls -t target/release/bundle/deb/*.deb | head -1)
contents=$(dpkg-deb -c "$deb")
for want in " usr/bin/k3-desktop$" " usr/share/applications/.*\.desktop$" " usr/share/icons/hicolor/128x128/apps/k3-desktop.png$" \
  "demo-model/config.json$" "demo-model/model-00014-of-000014.safetensors$" "demo-model/tiktoken.model$"; do
  grep -q -- "$want" <<< "$contents" || { echo "$deb lacks $want" >&2; exit 1; }
done
if grep -q "demo-model/golden" <<< "$contents"; then echo "$deb carries test goldens" >&2; exit 1; fi
echo "bundle ok: $deb ($(stat -c %s "$deb") bytes)"
