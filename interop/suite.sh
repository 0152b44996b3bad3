#!/usr/bin/env bash
# The interop suite: our tools against Linux siw's own tools, in both
# directions, in the project's siw VM (interop/siw-vm.sh; SIW_VM names
# another), for siw's default, crc, p2p and v1 builds. Every case runs RUNS
# times (default 3) and passes only if every run passes; a run passes only if
#   - our side verified the data (exit 0, every ping / message seen),
#   - the siw tool verified it (its -V / "end 0" / every ping, exit 0),
#   - the guest's kernel log has no BUG or oops, and no siw error for the
#     cases that expect none,
#   - the session's capture (taken on the host's loopback, where QEMU's
#     user-mode network hands the bytes over) decodes cleanly with
#     `iwarp decode` (CRC good, no decoding error), and tshark agrees on
#     every CRC ("Good CRC32") where CRC is on, except where a TCP
#     retransmission made tshark cut the stream wrong
#     (interop/capture-check.sh: such a run passes and says so).
# A guest kernel BUG breaks the guest's iw_cm for every later connection,
# so the guest is booted again before the next run; a run whose only
# failure was siw 6.1's BUG at iwcm.c:969 is repeated on the new guest, at
# most twice (docs/interop.md).
# The last line is the summary:
#   INTEROP: n passed, m failed, k skipped (reasons)
#
#   bash interop/suite.sh                    # from the repository root, as root
#   VARIANTS="default" RUNS=1 bash interop/suite.sh
#   ONLY='ext|unknown' VARIANTS=default bash interop/suite.sh   # cases matching a regexp
#
# Output and logs per run in $OUT (default /tmp/siw-interop). Exit status 1
# if any case failed; a machine that cannot run the VM (not root, no qemu,
# packages not fetchable) reports every case as skipped with the reason and
# exits 0. The first run builds the VM (a few minutes: siw-vm.sh installs
# qemu and debootstrap with apt-get and caches the guest in ~/.cache/siw-vm);
# the suite installs tshark (for dumpcap) the same way if it is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
VM=${SIW_VM:-interop/siw-vm.sh}
OUT=${OUT:-/tmp/siw-interop}
RUNS=${RUNS:-3}
VARIANTS=${VARIANTS:-default crc p2p v1}
W=${W:-${HOME:-/root}/.cache/siw-vm} # as interop/siw-vm.sh
SHARE=$W/share
Q=$SHARE/q
COUNT=5
mkdir -p "$OUT"
pass=0 fail=0 skip=0 why=""
results=()

note_skip() { # n reason
  skip=$((skip + $1))
  case " $why " in *"$2"*) ;; *) why="${why:+$why; }$2" ;; esac
}
summary() {
  echo "INTEROP: $pass passed, $fail failed, $skip skipped${why:+ ($why)}"
}

# The cases of each variant (names only: used to count skips too).
cases_for() {
  case $1 in
    default) echo "rping-ours-client-crc rping-ours-client-nocrc rping-siw-client-crc rping-siw-client-nocrc rping-ours-client-defaults rping-siw-client-defaults rdma-siw-client rdma-ours-client $(perftest_cases) $NVMF_CASES ext-refused-locally write-unknown-stag-siw-terminate ext-forced-siw-terminate" ;; # last: see below
    crc) echo "rping-ours-client-crc rping-siw-client-nocrc nvmf-kernel-host-crc nvmf-kernel-host-nocrc" ;; # siw's mpa_crc_required acts in its Requests only
    p2p) echo "rping-ours-client-crc rping-siw-client-crc" ;;
    v1) echo "rping-ours-client-crc rping-siw-client-crc" ;;
  esac
}
# perftest 4.5 (ib_{write,send,read}_{bw,lat} -R) against `iwarp perf
# -perftest`, both directions: perftest-OP-MODE-siw-client (perftest's
# client in the guest, our server on the host) and -ours-client.
perftest_cases() {
  local t d
  for t in write-bw send-bw read-bw write-lat send-lat read-lat; do
    for d in siw-client ours-client; do printf 'perftest-%s-%s ' "$t" "$d"; done
  done
}
PERFTEST_VERSION=${PERFTEST_VERSION:-4.5+0.17-1}
PT_BW="-s 4096 -n 1000" PT_LAT="-s 64 -n 500" # perftest's -s is the size; bw: beyond ib_send_bw's 512 receives, so credits flow
# pt_case perftest-OP-MODE-WHO: sets op, mode and perftest's args.
pt_case() {
  local t=${1#perftest-}; t=${t%-*-client}
  op=${t%-*} mode=${t#*-} args=$PT_BW
  if [ "$mode" = lat ]; then args=$PT_LAT; fi
}
# perftest measures its CPU clock against gettimeofday before it reports;
# under the VM's emulation that fit is sometimes too poor
# ("Correlation coefficient r^2 < 0.9", "Can't produce a report") and it
# exits 1 without ending the exchange. Such a run says nothing about
# either stack: it is repeated (up to three times), and the case's line
# says so.
# NVMe over Fabrics (interop/nvmf.sh): Linux's nvme-rdma and nvmet-rdma
# with each other in the guest (the guest's procedure alone: tells whether
# a failure is ours), Linux's host against our `iwarp nvmf-target` and our
# `iwarp nvmf-host` against Linux's target, with and without CRC. On the
# crc build siw asks for CRC as the host, so both kernel-host cases have
# CRC on there.
NVMF_CASES="nvmf-kernel-kernel nvmf-kernel-host-crc nvmf-kernel-host-nocrc nvmf-kernel-target-crc nvmf-kernel-target-nocrc"
source interop/nvmf.sh
# nvmf_missing case: prints why our binary cannot run the case (a command
# it lacks) and succeeds, or fails.
nvmf_missing() {
  local cmd=""
  case $1 in nvmf-kernel-host-*) cmd=nvmf-target ;; nvmf-kernel-target-*) cmd=nvmf-host ;; esac
  [ -n "$cmd" ] && ! "$IW" "$cmd" -h >/dev/null 2>&1 && echo "iwarp has no $cmd command"
}
PT_CLOCK="perftest could not calibrate its clock in the VM"
pt_ours() { echo "$1" | sed -E 's/-s /-size /'; } # the same arguments for iwarp perf

total=0
for v in $VARIANTS; do for c in $(cases_for "$v"); do total=$((total + 1)); done; done

if [ "$(id -u)" != 0 ]; then note_skip $total "needs root"; summary; exit 0; fi
if [ ! -x "$VM" ]; then note_skip $total "no $VM"; summary; exit 0; fi
# build installs what the host needs (qemu, debootstrap) and the guest image,
# cached in ~/.cache/siw-vm; without network access it fails: a skip.
if ! "$VM" build >"$OUT/build.log" 2>&1; then
  note_skip $total "VM build failed: packages not fetchable or qemu not installable, see $OUT/build.log"; summary; exit 0
fi
# dumpcap captures each session on the host; tshark checks its CRCs.
if ! command -v dumpcap >/dev/null 2>&1 || ! command -v tshark >/dev/null 2>&1; then
  if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tshark; } >"$OUT/tshark-install.log" 2>&1; then
    note_skip $total "tshark (dumpcap) not installable, see $OUT/tshark-install.log"; summary; exit 0
  fi
fi
go build -o "$OUT/iwarp" ./cmd/iwarp || { echo "INTEROP: 0 passed, $total failed, 0 skipped (build failed)"; exit 1; }
IW=$OUT/iwarp

# --- the guest agent: runs the scripts the host drops in $Q, one file each.
mkdir -p "$Q"
cat >"$SHARE/agent.sh" <<'EOF'
Q=/mnt/host/q
while [ ! -e $Q/stop ]; do
  for f in $Q/*.sh; do
    [ -e "$f" ] || continue
    n=$(basename "$f" .sh)
    mv "$f" /tmp/$n.sh
    ( touch $Q/$n.started; sh /tmp/$n.sh >$Q/$n.out 2>&1; echo $? >$Q/$n.rc.tmp; mv $Q/$n.rc.tmp $Q/$n.rc ) &
  done
  sleep 0.2
done
EOF

guest_submit() { # id command
  # A server left over from an earlier case (a hostile one can leave siw's
  # rping waiting forever) would hold the port: stop them first.
  printf 'pkill -x rping; pkill -x rdma_server; pkill -f "ib_(write|send|read)_(bw|lat)"; sleep 0.3\ndmesg -C\n%s\nrc=$?\ndmesg >/mnt/host/q/%s.dmesg\nexit $rc\n' "$2" "$1" >"$Q/$1.tmp"
  mv "$Q/$1.tmp" "$Q/$1.sh"
}
nvmf_write_lib "$SHARE/nvmf-guest.sh" # the guest's half of the nvmf-* cases
# guest_serve_snap id command: as guest_serve, and the kernel log is saved
# 10 s after the server started whether or not it ever exits (siw's rping
# can stay blocked after a Terminate).
guest_serve_snap() {
  guest_submit "$1" "$2 &
srv=\$!
sleep 1
touch /mnt/host/q/$1.ready
sleep 10
dmesg >/mnt/host/q/$1.snap
wait \$srv"
}
# guest_serve id command: a server in the guest, which says it is ready
# (listening, after the old ones are gone) before the host dials it.
guest_serve() {
  guest_submit "$1" "$2 &
srv=\$!
sleep 1
touch /mnt/host/q/$1.ready
wait \$srv"
}
guest_wait() { # id seconds: prints the exit status, or "timeout"
  local i
  for i in $(seq 1 $(($2 * 5))); do
    if [ -e "$Q/$1.rc" ]; then cat "$Q/$1.rc"; return; fi
    sleep 0.2
  done
  echo timeout
}
wait_ready() { local i; for i in $(seq 1 150); do [ -e "$Q/$1.ready" ] && return 0; sleep 0.2; done; return 1; }

capture_start() { # port file
  # -B 32: a 32 MiB capture buffer (2 by default) so that fewer packets
  # are dropped at loopback rates.
  dumpcap -q -B 32 -i lo -f "tcp port $1" -w "$2" >/dev/null 2>&1 &
  cap=$!
  local i; for i in $(seq 1 50); do [ -s "$2" ] && break; sleep 0.1; done
  sleep 0.5
}
capture_stop() { sleep 0.5; kill -INT "$cap" 2>/dev/null; wait "$cap" 2>/dev/null; }

# check_capture file port crc(on|off|any): the capture's verdict.
source interop/capture-check.sh

# siw_trailer_bug dmesg decode: prints the repeatable reason and succeeds
# when siw's only complaint is a CRC error whose "own" CRC, the one siw
# computed over the FPDU, is a CRC our capture shows on the wire for a good
# FPDU: the FPDU was right and siw misread its CRC field. (Seen once in
# ~3,000 FPDUs of 4 KiB Sends through QEMU's network: "in: fb41a38e, own
# a38e1e23" where the FPDU's CRC was a38e1e23 and the previous one's
# fb41e442 — siw assembled a trailer split across TCP segments from two
# trailers.) Such a run is repeated like PT_CLOCK's. Any other siw CRC
# complaint is a failure.
SIW_TRAILER="siw misread the CRC field of a good FPDU (its own CRC matches ours)"
siw_trailer_bug() {
  local m own
  m=$(grep -a -o -E "siw: crc error\. in: [0-9a-f]+, own [0-9a-f]+" "$1" 2>/dev/null) || return 1
  [ "$(grep -c . <<<"$m")" = 1 ] || return 1
  own=${m##* own }
  grep -q "crc=good(0x$own)" "$2" 2>/dev/null || return 1
  echo "$SIW_TRAILER: ${m#siw: }"
}

# guest_clean id strict: no BUG/oops; with strict also no siw error.
guest_clean() {
  local log="$Q/$1.dmesg" out="$Q/$1.out"
  if grep -a -q -E "kernel BUG|Oops|RIP:" "$log" "$out" 2>/dev/null; then echo "guest kernel BUG/oops"; return 1; fi
  if [ "$2" = strict ] && grep -a -q -E "siw.*(error|TERMINATE|unknown)" "$log" 2>/dev/null; then echo "siw logged an error"; return 1; fi
  return 0
}

# ours_dial log command...: runs our client, again while the guest server
# is not reachable yet (QEMU accepts a forwarded connection before the
# guest listens and closes it), at most 15 times; returns its status.
ours_dial() {
  local log=$1 i; shift
  for i in $(seq 1 15); do
    "$@" >"$log" 2>&1 && return 0
    grep -q -E "refused|reset|EOF|timed out" "$log" || return 1
    sleep 1
  done
  return 1
}

# perftest_verdict op mode "args" ours.log ours-status guest.log guest-status
# siw-role: sets ok/reason. Ours must have verified its side ("verified:",
# "done"); perftest must have exited 0 and, where it prints results (all
# but the ib_read_lat server), printed the row of this size and iteration
# count: perftest checks no data, its results are its verdict.
perftest_verdict() {
  local op=$1 mode=$2 args=$3 olog=$4 ours=$5 glog=$6 rc=$7 role=$8 size iters
  size=$(echo "$args" | sed -E 's/.*-s ([0-9]+).*/\1/'); iters=$(echo "$args" | sed -E 's/.*-n ([0-9]+).*/\1/')
  { [ "$ours" = 0 ] && grep -q '^verified: ' "$olog" && grep -q "ib_${op}_${mode}: done" "$olog"; } || { ok=0; reason="our side: exit $ours: $(tail -n 1 "$olog")"; }
  if grep -a -q "Correlation coefficient r^2" "$glog" 2>/dev/null; then
    ok=0; reason="${reason:+$reason; }$PT_CLOCK"; return
  fi
  if [ "$rc" != 0 ]; then ok=0; reason="${reason:+$reason; }ib_${op}_${mode} ($role): exit $rc"; return; fi
  [ "$op/$mode/$role" = read/lat/server ] && return
  grep -a -q -E "^ *$size +$iters +[0-9]" "$glog" || { ok=0; reason="${reason:+$reason; }ib_${op}_${mode} ($role) printed no result row for $size bytes x $iters"; }
}

# guest_dials id guest-command seconds our-server...: our server on the
# host's port $hostport (its output in $dir/ours.log) and siw's client in
# the guest, captured; sets ours and rc (the guest's status or "timeout").
guest_dials() {
  local id=$1 gcmd=$2 secs=$3 srv; shift 3
  timeout $((secs + 10)) "$@" >"$dir/ours.log" 2>&1 &
  srv=$!
  sleep 0.5
  capture_start $hostport "$dir/session.pcapng"
  guest_submit "$id" "$gcmd"
  rc=$(guest_wait "$id" "$secs")
  wait $srv; ours=$?; capture_stop
}

# ours_dials id guest-command seconds our-client...: siw's server in the
# guest (on the run's guest port), our client dialing it through the
# forwarded port $hport (its output in $dir/ours.log), captured; sets ours
# and rc. The mirror of guest_dials.
ours_dials() {
  local id=$1 gcmd=$2 secs=$3; shift 3
  guest_serve "$id" "$gcmd"
  wait_ready "$id"
  capture_start $hport "$dir/session.pcapng"
  ours_dial "$dir/ours.log" "$@"; ours=$?
  rc=$(guest_wait "$id" "$secs"); capture_stop
}

hostport=7600 gslot=0
# Host 127.0.0.1:17100+k reaches guest port 7100+k: one per run (of all
# the runs of a VM: the default build has 23 cases, 69 runs by default,
# and repeated runs take ports too).
FWD_PORTS=120
FWD=tcp:127.0.0.1:17000-10.0.2.15:7000,tcp:127.0.0.1:17001-10.0.2.15:7001
for k in $(seq 0 $((FWD_PORTS - 1))); do FWD="$FWD,tcp:127.0.0.1:$((17100 + k))-10.0.2.15:$((7100 + k))"; done
# run_case variant case run: prints "ok" or the reason, per the rules above.
run_case() {
  local v=$1 c=$2 r=$3 id="$1-$2-$3" dir="$OUT/$1/$2/run$3" crc=on ours guest rc ok=1 reason=""
  mkdir -p "$dir"
  local ours_flags="" size="-S 64" count="-C $COUNT"
  case $c in *nocrc*) ours_flags="-nocrc"; crc=off ;; esac
  # The default-options cases: no -S on either side (rping.c's default
  # size is 64), no -C on the server (rping.c's default: serve until the
  # client disconnects), and whatever CRC the two sides choose by default.
  case $c in *-defaults) size="" count="" crc=any ;; esac
  # siw built with mpa_crc_required asks for CRC in its Request.
  case $v/$c in crc/rping-siw-client-* | crc/nvmf-kernel-host-*) crc=on ;; esac
  # A guest server gets a port of its own per run: after a hostile case
  # siw keeps the old one bound for a while ("Address already in use").
  local gport=$((7100 + gslot)) hport=$((17100 + gslot))
  if [ "$gslot" -ge "$FWD_PORTS" ]; then echo "out of forwarded ports (FWD_PORTS=$FWD_PORTS): raise it"; return; fi
  case $c in
    rping-ours-client-*)
      ours_dials "$id" "rping -s -a 10.0.2.15 -p $gport -v $count" 90 "$IW" rping -c -a 127.0.0.1 -p $hport -C $COUNT $size -v -V $ours_flags
      [ "$ours" = 0 ] && [ "$(grep -c '^ping data: rdma-ping-' "$dir/ours.log")" = $COUNT ] || { ok=0; reason="our client did not verify $COUNT pings"; }
      [ "$rc" = 0 ] && [ "$(grep -a -c 'server ping data: rdma-ping-' "$Q/$id.out")" = $COUNT ] || { ok=0; reason="${reason:+$reason; }siw rping -s: exit $rc"; }
      port=$hport ;;
    rping-siw-client-*)
      guest_dials "$id" "rping -c -a 10.0.2.2 -p $hostport -C $COUNT $size -v -V" 90 "$IW" rping -s -a 127.0.0.1 -p $hostport -v $ours_flags
      [ "$ours" = 0 ] && [ "$(grep -c '^server ping data: rdma-ping-' "$dir/ours.log")" = $COUNT ] || { ok=0; reason="our server exit $ours"; }
      [ "$rc" = 0 ] && [ "$(grep -a -c '^ping data: rdma-ping-' "$Q/$id.out")" = $COUNT ] || { ok=0; reason="${reason:+$reason; }siw rping -c -V: exit $rc"; }
      port=$hostport ;;
    rdma-siw-client)
      guest_dials "$id" "rdma_client -s 10.0.2.2 -p $hostport" 90 "$IW" rdma-server -a 127.0.0.1 -p $hostport
      [ "$ours" = 0 ] && grep -q "received 16 zero bytes" "$dir/ours.log" || { ok=0; reason="our rdma-server exit $ours"; }
      [ "$rc" = 0 ] && grep -a -q "rdma_client: end 0" "$Q/$id.out" || { ok=0; reason="${reason:+$reason; }rdma_client: exit $rc"; }
      port=$hostport ;;
    rdma-ours-client)
      ours_dials "$id" "rdma_server -p $gport" 90 "$IW" rdma-client -s 127.0.0.1 -p $hport
      [ "$ours" = 0 ] && grep -q "received 16 zero bytes" "$dir/ours.log" || { ok=0; reason="our rdma-client exit $ours"; }
      [ "$rc" = 0 ] && grep -a -q "rdma_server: end 0" "$Q/$id.out" || { ok=0; reason="${reason:+$reason; }rdma_server: exit $rc"; }
      port=$hport ;;
    perftest-*-siw-client)
      local op mode args; pt_case "$c"
      guest_dials "$id" "timeout 100 ib_${op}_${mode} -d siw0 -R -p $hostport $args 10.0.2.2" 110 \
        "$IW" perf -perftest -s -a 127.0.0.1:$hostport -op $op -mode $mode $(pt_ours "$args")
      perftest_verdict "$op" "$mode" "$args" "$dir/ours.log" "$ours" "$Q/$id.out" "$rc" client
      port=$hostport ;;
    perftest-*-ours-client)
      local op mode args; pt_case "$c"
      ours_dials "$id" "timeout 100 ib_${op}_${mode} -d siw0 -R -p $gport $args" 110 \
        timeout 100 "$IW" perf -perftest -c 127.0.0.1:$hport -op $op -mode $mode $(pt_ours "$args")
      perftest_verdict "$op" "$mode" "$args" "$dir/ours.log" "$ours" "$Q/$id.out" "$rc" server
      port=$hport ;;
    ext-refused-locally|ext-forced-siw-terminate|write-unknown-stag-siw-terminate)
      local which=no-ext
      case $c in ext-forced*) which=forced ;; write-unknown*) which=unknown-stag ;; esac
      guest_serve_snap "$id" "timeout -s KILL 20 rping -s -a 10.0.2.15 -p $gport -C 1"
      wait_ready "$id"
      capture_start $hport "$dir/session.pcapng"
      ours_dial "$dir/ours.log" "$IW" extcheck -a 127.0.0.1:$hport -case $which; ours=$?
      capture_stop
      local i; for i in $(seq 1 75); do [ -e "$Q/$id.snap" ] && break; sleep 0.2; done
      rc=$(guest_wait "$id" 30) # siw's rping may stay blocked: not a failure here
      cp "$Q/$id.snap" "$Q/$id.dmesg" 2>/dev/null
      [ "$ours" = 0 ] || { ok=0; reason="extcheck $which: $(tail -n 1 "$dir/ours.log")"; }
      [ "$which" = forced ] && { grep -a -q "unknown packet type 10" "$Q/$id.dmesg" 2>/dev/null || { ok=0; reason="${reason:+$reason; }siw did not log the unknown opcode"; }; }
      port=$hport ;;
    nvmf-kernel-kernel) # no session on the host: no capture
      guest_submit "$id" ". /mnt/host/nvmf-guest.sh; nvmf_guest_kernel_kernel $gport $NVMF_NQN"
      rc=$(guest_wait "$id" 180)
      [ "$rc" = 0 ] || { ok=0; reason="guest: exit $rc: $(nvmf_guest_fail "$Q/$id.out")"; }
      port="" ;;
    nvmf-kernel-host-*)
      local srv
      timeout 300 "$IW" nvmf-target -a 127.0.0.1:$hostport -nqn "$NVMF_NQN" -size 64m -v $ours_flags >"$dir/ours.log" 2>&1 &
      srv=$!
      for _ in $(seq 1 50); do grep -q "$NVMF_SERVING" "$dir/ours.log" && break; sleep 0.2; done
      capture_start $hostport "$dir/session.pcapng"
      guest_submit "$id" ". /mnt/host/nvmf-guest.sh; nvmf_guest_kernel_host 10.0.2.2 $hostport $NVMF_NQN"
      rc=$(guest_wait "$id" 180)
      capture_stop
      kill -INT $srv 2>/dev/null; wait $srv; ours=$?
      [ "$ours" = 0 ] || { ok=0; reason="our nvmf-target: exit $ours after SIGINT: $(tail -n 1 "$dir/ours.log")"; }
      [ "$rc" = 0 ] || { ok=0; reason="${reason:+$reason; }guest: exit $rc: $(nvmf_guest_fail "$Q/$id.out")"; }
      port=$hostport ;;
    nvmf-kernel-target-*)
      guest_submit "$id" ". /mnt/host/nvmf-guest.sh; nvmf_guest_kernel_target $gport $NVMF_NQN /mnt/host/q/$id"
      wait_ready "$id"
      capture_start $hport "$dir/session.pcapng"
      # the discovery log (nvmf-host's default NQN) must list the subsystem
      ours_dial "$dir/ours-discovery.log" timeout 60 "$IW" nvmf-host -a 127.0.0.1:$hport $ours_flags; ours=$?
      [ "$ours" = 0 ] && grep -q "subnqn: *$NVMF_NQN" "$dir/ours-discovery.log" || { ok=0; reason="our nvmf-host (discovery): exit $ours: $(tail -n 1 "$dir/ours-discovery.log")"; }
      timeout 120 "$IW" nvmf-host -a 127.0.0.1:$hport -nqn "$NVMF_NQN" -verify "$NVMF_VERIFY" $ours_flags >"$dir/ours.log" 2>&1; ours=$?
      [ "$ours" = 0 ] && grep -q "all match" "$dir/ours.log" || { ok=0; reason="${reason:+$reason; }our nvmf-host -verify $NVMF_VERIFY: exit $ours: $(tail -n 1 "$dir/ours.log")"; }
      touch "$Q/$id.stop"
      rc=$(guest_wait "$id" 60); capture_stop
      [ "$rc" = 0 ] || { ok=0; reason="${reason:+$reason; }guest: exit $rc: $(nvmf_guest_fail "$Q/$id.out")"; }
      port=$hport ;;
  esac
  cp "$Q/$id.out" "$dir/guest.log" 2>/dev/null; cp "$Q/$id.dmesg" "$dir/guest-dmesg.log" 2>/dev/null
  local strict=strict
  case $c in ext-*|write-unknown*) strict=lax ;; esac
  local g; g=$(guest_clean "$id" $strict) || { ok=0; reason="${reason:+$reason; }$g"; }
  case $c in nvmf-*) local n; n=$(nvmf_dmesg_check "$Q/$id.dmesg") || { ok=0; reason="${reason:+$reason; }$n"; } ;; esac
  local k=""
  case $c in
    nvmf-*) # every connection of the association (one per queue) must decode with CRC as expected;
      # tshark's CRC verdicts are a note here (interop/nvmf.sh, nvmf_tshark_note)
      if [ -n "$port" ]; then
        k=$(nvmf_capture_check "$dir/session.pcapng" $port $crc "$IW") || { ok=0; reason="${reason:+$reason; }$k"; k=""; }
        [ "$ok" = 1 ] && [ "$crc" = on ] && k=$(nvmf_tshark_note "$dir/session.pcapng")
      fi ;;
    *) k=$(check_capture "$dir/session.pcapng" $port $crc) || { ok=0; reason="${reason:+$reason; }$k"; } ;;
  esac
  local b; b=$(siw_trailer_bug "$Q/$id.dmesg" "$dir/session.decode") && { ok=0; reason="${reason:+$reason; }$b"; }
  # A passing run says what the capture check saw besides (a tshark
  # reassembly artefact): "ok; NOTE".
  if [ $ok = 1 ]; then echo "ok${k:+; $k}"; else echo "$reason"; fi
}

# boot_vm variant: boots the guest of that siw build with the agent
# waiting for scripts in $Q, and waits until it runs; vm is its runner's
# PID, boots counts the boots of the variant (each logs to its own file).
boot_vm() {
  boots=$((boots + 1))
  rm -rf "$Q"; mkdir -p "$Q"
  local log="$OUT/vm-$1.log"
  [ "$boots" = 1 ] || log="$OUT/vm-$1-boot$boots.log"
  HOSTFWD=$FWD SIW_VARIANT=$1 TIMEOUT=1500 "$VM" run "sh /mnt/host/agent.sh" >"$log" 2>&1 &
  vm=$!
  for _ in $(seq 1 240); do grep -a -q "running /mnt/host/cmd.sh" "$log" 2>/dev/null && break; sleep 1; done
  sleep 3
}
# stop_vm: the agent ends, the guest powers off.
stop_vm() { touch "$Q/stop"; wait "$vm"; }

for v in $VARIANTS; do
  gslot=0 boots=0
  boot_vm "$v"
  ptver=""
  if [[ " $(cases_for "$v") " == *" perftest-"* ]]; then
    # The perftest cases are pinned to the version recorded in
    # interop/captures/perftest (its exchange changes between versions).
    guest_submit "$v-perftest-version" "dpkg-query -W -f='\${Version}\n' perftest"
    guest_wait "$v-perftest-version" 30 >/dev/null
    ptver=$(tr -d '\r' <"$Q/$v-perftest-version.out" 2>/dev/null | tail -n 1)
    echo "perftest in the VM: ${ptver:-unknown}"
  fi
  for c in $(cases_for "$v"); do
    if [ -n "${ONLY:-}" ] && ! [[ "$v/$c" =~ $ONLY ]]; then continue; fi
    if [[ $c == nvmf-* ]] && miss=$(nvmf_missing "$c"); then
      note_skip 1 "$miss"; results+=("SKIP $v/$c: $miss"); echo "${results[-1]}"
      continue
    fi
    if [[ $c == perftest-* ]] && [ "$ptver" != "$PERFTEST_VERSION" ]; then
      note_skip 1 "perftest ${ptver:-unknown} in the VM, the perftest cases are pinned to $PERFTEST_VERSION"
      results+=("SKIP $v/$c"); echo "${results[-1]}"
      continue
    fi
    good=0 reasons="" repeated="" notes=""
    for r in $(seq 1 "$RUNS"); do
      hostport=$((hostport + 1)) gslot=$((gslot + 1)) # each run its own ports (run_case runs in a subshell)
      rid=$r
      res=$(run_case "$v" "$c" "$rid")
      for again in b c d; do # at most three repeats, each with its own logs and guest files (run${r}b...)
        [[ $res == *"$PT_CLOCK"* || $res == *"$SIW_TRAILER"* ]] || break
        rep_why=$PT_CLOCK; [[ $res == *"$SIW_TRAILER"* ]] && rep_why="${res#*"$SIW_TRAILER: "}" && rep_why="$SIW_TRAILER (${rep_why%%;*})"
        hostport=$((hostport + 1)) gslot=$((gslot + 1)) repeated="${repeated:+$repeated, }run $r: $rep_why"
        rid=$r$again
        res=$(run_case "$v" "$c" "$rid")
      done
      # A guest kernel BUG leaves the guest's iw_cm broken for every later
      # connection: the guest is booted again before the next run. When
      # the BUG is siw 6.1's at iwcm.c:969 (docs/interop.md) and it is the
      # run's only failure (our side verified everything in it), the run
      # is repeated on the new guest, at most twice; any other failure
      # stands.
      for again in r s ""; do # "": the last BUG boots the guest again, no repeat
        [[ $res == *"guest kernel BUG/oops"* ]] || break
        stop_vm; boot_vm "$v"
        [ -n "$again" ] && [ "$res" = "guest kernel BUG/oops" ] && grep -a -q "kernel BUG at drivers/infiniband/core/iwcm.c:969" "$OUT/$v/$c/run$rid/guest-dmesg.log" || break
        hostport=$((hostport + 1)) gslot=$((gslot + 1)) repeated="${repeated:+$repeated, }run $r: siw 6.1 kernel BUG at iwcm.c:969, guest booted again"
        rid=$r$again
        res=$(run_case "$v" "$c" "$rid")
      done
      case $res in
        ok) good=$((good + 1)) ;;
        "ok; "*) good=$((good + 1)) notes="${notes:+$notes | }run $r: ${res#ok; }" ;;
        *) reasons="${reasons:+$reasons | }run $r: $res" ;;
      esac
    done
    if [ $good = "$RUNS" ]; then
      pass=$((pass + 1)); results+=("PASS $v/$c ($good of $RUNS${repeated:+; repeated: $repeated}${notes:+; $notes})")
    elif [[ $c == ext-* || $c == write-unknown* ]] && [ -z "$(printf '%s' "$reasons" | sed -E 's/run [0-9]+: guest kernel BUG\/oops( \| )?//g')" ]; then
      # Linux siw 6.1's iw_cm hits a kernel BUG (iwcm.c:969) in these
      # cases, where a Terminate tears a connection down right after its
      # establishment: in about one run in three in the forced-extension
      # case, now and then in the others. A run that failed on it is
      # repeated on a newly booted guest (above); when a run failed on
      # nothing but the guest's BUG even then (our side verified
      # everything in it), siw, not this stack, failed (docs/interop.md):
      # the case is reported as skipped, with the reason, in the INTEROP
      # line.
      note_skip 1 "$v/$c: siw 6.1 kernel BUG at iwcm.c:969 after a Terminate, our side verified ($good of $RUNS runs passed, the others failed only on the guest's BUG, each tried 3 times)"
      results+=("SKIP $v/$c ($good of $RUNS): $reasons")
    else
      fail=$((fail + 1)); results+=("FAIL $v/$c ($good of $RUNS): $reasons")
    fi
    echo "${results[-1]}"
  done
  stop_vm
done
summary
[ $fail = 0 ]
