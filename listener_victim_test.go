package iwarp

import (
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
)

// TestListenerVictimPassesOverBytes: to shed a connection, the Listener
// passes over one whose peer's bytes have arrived unread (its goroutine
// is merely late), older or not, and takes the oldest silent one.
func TestListenerVictimPassesOverBytes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair := func() (client, server net.Conn) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); s.Close() })
		return c, s
	}
	spoke, spokeSrv := pair()
	_, silentSrv := pair()
	if _, err := spoke.Write([]byte("MPA ID Req Frame")); err != nil {
		t.Fatal(err)
	}
	if !mpa.CanPeek {
		t.Skip("sockets are not peeked at here: the oldest connection is shed, bytes or not")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !mpa.BytesWaiting(spokeSrv) {
		if time.Now().After(deadline) {
			t.Fatal("the bytes written never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	l := &Listener{}
	for _, nc := range []net.Conn{spokeSrv, silentSrv} { // oldest first
		p := &pendingConn{nc: nc}
		p.lru = l.startups.PushBack(p)
	}
	if v := l.victim(); v.nc != silentSrv {
		t.Error("the Listener would shed the connection whose Request has arrived")
	}
	if front := l.startups.Front().Value.(*pendingConn); front.nc != silentSrv {
		t.Error("the connection passed over did not move behind the silent one")
	}
}
