#!/usr/bin/env bash
# One short protocol run through the harness, its delivery checked (issue 48 part 4): the
# SoftRoCE workflow's protocol steps, and the same lines on any runtime.
#
#   scripts/protocol-run.sh PROTOCOL [OUTDIR]     PROTOCOL: ramcast, tram, ridge or rdmc
#
# Environment: HARNESS (default target/release/harness), RUNTIME (default verbs), DURATION
# (default 2s; not rdmc's, which sends a fixed number of messages).
# RamCast, TRAM and Ridge write their delivery log to OUTDIR/log-PROTOCOL, which the run checks
# against the five atomic multicast properties and `harness verify` then checks again on its own.
# RDMC writes no delivery log: each receiver compares every message with what the root sent, and
# the run must end with "verified: N of N receiver deliveries intact; 0 corrupt, 0 missing".
# The output goes to OUTDIR/run-PROTOCOL.txt (default OUTDIR: .). Any failure exits non-zero.
# Heron is not here: it does not run on verbs yet (the harness refuses it).
set -euo pipefail

protocol="${1:?usage: scripts/protocol-run.sh ramcast|tram|ridge|rdmc [OUTDIR]}"
out="${2:-.}"
harness="${HARNESS:-target/release/harness}"
runtime="${RUNTIME:-verbs}"
duration="${DURATION:-2s}"
[ -x "$harness" ] || { echo "protocol-run: no harness at $harness (HARNESS names it)" >&2; exit 2; }
mkdir -p "$out"
log="$out/log-$protocol"
txt="$out/run-$protocol.txt"

case "$protocol" in
  ramcast) args=(--groups 2 --replicas 3 --clients 4 --dest random:2 --duration "$duration" --log "$log") ;;
  tram) args=(--groups 3 --tree '[-1,0,0]' --clients 4 --dest random:2 --duration "$duration" --log "$log") ;;
  ridge) args=(--groups 2 --replicas 3 --clients 4 --dest random:2 --duration "$duration" --log "$log") ;;
  rdmc) args=(--nodes 4 --size 16MB --block-size 1MB --messages 3) ;;
  heron) echo "protocol-run: Heron does not run on verbs yet; not a step of this script" >&2; exit 2 ;;
  *) echo "protocol-run: unknown protocol $protocol (ramcast, tram, ridge, rdmc)" >&2; exit 2 ;;
esac

rm -rf "$log"
echo "+ $harness run --protocol $protocol --runtime $runtime ${args[*]}"
"$harness" run --protocol "$protocol" --runtime "$runtime" "${args[@]}" 2>&1 | tee "$txt"

if [ "$protocol" = rdmc ]; then
  line=$(grep -E '^verified: ' "$txt" || true)
  intact=$(printf '%s\n' "$line" | sed -n 's/^verified: \([0-9]*\) of [0-9]* receiver deliveries intact; 0 corrupt, 0 missing.*/\1/p')
  total=$(printf '%s\n' "$line" | sed -n 's/^verified: [0-9]* of \([0-9]*\) receiver deliveries intact; 0 corrupt, 0 missing.*/\1/p')
  if [ -z "$intact" ] || [ "$intact" != "$total" ] || [ "$intact" = 0 ]; then
    echo "protocol-run: rdmc did not deliver every message intact: '${line:-no verified line}'" >&2
    exit 1
  fi
  echo "protocol-run: rdmc on $runtime: $intact of $total receiver deliveries intact"
else
  echo "+ $harness verify --log $log"
  "$harness" verify --log "$log" 2>&1 | tee -a "$txt"
  echo "protocol-run: $protocol on $runtime: delivery log $log verified"
fi
