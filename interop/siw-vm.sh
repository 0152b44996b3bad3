#!/usr/bin/env bash
# siw-vm.sh: a small Debian 12 virtual machine running Linux's soft-iWARP
# driver (siw), the peer the interop harness (interop/suite.sh,
# interop/siw-smoke.sh, interop/siw-conform.sh) tests this stack against.
#
#   interop/siw-vm.sh build        # as root; installs the host's tools, builds the guest once
#   interop/siw-vm.sh run 'CMD'    # boots the guest, creates siw0, runs CMD (sh), powers off
#   interop/siw-vm.sh shell        # boots the guest with a shell on the console
#   interop/siw-vm.sh clean        # removes everything build made (keeps $W/share)
#
# Settings (environment):
#   W            work directory, default ~/.cache/siw-vm (about 1.1 GB)
#   SIW_VARIANT  the siw build the guest loads: default, crc (siw asks for
#                MPA CRC), p2p (siw requires MPA peer-to-peer mode) or v1
#                (siw speaks MPA revision 1)
#   HOSTFWD      host-to-guest TCP forwards, comma-separated QEMU
#                hostfwd rules (default: host 127.0.0.1:17000, :17001,
#                :17002 to guest ports 7000, 7001, 18515)
#   TIMEOUT      seconds before a run's VM is stopped (default 300)
#   MEM, SMP     guest memory in MiB (768) and CPUs (2)
#   ACCEL        kvm, tcg or auto (default): KVM when the host has a
#                hardware KVM module, else QEMU's emulation (TCG)
#   KEEP=1       boot the disk image writable (default: snapshot mode,
#                a run never changes the image)
#   MIRROR       the Debian mirror (default: the host's apt mirror), and
#   SECURITY_MIRROR  its security archive (default: MIRROR's debian-security)
#
# The guest: Debian bookworm (debootstrap, minbase) with its stock kernel,
# rdma-core, ibverbs-providers, ibverbs-utils, rdmacm-utils (rping,
# rdma_client, rdma_server), perftest and tcpdump. Debian does not ship
# siw.ko (CONFIG_RDMA_SIW is not set), so build compiles it out of tree
# from the linux-source-6.1 package of the guest kernel's exact version
# against the matching headers, once per variant. siw 6.1's knobs are
# constants in siw_main.c, not module parameters, so each variant is the
# same source with one constant changed.
#
# Network: QEMU user mode. The guest's eth0 is 10.0.2.15; the guest
# reaches the host's 127.0.0.1:PORT by dialing 10.0.2.2:PORT; the host
# reaches guest ports through HOSTFWD. The host folder $W/share is the
# guest's /mnt/host (9p). A run writes CMD to $W/share/cmd.sh; the guest
# prints "siw-vm: ready, running /mnt/host/cmd.sh" on its console when it
# starts it (the harness waits for that line) and powers off when CMD ends.
# The console of the last run is kept in $W/last-run.log.
set -euo pipefail

W=${W:-${HOME:-/root}/.cache/siw-vm}
RELEASE=bookworm
ROOT=$W/rootfs   # the guest's file tree
BROOT=$W/buildroot # a throwaway copy of it with the compiler, for siw.ko
DISK=$W/disk.img
DISK_SIZE=${DISK_SIZE:-1400M}
MEM=${MEM:-768}
SMP=${SMP:-2}
TIMEOUT=${TIMEOUT:-300}
HOSTFWD=${HOSTFWD-tcp:127.0.0.1:17000-10.0.2.15:7000,tcp:127.0.0.1:17001-10.0.2.15:7001,tcp:127.0.0.1:17002-10.0.2.15:18515}
VARIANTS="default crc p2p v1"
GUEST_PACKAGES="linux-image-amd64 initramfs-tools kmod iproute2 procps
  rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest tcpdump"

say() { printf 'siw-vm %s: %s\n' "$(date +%T)" "$*" >&2; }
die() { say "$*"; exit 1; }

# --- the host -------------------------------------------------------------

# host_tools installs what build and run need on a Debian host.
host_tools() {
  local missing="" tool
  for tool in qemu-system-x86_64:qemu-system-x86 debootstrap:debootstrap \
    mkfs.ext4:e2fsprogs xz:xz-utils dpkg-deb:dpkg; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing="$missing ${tool#*:}"
  done
  [ -z "$missing" ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "missing:$missing (no apt-get to install them)"
  say "installing on the host:$missing"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
}

# debian_mirror prints the mirror the host's apt uses (deb822 or one-line
# sources), or Debian's CDN.
debian_mirror() {
  local m=""
  m=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v -- '-security' | head -n 1) || true
  [ -n "$m" ] || m=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null) || true
  echo "${m:-http://deb.debian.org/debian}"
}
MIRROR=${MIRROR:-$(debian_mirror)}
MIRROR=${MIRROR%/}
SECURITY_MIRROR=${SECURITY_MIRROR:-${MIRROR%/debian}/debian-security}

# --- chroots ---------------------------------------------------------------

# with_mounts DIR CMD...: runs CMD with /proc, /sys and /dev mounted in the
# tree DIR. (If CMD fails, build's exit trap unmounts them: CMD runs with
# errexit in force, which a "CMD || ..." here would switch off.)
with_mounts() {
  local dir=$1; shift
  mount -t proc proc "$dir/proc"
  mount -t sysfs sysfs "$dir/sys"
  mount --bind /dev "$dir/dev"
  mount --bind /dev/pts "$dir/dev/pts"
  "$@"
  unmount_all "$dir"
}
# unmount_all DIR undoes with_mounts (also after a failure), before
# anything deletes or copies the tree: a bind-mounted /dev must never be
# emptied with it.
unmount_all() {
  local m
  for m in dev/pts dev sys proc; do
    if mountpoint -q "$1/$m" 2>/dev/null; then umount -l "$1/$m"; fi
  done
}
# in_tree DIR CMD...: CMD inside the tree DIR with a clean environment.
in_tree() {
  local dir=$1; shift
  chroot "$dir" /usr/bin/env -i HOME=/root LC_ALL=C DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# Each step of build leaves a stamp in $ROOT/.siw-vm; a step whose stamp
# exists is done (build is idempotent, and resumes after a failure).
done_step() { [ -e "$ROOT/.siw-vm/$1" ]; }
mark_step() { mkdir -p "$ROOT/.siw-vm" && touch "$ROOT/.siw-vm/$1"; }

# --- the guest's file tree ---------------------------------------------------

step_base() {
  say "debootstrap $RELEASE (minbase) from $MIRROR"
  unmount_all "$ROOT"
  rm -rf --one-file-system "$ROOT"
  debootstrap --variant=minbase "$RELEASE" "$ROOT" "$MIRROR"
  cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR $RELEASE main
deb $MIRROR $RELEASE-updates main
deb $SECURITY_MIRROR $RELEASE-security main
EOF
  # no service may start inside the chroot
  printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
  chmod 755 "$ROOT/usr/sbin/policy-rc.d"
  mark_step base
}

step_packages() {
  say "guest packages: $(echo $GUEST_PACKAGES)"
  in_tree "$ROOT" apt-get update
  in_tree "$ROOT" apt-get install -y --no-install-recommends $GUEST_PACKAGES
  mark_step packages
}

# guest_kernel prints the version of the kernel installed in the guest.
guest_kernel() {
  local k
  k=$(ls "$ROOT/lib/modules" | sort -V | tail -n 1)
  [ -n "$k" ] || die "no kernel in $ROOT/lib/modules"
  echo "$k"
}

# siw_knob VARIANT prints the sed expression that makes siw_main.c's
# constant for VARIANT true (nothing for default).
siw_knob() {
  case $1 in
    default) ;;
    crc) echo 's/^const bool mpa_crc_required;/const bool mpa_crc_required = true;/' ;;
    p2p) echo 's/^const bool peer_to_peer;/const bool peer_to_peer = true;/' ;;
    v1) echo 's/^u_char mpa_version = MPA_REVISION_2;/u_char mpa_version = MPA_REVISION_1;/' ;;
    *) die "unknown siw variant '$1' (one of: $VARIANTS)" ;;
  esac
}

# build_siw KVER: in the build tree, fetches linux-source-6.1 of the
# guest kernel's package version and compiles siw.ko once per variant,
# into $BROOT/siw/VARIANT/siw.ko.
build_siw() {
  local kver=$1 pkgver src v d knob
  pkgver=$(in_tree "$BROOT" dpkg-query -W -f '${Version}' "linux-image-$kver")
  say "compiling siw.ko for $kver from linux-source-6.1 $pkgver"
  in_tree "$BROOT" apt-get update # (the guest's lists are gone after a first build)
  in_tree "$BROOT" apt-get install -y --no-install-recommends make "linux-headers-$kver"
  src=$BROOT/siw/src
  mkdir -p "$src"
  in_tree "$BROOT" sh -c "cd /siw && apt-get download linux-source-6.1=$pkgver"
  dpkg-deb --fsys-tarfile "$BROOT"/siw/linux-source-6.1_*.deb |
    tar -x -O ./usr/src/linux-source-6.1.tar.xz |
    tar -x -J -C "$src" --strip-components=5 linux-source-6.1/drivers/infiniband/sw/siw
  [ -e "$src/siw_main.c" ] || die "drivers/infiniband/sw/siw not found in linux-source-6.1 $pkgver"
  for v in $VARIANTS; do
    d=$BROOT/siw/$v
    cp -a "$src" "$d"
    knob=$(siw_knob "$v")
    if [ -n "$knob" ]; then
      sed -i "$knob" "$d/siw_main.c"
      cmp -s "$src/siw_main.c" "$d/siw_main.c" && die "siw variant $v: siw_main.c has no such constant in $pkgver"
    fi
    in_tree "$BROOT" make -s -C "/usr/src/linux-headers-$kver" M="/siw/$v" CONFIG_RDMA_SIW=m modules
    in_tree "$BROOT" strip --strip-debug "/siw/$v/siw.ko"
  done
}

# step_siw: the compiler and headers go into a copy of the guest tree, which
# is thrown away afterwards; only the modules go into the guest.
step_siw() {
  local kver v dest
  kver=$(guest_kernel)
  unmount_all "$BROOT"
  rm -rf --one-file-system "$BROOT"
  cp -a --one-file-system "$ROOT" "$BROOT"
  mkdir -p "$BROOT/siw"
  with_mounts "$BROOT" build_siw "$kver"
  # default: where modprobe finds it; the others beside it, loaded by name
  dest=$ROOT/lib/modules/$kver/updates
  mkdir -p "$dest"
  for v in $VARIANTS; do
    if [ "$v" = default ]; then cp "$BROOT/siw/$v/siw.ko" "$dest/siw.ko"
    else cp "$BROOT/siw/$v/siw.ko" "$dest/siw-$v.ko.variant"; fi
  done
  unmount_all "$BROOT"
  rm -rf --one-file-system "$BROOT"
  in_tree "$ROOT" depmod -a "$kver"
  mark_step siw
}

step_boot() {
  local kver
  kver=$(guest_kernel)
  # a small initrd (quicker to boot under emulation): only what mounts the root
  printf '%s\n' virtio_pci virtio_blk virtio_net ext4 >"$ROOT/etc/initramfs-tools/modules"
  echo MODULES=list >"$ROOT/etc/initramfs-tools/conf.d/siw-vm"
  with_mounts "$ROOT" in_tree "$ROOT" update-initramfs -u -k "$kver"
  mkdir -p "$W/boot"
  cp "$ROOT/boot/vmlinuz-$kver" "$W/boot/vmlinuz"
  cp "$ROOT/boot/initrd.img-$kver" "$W/boot/initrd.img"
  # what the guest does not need at run time
  in_tree "$ROOT" apt-get clean
  rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/usr/share/doc "$ROOT"/usr/share/man "$ROOT"/usr/share/locale
  mark_step boot
}

# write_init installs the guest's PID 1.
write_init() {
  echo siwvm >"$ROOT/etc/hostname"
  echo '/dev/vda / ext4 rw 0 1' >"$ROOT/etc/fstab"
  cat >"$ROOT/sbin/siw-vm-init" <<'EOF'
#!/bin/sh
# PID 1 of the siw guest (interop/siw-vm.sh): mounts, network, siw0, then
# runs /mnt/host/cmd.sh (or a console shell) and powers off.
PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
export PATH HOME TERM
fs() { mountpoint -q "$3" || mount -t "$1" "$2" "$3"; }
fs proc proc /proc; fs sysfs sys /sys; fs devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
fs devpts devpts /dev/pts; fs tmpfs tmpfs /dev/shm; fs tmpfs tmpfs /run; fs tmpfs tmpfs /tmp
hostname siwvm
modprobe virtio_net 2>/dev/null # (no udev in the guest: load what it would)
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
mkdir -p /mnt/host
modprobe 9pnet_virtio 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 hostshare /mnt/host ||
  echo "siw-vm: the host folder is not mounted"
variant=default
for a in $(cat /proc/cmdline); do
  case $a in siwvm.variant=*) variant=${a#siwvm.variant=} ;; esac
done
if [ "$variant" = default ]; then
  modprobe siw
else
  for dep in $(modinfo -F depends siw | tr , ' '); do modprobe "$dep"; done
  insmod "/lib/modules/$(uname -r)/updates/siw-$variant.ko.variant"
fi && echo "siw-vm: siw ($variant build) loaded" || echo "siw-vm: loading siw ($variant build) FAILED"
rdma link add siw0 type siw netdev eth0 || echo "siw-vm: rdma link add FAILED"
rdma link show
echo "siw-vm: kernel $(uname -r), up $(cut -d' ' -f1 /proc/uptime) s"
if grep -q -w siwvm.shell /proc/cmdline; then
  setsid sh -c 'exec sh </dev/ttyS0 >/dev/ttyS0 2>&1'
elif [ -f /mnt/host/cmd.sh ]; then
  echo "siw-vm: ready, running /mnt/host/cmd.sh"
  sh /mnt/host/cmd.sh
  echo "siw-vm: cmd.sh exited $?"
fi
sync
echo "siw-vm: power off"
echo o >/proc/sysrq-trigger
sleep 30
EOF
  chmod 755 "$ROOT/sbin/siw-vm-init"
}

build() {
  [ "$(id -u)" = 0 ] || die "build needs root (debootstrap, chroot, mounts)"
  local t0=$SECONDS
  host_tools
  mkdir -p "$W/share"
  trap 'unmount_all "$ROOT"; unmount_all "$BROOT"' EXIT
  done_step base || step_base
  done_step packages || step_packages
  done_step siw || step_siw
  done_step boot || step_boot
  write_init
  # The disk image is remade when the finished steps or the init script
  # differ from the ones it was made from.
  local made
  made=$( (stat -c '%n %Y' "$ROOT"/.siw-vm/*; cat "$ROOT/sbin/siw-vm-init") | cksum)
  if [ ! -e "$DISK" ] || [ "$(cat "$W/disk.made" 2>/dev/null)" != "$made" ]; then
    say "disk image $DISK ($DISK_SIZE)"
    rm -f "$DISK" "$W/disk.made"
    mkfs.ext4 -q -F -L siwroot -d "$ROOT" "$DISK" "$DISK_SIZE"
    echo "$made" >"$W/disk.made"
  fi
  say "ready in $((SECONDS - t0)) s: kernel $(guest_kernel), siw builds: $VARIANTS"
}

# --- running it ----------------------------------------------------------------

# accel prints QEMU's accelerator options: KVM only with a hardware KVM
# module (kvm_intel, kvm_amd); other KVM flavours (kvm_pvm in some cloud
# sandboxes) cannot run a stock kernel, so emulation is used there.
accel() {
  local a=${ACCEL:-auto}
  if [ "$a" = auto ]; then
    a=tcg
    if [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then a=kvm; fi
  fi
  case $a in
    kvm) echo "-accel kvm -cpu host" ;;
    tcg) echo "-accel tcg,thread=multi -cpu max" ;;
    *) die "ACCEL=$a: one of kvm, tcg, auto" ;;
  esac
}

# boot EXTRA-KERNEL-ARGS: runs the guest until it powers off or TIMEOUT.
boot() {
  [ -e "$DISK" ] && [ -e "$W/boot/vmlinuz" ] || die "no guest yet: run '$0 build' first"
  local v=${SIW_VARIANT:-default} snapshot=-snapshot rules=""
  case " $VARIANTS " in *" $v "*) ;; *) die "SIW_VARIANT=$v: one of $VARIANTS" ;; esac
  if [ "${KEEP:-0}" = 1 ]; then snapshot=""; fi
  if [ -n "$HOSTFWD" ]; then rules=",hostfwd=${HOSTFWD//,/,hostfwd=}"; fi
  say "booting ($(accel | cut -d' ' -f2), siw $v build, timeout ${TIMEOUT}s)"
  timeout --foreground "$TIMEOUT" qemu-system-x86_64 $(accel) -m "$MEM" -smp "$SMP" \
    -nographic -no-reboot $snapshot \
    -kernel "$W/boot/vmlinuz" -initrd "$W/boot/initrd.img" \
    -append "console=ttyS0 root=/dev/vda rw init=/sbin/siw-vm-init net.ifnames=0 quiet panic=-1 siwvm.variant=$v $1" \
    -drive "file=$DISK,if=virtio,format=raw" \
    -netdev "user,id=net0,net=10.0.2.0/24,host=10.0.2.2$rules" \
    -device virtio-net-pci,netdev=net0,romfile= \
    -virtfs "local,path=$W/share,mount_tag=hostshare,security_model=none,id=hostshare"
}

case ${1:-} in
  build) build ;;
  run)
    mkdir -p "$W/share"
    printf '%s\n' "${2:-true}" >"$W/share/cmd.sh"
    boot "" </dev/null 2>&1 | tee "$W/last-run.log"
    ;;
  shell)
    mkdir -p "$W/share"
    rm -f "$W/share/cmd.sh"
    boot siwvm.shell
    ;;
  clean)
    unmount_all "$ROOT"
    unmount_all "$BROOT"
    rm -rf --one-file-system "$ROOT" "$BROOT" "$DISK" "$W/disk.made" "$W/boot" "$W/last-run.log"
    ;;
  *)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 2
    ;;
esac
