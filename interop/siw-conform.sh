#!/usr/bin/env bash
# Runs the hostile-peer suite (`iwarp conform`) against Linux siw: siw's
# `rping -s -P` (persistent server) in the project's siw VM
# (interop/siw-vm.sh; SIW_VM names another) answers every case's
# connection; the report says, per case, what the spec prescribes and what
# siw did. The guest's kernel log is kept beside it.
#
#   bash interop/siw-conform.sh          # from the repository root, as root
#
# Output in $OUT (default /tmp/siw-conform): conform.txt (the report),
# guest.log (the guest's console and dmesg). siw's rping advertises no
# memory in its MPA Reply, so the cases that need an advertised region are
# reported as skipped; a kernel BUG or oops in the guest is reported.
set -uo pipefail
cd "$(dirname "$0")/.."
VM=${SIW_VM:-interop/siw-vm.sh}
OUT=${OUT:-/tmp/siw-conform}
mkdir -p "$OUT"
if [ ! -x "$VM" ] || [ "$(id -u)" != 0 ]; then
  echo "SIW-CONFORM: skipped (needs root and $VM)"; exit 0
fi
if ! "$VM" build >"$OUT/build.log" 2>&1; then
  echo "SIW-CONFORM: skipped (VM build failed, see $OUT/build.log)"; exit 0
fi
go build -o "$OUT/iwarp" ./cmd/iwarp || exit 1
DUR=${DUR:-900} # upper bound; the guest stops as soon as the suite is done
SHARE=${W:-${HOME:-/root}/.cache/siw-vm}/share # as interop/siw-vm.sh
rm -f "$SHARE/conform.done"
# siw's rping server is restarted whenever a hostile case makes it exit.
TIMEOUT=$((DUR + 120)) "$VM" run "(while :; do rping -s -P -a 10.0.2.15 -p 7000; echo RPING_RESTART; sleep 0.2; done) & for i in \$(seq 1 $DUR); do [ -e /mnt/host/conform.done ] && break; sleep 1; done; echo; echo DMESG; dmesg | grep -a -i -E 'siw|iw_cm|BUG|Oops|RIP' | tail -150" >"$OUT/guest.log" 2>&1 &
vm=$!
for _ in $(seq 1 180); do
  grep -a -q "running /mnt/host/cmd.sh" "$OUT/guest.log" 2>/dev/null && break
  sleep 1
done
sleep 5
"$OUT/iwarp" conform -a 127.0.0.1:17000 -v -wait "${WAIT:-4s}" -startup-wait 15s -dial-retry 10s "$@" >"$OUT/conform.txt" 2>&1
echo "conform exit $?" >>"$OUT/conform.txt"
touch "$SHARE/conform.done"
tail -n 2 "$OUT/conform.txt"
wait $vm
if grep -a -q -E "kernel BUG|Oops" "$OUT/guest.log"; then
  echo "SIW-CONFORM: the guest kernel logged a BUG or oops (see $OUT/guest.log)"
fi
