#!/usr/bin/env bash
# nvmf.sh: NVMe over Fabrics (RDMA transport) between this stack and
# Linux, over siw in the project's VM (interop/siw-vm.sh).
#
#   bash interop/nvmf.sh kernel-kernel            # Linux's host -> Linux's target, both in the guest
#   bash interop/nvmf.sh kernel-host [--nocrc]    # Linux's nvme-rdma (guest) -> our nvmf-target (host)
#   bash interop/nvmf.sh kernel-target [--nocrc]  # our nvmf-host (host) -> Linux's nvmet-rdma (guest)
#   SIW_VARIANT=crc bash interop/nvmf.sh kernel-host   # siw's crc build: siw asks for CRC
#
# kernel-kernel checks the guest's procedure alone (configfs, the
# /dev/nvme-fabrics connect, the I/O), with no code of ours in it: when a
# mode with our side fails, it tells whether the guest's half works.
#
# What each mode checks:
#   kernel-kernel: the guest's nvmet-rdma serves a 64 MiB null_blk
#     (memory_backed) namespace on 10.0.2.15 and the guest's nvme-rdma
#     connects to it over siw0, then the I/O below.
#   kernel-host: `iwarp nvmf-target -size 64m -v` on the host's 127.0.0.1;
#     the guest's nvme-rdma connects to it at 10.0.2.2 (2 I/O queues),
#     then the I/O below; the target must exit 0 on SIGINT afterwards.
#   kernel-target: the guest's nvmet-rdma as in kernel-kernel, reached
#     through a QEMU forward; our host reads the discovery log (which must
#     list the subsystem), then `iwarp nvmf-host -verify 2048` (1 MiB) must print
#     "all match" and exit 0.
#   The I/O (the guest's, on /dev/nvmeXn1): 4 MiB of random data written
#     at 0 and at 56 MiB with dd oflag=direct, read back with iflag=direct
#     and compared (cmp); mkfs.ext4, mount, files copied in (random files
#     of 1 KiB to 3 MiB, /etc), their sha256sums, sync, umount, page cache
#     dropped, mount again, sha256sum -c, umount; then the controller is
#     deleted (delete_controller) and must be gone.
#   Every mode: the guest's kernel log must show no BUG, oops or WARNING,
#   no nvme/nvmet error, reset or reconnect, no I/O error, no siw error.
#
# Settings (environment): OUT (default /tmp/siw-nvmf; each mode writes to
# $OUT/MODE[-nocrc][-VARIANT]/: ours.log, guest.log, dmesg.log,
# console.log, verdict), IWARP (our binary; default: built from this tree
# into $OUT/iwarp), SIW_VARIANT, TIMEOUT (the VM's, default 300), CAPTURE=1
# (dumpcap captures the session on the host's loopback into
# session.pcapng and checks it with `iwarp decode`), and W as siw-vm.sh.
# The last line is "NVMF MODE: PASS" or "NVMF MODE: FAIL: reasons"; exit
# status 0 on PASS, 1 on FAIL, 2 for bad arguments, 3 if the VM cannot run.
#
# interop/suite.sh sources this file for its nvmf-* cases: nvmf_write_lib
# puts the guest's half (nvmf-guest.sh) into the shared folder, the
# nvmf_guest_* functions there do the guest's part of each mode, and
# nvmf_dmesg_check and nvmf_capture_check judge the logs.

NVMF_NQN=${NVMF_NQN:-nqn.2026-11.dev.goiwarp:nvmf-interop}
NVMF_VERIFY=${NVMF_VERIFY:-2048} # blocks our host writes, reads back and compares
NVMF_SERVING="^nvmf-target: serving " # the line iwarp nvmf-target prints when it listens

# nvmf_write_lib FILE writes the guest's half: functions the guest's
# scripts source (". /mnt/host/nvmf-guest.sh"). The guest has Debian's
# dash, coreutils, util-linux, kmod and e2fsprogs; no nvme-cli, no udev
# (devtmpfs makes the device nodes).
nvmf_write_lib() {
  cat >"$1" <<'EOF'
# nvmf-guest.sh: the guest's half of interop/nvmf.sh (written by it).
NVMF_HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:6e766d66-696e-7465-726f-700000000001
CFS=/sys/kernel/config
say() { echo "nvmf-guest $(cut -d' ' -f1 /proc/uptime): $*"; }
fail() { say "FAIL: $*"; return 1; }
# run CMD...: says CMD, runs it, says how it ended.
run() {
  say "\$ $*"
  "$@"; rc=$?
  [ $rc = 0 ] || say "exit $rc: $*"
  return $rc
}

# nvmet_up PORT NQN [MiB]: Linux's NVMe target over RDMA on 10.0.2.15:PORT
# serving NQN (any host) with one namespace, a memory-backed null_blk of
# MiB (64). The configfs names are PORT's, so that runs do not collide.
nvmet_up() {
  port=$1 nqn=$2 mb=${3:-64}
  modprobe configfs
  mountpoint -q $CFS || mount -t configfs none $CFS || { fail "mount configfs"; return 1; }
  run modprobe null_blk nr_devices=0 || return 1
  run modprobe nvmet || return 1
  run modprobe nvmet-rdma || return 1
  nb=$CFS/nullb/nvmf$port
  mkdir $nb && echo "$mb" >$nb/size && echo 1 >$nb/memory_backed && echo 1 >$nb/power ||
    { fail "null_blk $nb"; return 1; }
  # null_blk names a configfs device after its folder, or nullb<index>.
  bdev=/dev/nvmf$port
  [ -b $bdev ] || bdev=/dev/nullb$(cat $nb/index)
  [ -b $bdev ] || { fail "no block device for $nb"; ls /sys/block; return 1; }
  say "namespace backing: $bdev, $(cat /sys/class/block/${bdev#/dev/}/size) sectors"
  s=$CFS/nvmet/subsystems/$nqn
  mkdir $s && echo 1 >$s/attr_allow_any_host &&
    mkdir $s/namespaces/1 && echo $bdev >$s/namespaces/1/device_path && echo 1 >$s/namespaces/1/enable ||
    { fail "nvmet subsystem $nqn"; return 1; }
  p=$CFS/nvmet/ports/$port
  mkdir $p && echo rdma >$p/addr_trtype && echo ipv4 >$p/addr_adrfam &&
    echo 10.0.2.15 >$p/addr_traddr && echo "$port" >$p/addr_trsvcid &&
    ln -s $s $p/subsystems/$nqn || { fail "nvmet port $port"; return 1; }
  say "nvmet: $nqn on rdma 10.0.2.15:$port"
}
# nvmet_down PORT NQN: undoes nvmet_up.
nvmet_down() {
  port=$1 nqn=$2
  rm -f $CFS/nvmet/ports/$port/subsystems/$nqn
  rmdir $CFS/nvmet/ports/$port 2>/dev/null
  echo 0 >$CFS/nvmet/subsystems/$nqn/namespaces/1/enable 2>/dev/null
  rmdir $CFS/nvmet/subsystems/$nqn/namespaces/1 $CFS/nvmet/subsystems/$nqn 2>/dev/null
  echo 0 >$CFS/nullb/nvmf$port/power 2>/dev/null
  rmdir $CFS/nullb/nvmf$port 2>/dev/null
  if [ -e $CFS/nvmet/subsystems/$nqn ] || [ -e $CFS/nvmet/ports/$port ] || [ -e $CFS/nullb/nvmf$port ]; then
    fail "nvmet teardown left configfs entries"; return 1
  fi
  say "nvmet: $nqn on port $port removed"
}

# nvmf_connect ADDR PORT NQN: Linux's NVMe over RDMA host connects (2 I/O
# queues); sets CTRL (nvmeN) and DEV (the namespace's /dev/nvmeXnY).
# ctrl_loss_tmo bounds the reconnecting after a failure (default 600 s).
nvmf_connect() {
  opts="transport=rdma,traddr=$1,trsvcid=$2,nqn=$3,hostnqn=$NVMF_HOSTNQN,nr_io_queues=2,reconnect_delay=2,ctrl_loss_tmo=10"
  run modprobe nvme-rdma || return 1
  say "> /dev/nvme-fabrics: $opts"
  exec 3<>/dev/nvme-fabrics || { fail "open /dev/nvme-fabrics"; return 1; }
  if ! printf '%s' "$opts" >&3; then exec 3>&-; fail "connect refused (the kernel log says why)"; return 1; fi
  reply=$(head -n 1 <&3); exec 3>&-
  say "< /dev/nvme-fabrics: $reply"
  case $reply in instance=*) ;; *) fail "no instance in the reply"; return 1 ;; esac
  inst=${reply#instance=}; inst=${inst%%,*}
  CTRL=nvme$inst DEV=""
  say "$CTRL: state $(cat /sys/class/nvme/$CTRL/state), transport $(cat /sys/class/nvme/$CTRL/transport), address $(cat /sys/class/nvme/$CTRL/address), subsysnqn $(cat /sys/class/nvme/$CTRL/subsysnqn)"
  # The namespace shows up when the scan ends. With native multipath
  # (Debian's kernel) the controller's entry is nvmeXcYnZ and the block
  # device nvmeXnZ; without it nvmeXnZ.
  i=0
  while [ $i -lt 150 ]; do
    for e in /sys/class/nvme/$CTRL/nvme*n*; do
      [ -e "$e" ] || continue
      n=${e##*/}
      case $n in *c*n*) n=${n%%c*}n${n##*n} ;; esac
      [ -b /dev/$n ] && [ "$(cat /sys/class/block/$n/size)" != 0 ] && DEV=/dev/$n && path=$e && break 2
    done
    sleep 0.2; i=$((i + 1))
  done
  [ -n "$DEV" ] || { fail "$CTRL: no namespace block device after 30 s"; ls /sys/class/nvme/$CTRL; return 1; }
  say "$CTRL: namespace $DEV, $(cat /sys/class/block/${DEV#/dev/}/size) sectors of $(cat /sys/class/block/${DEV#/dev/}/queue/logical_block_size) bytes, $(ls -d "$path"/mq/* 2>/dev/null | wc -l) blk-mq hardware queues"
}
# nvmf_disconnect: deletes CTRL and waits until it is gone.
nvmf_disconnect() {
  [ -n "${CTRL:-}" ] && [ -e /sys/class/nvme/$CTRL ] || return 0
  say "$CTRL: delete_controller"
  echo 1 >/sys/class/nvme/$CTRL/delete_controller
  i=0
  while [ -e /sys/class/nvme/$CTRL ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
  [ ! -e /sys/class/nvme/$CTRL ] || { fail "$CTRL still there 20 s after delete_controller"; return 1; }
  say "$CTRL: deleted"
}

# nvmf_io DEV: the I/O of every mode (see interop/nvmf.sh).
nvmf_io() {
  dev=$1 t=/tmp/nvmf mnt=/mnt/nvmf
  rm -rf $t; mkdir -p $t $mnt
  dd if=/dev/urandom of=$t/a bs=1M count=4 status=none && dd if=/dev/urandom of=$t/b bs=1M count=4 status=none || return 1
  run dd if=$t/a of=$dev bs=1M oflag=direct status=none || return 1
  run dd if=$t/b of=$dev bs=1M seek=56 oflag=direct status=none || return 1
  run dd if=$dev of=$t/a2 bs=1M count=4 iflag=direct status=none || return 1
  run dd if=$dev of=$t/b2 bs=1M skip=56 count=4 iflag=direct status=none || return 1
  run cmp $t/a $t/a2 || { fail "data read back at 0 differs"; return 1; }
  run cmp $t/b $t/b2 || { fail "data read back at 56 MiB differs"; return 1; }
  say "direct I/O: 2 x 4 MiB written, read back, equal"
  run mkfs.ext4 -q -F $dev || return 1
  run mount -t ext4 $dev $mnt || return 1
  for s in 1 100 1024 3072; do dd if=/dev/urandom of=$mnt/r$s bs=1K count=$s status=none || return 1; done
  cp -a /etc $mnt/etc 2>/dev/null
  (cd $mnt && find . -type f ! -name sums -exec sha256sum {} + >$t/sums) || return 1
  say "ext4: $(wc -l <$t/sums) files copied in, $(du -sk $mnt | cut -f1) KiB"
  run sync && run umount $mnt || return 1
  echo 3 >/proc/sys/vm/drop_caches
  run mount -t ext4 $dev $mnt || return 1
  (cd $mnt && sha256sum -c --quiet $t/sums) || { fail "ext4: checksums differ after umount and mount"; umount $mnt; return 1; }
  run umount $mnt || return 1
  say "ext4: every file's sha256sum equal after umount, cache drop, mount"
}

# nvmf_host_case ADDR PORT NQN: connect, I/O, disconnect (also after a
# failed I/O step); 0 only if all passed.
nvmf_host_case() {
  CTRL=""
  nvmf_connect "$1" "$2" "$3" || { nvmf_disconnect; return 1; }
  nvmf_io "$DEV"; rc=$?
  nvmf_disconnect || rc=1
  [ $rc = 0 ] && say "PASS: $3 at $1:$2"
  return $rc
}

# nvmf_guest_kernel_kernel PORT NQN: Linux on both ends, in the guest.
nvmf_guest_kernel_kernel() {
  nvmet_up "$1" "$2" || { nvmet_down "$1" "$2"; return 1; }
  nvmf_host_case 10.0.2.15 "$1" "$2"; rc=$?
  nvmet_down "$1" "$2" || rc=1
  return $rc
}
# nvmf_guest_kernel_host ADDR PORT NQN: Linux's host against ours.
nvmf_guest_kernel_host() { nvmf_host_case "$@"; }
# nvmf_guest_kernel_target PORT NQN MARK: Linux's target for our host;
# touches MARK.ready when it listens, serves until MARK.stop exists (at
# most 200 s), then removes itself.
nvmf_guest_kernel_target() {
  nvmet_up "$1" "$2" || { nvmet_down "$1" "$2"; return 1; }
  touch "$3.ready"
  i=0
  while [ ! -e "$3.stop" ] && [ $i -lt 1000 ]; do sleep 0.2; i=$((i + 1)); done
  [ -e "$3.stop" ] || say "no stop mark after 200 s"
  say "nvmet: $(ls /sys/kernel/config/nvmet/hosts 2>/dev/null | wc -l) host entries; stopping"
  nvmet_down "$1" "$2"
}
EOF
}

# nvmf_guest_fail FILE prints the guest script's first FAIL line.
nvmf_guest_fail() {
  grep -a -m 1 'FAIL' "$1" 2>/dev/null | sed 's/^nvmf-guest [0-9.]*: //'
}

# nvmf_dmesg_check FILE: prints what is wrong in the guest's kernel log
# (at most 3 lines) and fails, or succeeds quietly.
nvmf_dmesg_check() {
  local bad
  [ -s "$1" ] || { echo "no guest kernel log"; return 1; }
  bad=$(grep -a -i -E "kernel BUG|Oops|RIP:|WARNING:|general protection|unable to handle|(nvme|nvmet|nvmet_rdma|nvme_rdma|nvme_fabrics).*(error|fail|timeout|timed out|reset|reconnect|abort|invalid|unexpected)|I/O error|EXT4-fs error|blk_update_request|siw.*(error|TERMINATE|unknown)" "$1" | head -n 3)
  [ -z "$bad" ] && return 0
  echo "guest kernel log: $(echo "$bad" | sed -E 's/^\[ *[0-9.]+\] //' | paste -sd '|' - | sed 's/|/ | /g')"
  return 1
}

# nvmf_siw_trailer DMESG DECODE prints a note and succeeds when the
# guest's log has siw's "crc error. in: X, own Y" and Y is the CRC of a
# good FPDU in our capture's decode: siw computed the right CRC over the
# right bytes and misread the trailer (the siw defect docs/interop.md
# describes; interop/suite.sh repeats such a run).
nvmf_siw_trailer() {
  local m own
  m=$(grep -a -o -E "siw: crc error\. in: [0-9a-f]+, own [0-9a-f]+" "$1" 2>/dev/null | head -n 1) || return 1
  [ -n "$m" ] || return 1
  own=${m##* own }
  grep -q "crc=good(0x$own)" "$2" 2>/dev/null || return 1
  echo "note: siw misread the CRC field of a good FPDU (${m#siw: }; 0x$own is that FPDU's CRC in our capture): the known siw defect, not this stack's"
}

# nvmf_capture_check FILE PORT CRC(on|off) IWARP: `iwarp decode` must
# decode every connection of the session cleanly, each with CRC as
# expected (an NVMe over RDMA association is one connection per queue:
# the admin queue and each I/O queue). Leaves FILE's decode beside it.
nvmf_capture_check() {
  local f=$1 port=$2 crc=$3 iw=$4 d sums n want other
  d=$("$iw" decode -port "$port" "$f" 2>&1)
  echo "$d" >"${f%.pcapng}.decode"
  sums=$(grep "summary:" <<<"$d") || { echo "capture: no iWARP connection decoded"; return 1; }
  n=$(grep -c . <<<"$sums")
  if grep -q -E "bad [1-9]|errors [1-9]" <<<"$sums"; then echo "capture: CRC or decoding errors in iwarp decode"; return 1; fi
  want="CRC $crc" other="CRC on"; [ "$crc" = on ] && other="CRC off"
  if grep -q "$other" <<<"$sums" || [ "$(grep -c "$want" <<<"$sums")" != "$n" ]; then
    echo "capture: not every connection has $want"; return 1
  fi
}

# nvmf_tshark_note FILE: tshark's opinion of the capture's CRCs, as a note
# (tshark_crcs, interop/capture-check.sh): prints nothing when tshark
# found every CRC good. The nvmf cases' verdict on CRCs is iwarp decode's:
# tshark's MPA dissector reads FPDUs segment by segment, and loses their
# framing where an FPDU straddles TCP segments (our target's 65,480-byte
# FPDUs in 65,483-byte loopback segments drift across them), then checks
# CRCs at the wrong places ("Unknown 9", "Atomic Request" for Writes).
nvmf_tshark_note() {
  command -v tshark >/dev/null 2>&1 && declare -F tshark_crcs >/dev/null || return 0
  tshark_crcs "$1" | awk '{ n = length($3); b = gsub(/b/, "", $3); good += n - b; bad += b }
    END { if (bad) printf "tshark: %d good, %d not good CRCs where iwarp decode found every CRC good (tshark loses the FPDU framing where FPDUs straddle TCP segments)", good, bad }'
}

# --- standalone runs ----------------------------------------------------

nvmf_usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

# nvmf_main MODE [--nocrc]
nvmf_main() {
  local mode=${1:-} nocrc="" variant=${SIW_VARIANT:-default} vm=${SIW_VM:-interop/siw-vm.sh}
  case $mode in kernel-kernel | kernel-host | kernel-target) ;; *) nvmf_usage; return 2 ;; esac
  shift
  case ${1:-} in --nocrc) nocrc=-nocrc; shift ;; "") ;; *) nvmf_usage; return 2 ;; esac
  [ $# = 0 ] || { nvmf_usage; return 2; }
  [ "$mode" = kernel-kernel ] && [ -n "$nocrc" ] && { echo "kernel-kernel has no --nocrc" >&2; return 2; }
  cd "$(dirname "$0")/.." || return 3
  local W=${W:-${HOME:-/root}/.cache/siw-vm}
  local share=$W/share name=$mode${nocrc:+-nocrc} crc=on
  [ "$variant" = default ] || name=$name-$variant
  local dir=${OUT:-/tmp/siw-nvmf}/$name box=$share/nvmf
  # CRC: our side asks unless -nocrc; siw's crc build asks as initiator
  # (kernel-host); siw as responder never asks (docs/interop.md).
  [ -n "$nocrc" ] && crc=off
  [ "$mode/$variant" = kernel-host/crc ] && crc=on
  rm -rf "$dir" "$box"; mkdir -p "$dir" "$box"
  verdict() { # reasons...: prints and records the last line
    local line="NVMF $name: PASS"
    [ $# = 0 ] || line="NVMF $name: FAIL: $(printf '%s; ' "$@" | sed 's/; $//')"
    echo "$line" | tee "$dir/verdict"
    [ $# = 0 ]
  }
  [ "$(id -u)" = 0 ] || { echo "NVMF $name: SKIP: needs root (the VM)"; return 3; }
  [ -e "$W/disk.img" ] || { echo "NVMF $name: SKIP: no VM in $W (interop/siw-vm.sh build)"; return 3; }
  local iw=${IWARP:-}
  if [ "$mode" != kernel-kernel ] && [ -z "$iw" ]; then
    iw=$dir/iwarp
    go build -o "$iw" ./cmd/iwarp || { verdict "go build failed"; return 1; }
  fi
  nvmf_write_lib "$share/nvmf-guest.sh"
  local port=4420 hport=14420 hostfwd="" gcmd t0=$SECONDS faults=() srv="" cap="" ours=""
  case $mode in
    kernel-kernel) gcmd="nvmf_guest_kernel_kernel $port $NVMF_NQN" ;;
    kernel-host)
      port=${NVMF_PORT:-14430}
      gcmd="nvmf_guest_kernel_host 10.0.2.2 $port $NVMF_NQN"
      "$iw" nvmf-target -a "127.0.0.1:$port" -nqn "$NVMF_NQN" -size 64m -v $nocrc >"$dir/ours.log" 2>&1 &
      srv=$!
      for _ in $(seq 1 50); do grep -q "$NVMF_SERVING" "$dir/ours.log" && break; kill -0 $srv 2>/dev/null || break; sleep 0.2; done
      grep -q "$NVMF_SERVING" "$dir/ours.log" || { kill -INT $srv 2>/dev/null; wait $srv; verdict "our nvmf-target did not say it serves: $(tail -n 1 "$dir/ours.log")"; return 1; }
      ;;
    kernel-target)
      hport=${NVMF_PORT:-14420}
      hostfwd=tcp:127.0.0.1:$hport-10.0.2.15:$port
      gcmd="nvmf_guest_kernel_target $port $NVMF_NQN /mnt/host/nvmf/target"
      ;;
  esac
  if [ "${CAPTURE:-0}" = 1 ] && command -v dumpcap >/dev/null; then
    local cport=$port; [ "$mode" = kernel-target ] && cport=$hport
    dumpcap -q -B 32 -i lo -f "tcp port $cport" -w "$dir/session.pcapng" >/dev/null 2>&1 &
    cap=$!; sleep 1
  fi
  # The guest's script: its output and kernel log go to the shared folder.
  HOSTFWD=$hostfwd SIW_VARIANT=$variant TIMEOUT=${TIMEOUT:-300} "$vm" run \
    ". /mnt/host/nvmf-guest.sh; dmesg -C; $gcmd >/mnt/host/nvmf/guest.log 2>&1; echo \$? >/mnt/host/nvmf/rc; dmesg >/mnt/host/nvmf/dmesg" \
    >"$dir/console.log" 2>&1 &
  local vmpid=$!
  if [ "$mode" = kernel-target ]; then
    local up=0
    for _ in $(seq 1 900); do [ -e "$box/target.ready" ] && up=1 && break; kill -0 $vmpid 2>/dev/null || break; sleep 0.2; done
    if [ $up = 1 ]; then
      # The discovery log first (the discovery NQN is nvmf-host's default).
      timeout 60 "$iw" nvmf-host -a "127.0.0.1:$hport" $nocrc >"$dir/ours-discovery.log" 2>&1; ours=$?
      if [ "$ours" != 0 ]; then faults+=("our discovery: exit $ours: $(tail -n 1 "$dir/ours-discovery.log")")
      elif ! grep -q "subnqn: *$NVMF_NQN" "$dir/ours-discovery.log"; then faults+=("our discovery log does not list $NVMF_NQN"); fi
      timeout 120 "$iw" nvmf-host -a "127.0.0.1:$hport" -nqn "$NVMF_NQN" -verify "$NVMF_VERIFY" $nocrc >"$dir/ours.log" 2>&1; ours=$?
      [ "$ours" = 0 ] && grep -q "all match" "$dir/ours.log" || faults+=("our nvmf-host -verify $NVMF_VERIFY: exit $ours: $(tail -n 1 "$dir/ours.log")")
    else
      faults+=("the guest's target never said it was ready")
    fi
    touch "$box/target.stop"
  fi
  wait $vmpid
  if [ -n "$srv" ]; then
    kill -INT $srv 2>/dev/null; wait $srv; ours=$?
    [ "$ours" = 0 ] || faults+=("our nvmf-target: exit $ours after SIGINT: $(tail -n 1 "$dir/ours.log")")
  fi
  if [ -n "$cap" ]; then sleep 0.5; kill -INT $cap; wait $cap; fi
  cp "$box/guest.log" "$dir/guest.log" 2>/dev/null; cp "$box/dmesg" "$dir/dmesg.log" 2>/dev/null
  local rc; rc=$(cat "$box/rc" 2>/dev/null || echo "none (the guest did not finish: see console.log)")
  [ "$rc" = 0 ] || faults+=("guest: exit $rc: $(nvmf_guest_fail "$dir/guest.log")")
  local k; k=$(nvmf_dmesg_check "$dir/dmesg.log") || faults+=("$k")
  if [ -n "$cap" ]; then
    k=$(nvmf_capture_check "$dir/session.pcapng" "${cport}" $crc "$iw") || faults+=("$k")
    # shellcheck source=interop/capture-check.sh
    [ $crc = on ] && source interop/capture-check.sh && k=$(nvmf_tshark_note "$dir/session.pcapng") && [ -n "$k" ] && echo "note: $k"
    k=$(nvmf_siw_trailer "$dir/dmesg.log" "$dir/session.decode") && faults+=("$k")
  fi
  echo "logs in $dir ($((SECONDS - t0)) s)"
  verdict "${faults[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  nvmf_main "$@"
fi
