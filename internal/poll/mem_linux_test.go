//go:build linux && !iwarp_portable

package poll

import (
	"net"
	"runtime"
	"syscall"
	"testing"
)

// 10,000 idle registered TCP sockets (both ends of 5,000 loopback
// connections: the descriptor limit of a test process is often 20,000)
// cost the Poller little heap and no goroutine.
func TestIdleHandlesCostLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 sockets")
	}
	const sockets = 10000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < sockets+200 {
		t.Skipf("needs %d descriptors (limit %d, %v)", sockets+200, lim.Cur, err)
	}
	d := newDialer(t)
	conns := make([]*net.TCPConn, 0, sockets)
	for len(conns) < sockets {
		local, peer := d.pair()
		conns = append(conns, local, peer)
	}
	p := newPoller(t)
	nop := readyFunc(func() {})
	handles := make([]*Handle, 0, sockets) // preallocated: not counted
	goroutines := runtime.NumGoroutine()
	before := heap()
	for _, c := range conns {
		h := register(t, p, c, nop)
		arm(t, h)
		handles = append(handles, h)
	}
	after := heap()
	perHandle := float64(after.HeapAlloc-before.HeapAlloc) / sockets
	allocated := float64(after.TotalAlloc-before.TotalAlloc) / sockets
	t.Logf("%d armed idle sockets: %.0f octets of live heap per Handle (%.0f allocated per Register), %d goroutines more",
		sockets, perHandle, allocated, runtime.NumGoroutine()-goroutines)
	if perHandle > 1024 {
		t.Errorf("%.0f octets of heap per Handle, want under 1 KiB", perHandle)
	}
	if g := runtime.NumGoroutine(); g != goroutines {
		t.Errorf("%d goroutines after registering, %d before: want none per Handle", g, goroutines)
	}
	for _, h := range handles {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// heap returns the memory statistics after a collection.
func heap() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}
