#!/usr/bin/env bash
# The other systems the app ships for, proven as far as this Linux x86-64 machine can
# (issue 42; docs/decisions/2026-12-06-other-systems.md). Run by scripts/test.sh after the
# Linux tests; needs what `scripts/deps.sh test` installs (qemu-user, the aarch64 and
# mingw-w64 cross compilers, Wine) and the Rust targets .ci/run adds.
#   aarch64-unknown-linux-gnu  the engine under qemu-aarch64: the NEON twins (release and
#                              test profiles), the codec, the engine's unit tests, and from
#                              the engine's test binary the goldens (gates), the byte
#                              identity across bodies, threads and chunks (determinism) and
#                              across cache sizes (streaming).
#   x86_64-pc-windows-gnu      clippy of every crate but the app; under Wine: the engine's unit
#                              tests and twins, the whole k3 CLI suite, and from the engine's
#                              test binary the unbuffered reader on real files (reader), the
#                              checkpoint checks, storage faults, resume and streaming.
#   aarch64-apple-darwin       clippy of every crate that builds without Apple's SDK.
# Each part prints its wall time; any failure fails the run. Usage: [PART ...].
set -euo pipefail
cd "$(dirname "$0")/.."

timed() {
  local name=$1 t0
  shift
  t0=$(date +%s)
  "$@"
  echo "other systems: $name $(( $(date +%s) - t0 )) s"
}

aarch64_linux() {
  local t=aarch64-unknown-linux-gnu
  cargo test --locked --target $t -p k3-io -p k3-kernels -p k3-engine -p k3-codec
  cargo test --locked --release --target $t -p k3-kernels --test twins
  # Without `full`, k3-tests builds the engine's suites alone: no network, TLS or SQLite stack.
  cargo test --locked --target $t -p k3-tests --no-default-features --test k3 -- gates:: determinism:: streaming::
}

# A private Wine prefix with the ProcessPrng stand-in Wine 8 lacks (scripts/wine/).
wine_prefix() {
  # No Mono or Gecko install prompt: the tests need neither .NET nor the HTML engine.
  export WINEPREFIX="$PWD/target/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
  local dll="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
  if [ ! -f "$dll" ]; then
    wineboot --init >/dev/null 2>&1 || true
    x86_64-w64-mingw32-gcc -O2 -shared -o "$dll" scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -ladvapi32
  fi
}

windows() {
  local t=x86_64-pc-windows-gnu
  cargo clippy --locked --target $t --workspace --exclude k3-desktop --all-targets -- -D warnings
  wine_prefix
  cargo test --locked --target $t -p k3-io -p k3-kernels -p k3-engine
  cargo test --locked --target $t -p k3 --test integration
  cargo test --locked --target $t -p k3-tests --no-default-features --test k3 -- reader:: checkpoint_format:: io_faults:: resume:: streaming:: expert_crc::
}

# ring (rustls's crypto) compiles C that includes Apple's SDK headers, so the crates that
# reach it (k3-store, k3-bench, k3-remote, k3-app, k3, k3-desktop; k3-server's tests; k3-tests
# with `full`) are not checked here; k3-server's library and k3-tests without `full` are.
macos() {
  local t=aarch64-apple-darwin
  cargo clippy --locked --target $t -p k3-plan -p k3-plan-wasm -p k3-codec -p k3-io -p k3-kernels -p k3-engine -p k3-constrain -p k3-runtime \
    --all-targets -- -D warnings
  cargo clippy --locked --target $t -p k3-server -- -D warnings
  # The engine's suites alone (no `full`) reach no ring: gates, streaming, the reader, faults.
  cargo clippy --locked --target $t -p k3-tests --no-default-features --all-targets -- -D warnings
}

# Parts by name (default: all): aarch64_linux windows macos.
for part in "${@:-aarch64_linux windows macos}"; do
  for p in $part; do timed "$p" "$p"; done
done
