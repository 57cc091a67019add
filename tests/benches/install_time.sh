#!/usr/bin/env bash
# Install time: `cargo install --locked --path native` as the README says, into a fresh root
# with an empty target directory (nothing compiled before). By default the crates are already
# downloaded into CARGO_HOME, so the network is not timed; with `--newcomer` CARGO_HOME is empty
# too, as on a machine that never built Rust code: the registry's index and every crate (jp's
# and the nested build's of its WASI component) are downloaded within the timed install.
# Prints the wall-clock and CPU time and the installed binary's size. Takes 8-15 minutes on 2
# cores; run it on a quiet machine.
# Usage: tests/benches/install_time.sh [--newcomer] [extra cargo install arguments]
set -euo pipefail
cd "$(dirname "$0")/../.."
# What a user's install builds: not ./tests/bench's test components.
unset JP_BUILD_GUESTS
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
row=P14
what="fresh install: cargo install --locked --path native, empty target dir (crates already downloaded)"
if [ "${1:-}" = "--newcomer" ]; then
  shift
  # rustup's proxies find the toolchain through RUSTUP_HOME, not CARGO_HOME.
  export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="$scratch/cargo-home"
  row=P14n
  what="a newcomer's install: the same with an empty CARGO_HOME (the index and every crate downloaded, timed)"
else
  cargo fetch --locked >/dev/null
fi
echo "installing into $scratch (empty target dir${CARGO_HOME:+, CARGO_HOME $CARGO_HOME}) on $(nproc) cores…"
TIMEFORMAT='%R %U %S' # bash's own `time`: wall, then user and system CPU of every child
status=0
{ time cargo install --locked --path native --root "$scratch/root" --target-dir "$scratch/target" "$@" \
  >"$scratch/log" 2>&1; } 2>"$scratch/time" || status=$?
if [ "$status" != 0 ]; then tail -30 "$scratch/log"; exit 1; fi
read -r wall user sys <"$scratch/time"
size=$(stat -c %s "$scratch/root/bin/jp")
# One table row (./tests/bench collects `TABLE|` lines): wall-clock time against the CPU time
# it took, so a busy machine shows as a low ratio.
awk -v row="$row" -v what="$what" -v wall="$wall" -v cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" -v size="$size" -v cores="$(nproc)" 'BEGIN {
  printf "install: %d min %02d s wall, %.0f s CPU, jp %.1f MB, %d cores\n", int(wall / 60), int(wall) % 60, cpu, size / 1e6, cores
  printf "TABLE|%s|%s|%d min %02d s wall (jp %.1f MB)|CPU %.0f s on %d cores|%.2fx parallel|<= 10 min|info\n", row, what,
    int(wall / 60), int(wall) % 60, size / 1e6, cpu, cores, cpu / wall }'
