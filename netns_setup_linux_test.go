//go:build amd64 || arm64

package iwarp_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// A real network path for the tests: two network namespaces joined by a
// veth pair with MTU 1500 (so TCP's MSS is 1448, not loopback's 65483),
// GSO off on both ends (every segment is its own packet), and on the
// egress of each end
//
//   - loss: a classic-BPF classifier on the clsact egress hook drops 1% of
//     the packets longer than 200 bytes (data segments: the small MPA
//     startup frames and pure ACKs pass, so connection set-up never waits
//     for a SYN retransmission);
//   - reordering: a second classifier redirects 5% of the data packets to
//     an ifb device whose tbf qdisc (50 Mbit/s) holds them while later
//     packets overtake them;
//   - delay: netem (delay 2ms 1ms) as the root qdisc, where the kernel has
//     it (this machine's does not: the path then has loss and reordering
//     but no added delay).
//
// The test process stays in its own namespace: the sockets of each side
// are created in theirs (a locked OS thread enters the namespace with
// setns for the socket call, then leaves; a socket keeps the namespace it
// was created in), so both QPs live in the test process and are verified
// there.

// netnsAddr are the addresses of the two ends.
var netnsAddr = [2]string{"10.255.0.1", "10.255.0.2"}

// netnsSeq keeps namespace names unique within the process.
var netnsSeq atomic.Int32

// netnsPath is the set-up: namespace [0] holds the server end, [1] the
// client end.
type netnsPath struct {
	names [2]string
	ns    [2]*os.File
	netem string // "" or why there is no added delay
}

// Classic BPF programs for the clsact egress classifiers (tc's "bytecode"
// syntax: count, then "code jt jf k" per instruction):
//
//	ld len; jgt #200, next, pass; ld rand; jgt #T, next, pass; ret #A; pass: ret #B
//
// rand is the ancillary load SKF_AD_OFF+SKF_AD_RANDOM (0xfffff038).
func netnsBPF(permille int, hit, miss uint32) string {
	t := uint32((1<<32 - 1) - uint64(1<<32-1)*uint64(permille)/1000)
	return fmt.Sprintf("6,128 0 0 0,37 0 3 200,32 0 0 4294963256,37 0 1 %d,6 0 0 %d,6 0 0 %d", t, hit, miss)
}

const (
	tcActShot   = 2          // TC_ACT_SHOT: drop (direct-action mode)
	tcActUnspec = 4294967295 // TC_ACT_UNSPEC (-1): no verdict, next filter
)

// setupNetns builds the path, or skips the test saying exactly what is
// missing. Everything is removed when the test ends, also on failure.
func setupNetns(t *testing.T) *netnsPath {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("network namespaces need root (euid %d)", os.Geteuid())
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %q in PATH (iproute2): %v", tool, err)
		}
	}
	removeStaleNetns(t)
	p := &netnsPath{}
	id := fmt.Sprintf("iwarpt%d-%d", os.Getpid(), netnsSeq.Add(1))
	for i, side := range []string{"srv", "cli"} {
		p.names[i] = id + side
		if out, err := run("ip", "netns", "add", p.names[i]); err != nil {
			t.Skipf("cannot create a network namespace: ip netns add: %v: %s", err, out)
		}
		name := p.names[i]
		t.Cleanup(func() {
			if out, err := run("ip", "netns", "del", name); err != nil {
				t.Errorf("ip netns del %s: %v: %s", name, err, out)
			}
		})
		f, err := os.Open("/run/netns/" + name)
		if err != nil {
			t.Skipf("namespace %s has no handle: %v", name, err)
		}
		t.Cleanup(func() { f.Close() })
		p.ns[i] = f
	}
	a, b := p.names[0], p.names[1]
	steps := [][]string{
		{"ip", "-n", a, "link", "add", "iw0", "type", "veth", "peer", "name", "iw1", "netns", b},
		{"ip", "-n", a, "link", "set", "lo", "up"},
		{"ip", "-n", b, "link", "set", "lo", "up"},
		{"ip", "-n", a, "link", "set", "iw0", "mtu", "1500", "gso_max_segs", "1", "up"},
		{"ip", "-n", b, "link", "set", "iw1", "mtu", "1500", "gso_max_segs", "1", "up"},
		{"ip", "-n", a, "addr", "add", netnsAddr[0] + "/24", "dev", "iw0"},
		{"ip", "-n", b, "addr", "add", netnsAddr[1] + "/24", "dev", "iw1"},
	}
	for i, dev := range []string{"iw0", "iw1"} {
		ns := p.names[i]
		tc := []string{"ip", "netns", "exec", ns, "tc"}
		steps = append(steps,
			[]string{"ip", "-n", ns, "link", "add", "iwr", "type", "ifb"},
			[]string{"ip", "-n", ns, "link", "set", "iwr", "up"},
			append(tc, "qdisc", "add", "dev", "iwr", "root", "tbf", "rate", "50mbit", "burst", "1600", "latency", "100ms"),
			append(tc, "qdisc", "add", "dev", dev, "clsact"),
			append(tc, "filter", "add", "dev", dev, "egress", "prio", "1", "bpf", "bytecode", netnsBPF(10, tcActShot, tcActUnspec), "da"),
			append(tc, "filter", "add", "dev", dev, "egress", "prio", "2", "bpf", "bytecode", netnsBPF(50, tcActUnspec, 0),
				"action", "mirred", "egress", "redirect", "dev", "iwr"),
		)
	}
	for _, s := range steps {
		if out, err := run(s[0], s[1:]...); err != nil {
			t.Skipf("cannot build the impaired path (kernel without veth, ifb, clsact, cls_bpf, act_mirred or tbf?): %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	for i, dev := range []string{"iw0", "iw1"} {
		if out, err := run("ip", "netns", "exec", p.names[i], "tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", "2ms", "1ms"); err != nil {
			p.netem = fmt.Sprintf("no netem (tc qdisc add ... netem: %v: %s): no added delay", err, bytes.TrimSpace(out))
			break
		}
	}
	return p
}

// removeStaleNetns deletes the namespaces of earlier test processes that
// were killed before their cleanup ran (named iwarpt<pid>-..., the pid no
// longer running).
func removeStaleNetns(t *testing.T) {
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		pid, _, ok := strings.Cut(strings.TrimPrefix(e.Name(), "iwarpt"), "-")
		if n, err := strconv.Atoi(pid); !strings.HasPrefix(e.Name(), "iwarpt") || !ok || err != nil || n == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil || !os.IsNotExist(err) {
			continue
		}
		if out, err := run("ip", "netns", "del", e.Name()); err != nil {
			t.Logf("stale namespace %s: ip netns del: %v: %s", e.Name(), err, out)
		}
	}
}

// run runs a command and returns its combined output.
func run(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}

// inNetns calls f on an OS thread that is in namespace ns for the call
// (for creating sockets there), then returns the thread to the process's
// namespace. If it cannot return, the thread stays locked to its goroutine
// and ends with it, so no other goroutine ever runs in the wrong
// namespace. Since Go 1.10 the runtime never starts threads from a locked
// one, so no thread inherits the namespace either.
func inNetns(ns *os.File, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer self.Close()
		if err := setns(ns); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		ferr := f()
		if err := setns(self); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("setns back to the test's namespace: %w", err))
			return // the thread ends with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setns moves the calling OS thread into the network namespace ns.
func setns(ns *os.File) error {
	if _, _, e := syscall.RawSyscall(sysSetns, ns.Fd(), syscall.CLONE_NEWNET, 0); e != 0 {
		return e
	}
	return nil
}

// tcpCounters returns the TCP counters of namespace name: the Tcp lines of
// /proc/net/snmp and the TcpExt lines of /proc/net/netstat, by name.
func tcpCounters(name string) (map[string]int64, error) {
	out, err := run("ip", "netns", "exec", name, "cat", "/proc/net/snmp", "/proc/net/netstat")
	if err != nil {
		return nil, fmt.Errorf("reading the counters of %s: %v: %s", name, err, out)
	}
	m := map[string]int64{}
	lines := strings.Split(string(out), "\n")
	for i := 0; i+1 < len(lines); i++ {
		keys, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(keys) == 0 || len(keys) != len(vals) || keys[0] != vals[0] || (keys[0] != "Tcp:" && keys[0] != "TcpExt:") {
			continue
		}
		for j := 1; j < len(keys); j++ {
			if v, err := strconv.ParseInt(vals[j], 10, 64); err == nil {
				m[keys[j]] = v
			}
		}
		i++
	}
	return m, nil
}
