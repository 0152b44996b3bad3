#!/usr/bin/env bash
# perf-netns.sh: "iwarp perf" between two network namespaces joined by a
# veth pair with MTU 1500 (a real Ethernet MSS of 1460, where the FPDU-size
# policy shows), against raw TCP over the same link. Needs root and
# iproute2. Usage: scripts/perf-netns.sh [extra "iwarp perf" client flags]
# (default: -vs-tcp -targets write,write-crc,read -pairs 5).
set -euo pipefail
cd "$(dirname "$0")/.."
MTU=${MTU:-1500}
A=iwarpperf-a B=iwarpperf-b
BIN=$(mktemp -d)/iwarp
go build -o "$BIN" ./cmd/iwarp
cleanup() {
	[[ -n ${SRV:-} ]] && kill "$SRV" 2>/dev/null || true
	ip netns del $A 2>/dev/null || true
	ip netns del $B 2>/dev/null || true
	rm -rf "$(dirname "$BIN")"
}
trap cleanup EXIT
ip netns add $A
ip netns add $B
ip link add veth-ipa type veth peer name veth-ipb
ip link set veth-ipa netns $A
ip link set veth-ipb netns $B
ip -n $A addr add 10.199.0.1/24 dev veth-ipa
ip -n $B addr add 10.199.0.2/24 dev veth-ipb
for ns in $A $B; do
	ip -n $ns link set lo up
done
ip -n $A link set veth-ipa mtu "$MTU" up
ip -n $B link set veth-ipb mtu "$MTU" up
ip netns exec $A "$BIN" perf -s -a 10.199.0.1:7175 &
SRV=$!
sleep 0.5
echo "# namespaces $A (server) and $B (client), veth MTU $MTU, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ $# -eq 0 ]]; then
	set -- -vs-tcp -targets write,write-crc,read -pairs 5
fi
ip netns exec $B "$BIN" perf -c 10.199.0.1:7175 "$@"
