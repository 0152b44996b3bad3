#!/usr/bin/env bash
# The minimal siw smoke check: our `iwarp rping` client against Linux siw's
# `rping -s`, and siw's `rping -c -V` against our `iwarp rping -s`, data
# verified on both sides, in the project's siw VM (interop/siw-vm.sh; SIW_VM
# names another; the first run builds it, see docs/interop.md).
#
#   bash interop/siw-smoke.sh            # from the repository root, as root
#
# Each case passes only if our side verified the data, the siw tool exited 0
# having printed every ping, and no kernel BUG/oops was logged in the guest.
# Prints one summary line: SIW-SMOKE: n passed, m failed, k skipped (reason).
set -uo pipefail
cd "$(dirname "$0")/.."
VM=${SIW_VM:-interop/siw-vm.sh}
OUT=${OUT:-/tmp/siw-smoke}
COUNT=${COUNT:-5}
mkdir -p "$OUT"
pass=0 fail=0 skip=0 why=""

summary() {
  local s="SIW-SMOKE: $pass passed, $fail failed, $skip skipped"
  [ -n "$why" ] && s="$s ($why)"
  echo "$s"
}

if [ ! -x "$VM" ] || [ "$(id -u)" != 0 ]; then
  skip=2 why="needs root and $VM"; summary; exit 0
fi
if ! "$VM" build >"$OUT/build.log" 2>&1; then
  skip=2 why="VM build failed, see $OUT/build.log"; summary; exit 0
fi
go build -o "$OUT/iwarp" ./cmd/iwarp || { fail=2; why="build failed"; summary; exit 1; }

verdict() { # name ok
  if [ "$2" = 1 ]; then pass=$((pass + 1)); echo "PASS $1"; else fail=$((fail + 1)); echo "FAIL $1 (logs in $OUT)"; fi
}

guest_clean() { ! grep -a -q -E "kernel BUG|Oops|siw.*(error|Terminate)" "$1"; }

# Case 1: our client -> siw rping -s (host 127.0.0.1:17000 forwards to the guest's 7000).
TIMEOUT=150 "$VM" run "rping -s -a 10.0.2.15 -p 7000 -v -C $COUNT; echo RPING_EXIT=\$?; dmesg | tail -30" >"$OUT/case1-guest.log" 2>&1 &
vm=$!
# Wait until the guest runs the command: QEMU accepts on the forwarded port
# long before the guest listens, and closes such connections at once.
for _ in $(seq 1 120); do
  grep -a -q "running /mnt/host/cmd.sh" "$OUT/case1-guest.log" 2>/dev/null && break
  sleep 1
done
sleep 3
ok=0
for _ in $(seq 1 20); do
  if "$OUT/iwarp" rping -c -a 127.0.0.1 -p 17000 -C "$COUNT" -S 64 -v -V >"$OUT/case1-ours.log" 2>&1; then ok=1; break; fi
  grep -q -E "refused|reset|EOF|timed out" "$OUT/case1-ours.log" || break
  sleep 2
done
wait $vm
ours=$(grep -c "^ping data: rdma-ping-" "$OUT/case1-ours.log")
theirs=$(grep -a -c "server ping data: rdma-ping-" "$OUT/case1-guest.log")
if [ $ok = 1 ] && [ "$ours" = "$COUNT" ] && [ "$theirs" = "$COUNT" ] && grep -a -q "RPING_EXIT=0" "$OUT/case1-guest.log" && guest_clean "$OUT/case1-guest.log"; then
  verdict "our rping client -> siw rping -s" 1
else
  verdict "our rping client -> siw rping -s" 0
fi

# Case 2: siw rping -c -V -> our server (the guest dials 10.0.2.2, the host's 127.0.0.1).
PORT=${PORT:-7400}
timeout 150 "$OUT/iwarp" rping -s -a 127.0.0.1 -p "$PORT" -v >"$OUT/case2-ours.log" 2>&1 &
srv=$!
TIMEOUT=150 "$VM" run "sleep 1; rping -c -a 10.0.2.2 -p $PORT -C $COUNT -S 64 -v -V; echo RPING_EXIT=\$?; dmesg | tail -30" >"$OUT/case2-guest.log" 2>&1
wait $srv; srvexit=$?
ours=$(grep -c "^server ping data: rdma-ping-" "$OUT/case2-ours.log")
theirs=$(grep -a -c "^ping data: rdma-ping-" "$OUT/case2-guest.log")
if [ $srvexit = 0 ] && [ "$ours" = "$COUNT" ] && [ "$theirs" = "$COUNT" ] && grep -a -q "RPING_EXIT=0" "$OUT/case2-guest.log" && guest_clean "$OUT/case2-guest.log"; then
  verdict "siw rping -c -V -> our rping server" 1
else
  verdict "siw rping -c -V -> our rping server" 0
fi

summary
[ $fail = 0 ]
