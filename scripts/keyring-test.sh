#!/usr/bin/env bash
# The OS-keyring path of remote backends' API keys against a real Secret Service: run under
# `dbus-run-session` (scripts/test.sh), it starts gnome-keyring's secrets component on that
# private session bus, in throwaway folders, unlocked with a throwaway password, then runs the
# test that needs it (ignored in the plain `cargo test`, which has no session bus).
set -euo pipefail
cd "$(dirname "$0")/.."
XDG_DATA_HOME=$(mktemp -d) XDG_RUNTIME_DIR=$(mktemp -d)
export XDG_DATA_HOME XDG_RUNTIME_DIR
trap 'rm -rf "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"' EXIT
printf 'k3-ci-throwaway' | gnome-keyring-daemon --unlock --components=secrets > /dev/null
# --workspace: the features resolve as for `cargo test --workspace`, so nothing is rebuilt.
cargo test --workspace --locked --test worker -- --ignored --exact keys_go_to_the_system_keyring_when_one_answers
