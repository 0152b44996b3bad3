package iwarp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/leakcheck"
)

// TestDialServeFetchAdd: the short path end to end on loopback: Serve
// advertises words, Dial connects with no configuration, PeerMemory finds
// the words and FetchAdd and CompareSwap update them.
func TestDialServeFetchAdd(t *testing.T) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr, words, err := pd.RegisterWords(2, iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, &iwarp.ServeConfig{PD: pd, Memory: []*iwarp.MR{mr}})

	ctx := context.Background()
	qp, err := iwarp.Dial(ctx, s.addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	peer, err := qp.PeerMemory()
	if err != nil {
		t.Fatal(err)
	}
	if len(peer) != 1 || peer[0] != mr.Remote() {
		t.Fatalf("PeerMemory %+v, want [%+v]", peer, mr.Remote())
	}
	counter, err := peer[0].Slice(8, 8)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 5; i++ {
		old, err := qp.FetchAdd(ctx, counter, 7)
		if err != nil {
			t.Fatal(err)
		}
		if old != 7*i {
			t.Fatalf("FetchAdd %d returned %d, want %d", i, old, 7*i)
		}
	}
	if old, err := qp.CompareSwap(ctx, peer[0], 0, 42); err != nil || old != 0 {
		t.Fatalf("CompareSwap: %d, %v; want 0, nil", old, err)
	}
	if v := atomic.LoadUint64(&words[1]); v != 35 {
		t.Fatalf("counter word %d, want 35", v)
	}
	if v, _ := mr.AtomicLoad(0); v != 42 {
		t.Fatalf("lock word %d, want 42", v)
	}
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if err := s.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v, want context.Canceled", err)
	}
}

// TestDialIPv6: Dial takes an IPv6 "[::1]:port" address.
func TestDialIPv6(t *testing.T) {
	ln, err := iwarp.Listen("tcp", "[::1]:0", nil)
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx, nil) }()
	defer func() {
		cancel()
		<-done
	}()
	qp, err := iwarp.Dial(context.Background(), ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	if a := qp.Attributes().PeerAddr; a != ln.Addr().String() {
		t.Fatalf("peer %s, want %s", a, ln.Addr())
	}
}

// TestDialDefaultsFitTheirCQs: Dial sizes the CQs it makes by the QP's
// depths, so no configuration fails with ErrCQCapacity: the zero
// configuration, deep queues, an SRQ, and a CQ of the caller's for one
// queue only.
func TestDialDefaultsFitTheirCQs(t *testing.T) {
	s := startServe(t, nil)
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd.NewSRQ(&iwarp.SRQConfig{Depth: 5000})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := dev.NewCQ(100, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*iwarp.DialConfig{
		"nil":         nil,
		"zero":        {},
		"deep queues": {QP: iwarp.QPConfig{SendQueueDepth: 1000, RecvQueueDepth: 3000}},
		"on a Device": {Device: dev},
		"SRQ":         {PD: pd, QP: iwarp.QPConfig{SRQ: srq}},
		"own send CQ": {PD: pd, QP: iwarp.QPConfig{SendCQ: mine, SendQueueDepth: 100}},
	} {
		qp, err := iwarp.Dial(context.Background(), s.addr(), cfg)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if qp.State() != iwarp.StateRTS {
			t.Errorf("%s: QP %v", name, qp.State())
		}
		qp.Close()
	}
	// The caller's CQ is the caller's: a queue that does not fit fails.
	_, err = iwarp.Dial(context.Background(), s.addr(), &iwarp.DialConfig{PD: pd, QP: iwarp.QPConfig{SendCQ: mine, SendQueueDepth: 101}})
	if !errors.Is(err, iwarp.ErrCQCapacity) {
		t.Errorf("a queue deeper than the caller's CQ: %v, want ErrCQCapacity", err)
	}
	// The Device given is not the QP's: it stays open.
	if _, err := dev.AllocPD(); err != nil {
		t.Errorf("the caller's Device after Close of its dialled QPs: %v", err)
	}
}

// TestDialErrors: configurations Dial refuses, and a failed connection.
func TestDialErrors(t *testing.T) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, _ := dev.AllocPD()
	other := iwarp.NewDevice(nil)
	defer other.Close()
	mr, _, err := pd.RegisterWords(1, iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	pd2, _ := dev.AllocPD()
	ctx := context.Background()
	for name, cfg := range map[string]*iwarp.DialConfig{
		"PD of another Device":    {Device: other, PD: pd},
		"memory of another PD":    {PD: pd2, Memory: []*iwarp.MR{mr}},
		"memory and private data": {Memory: []*iwarp.MR{mr}, Conn: iwarp.ConnOptions{PrivateData: []byte("x")}},
		"bad queue depth":         {QP: iwarp.QPConfig{SendQueueDepth: -1}},
	} {
		if _, err := iwarp.Dial(ctx, "127.0.0.1:1", cfg); !errors.Is(err, iwarp.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	// Nothing listens on a port just closed.
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := nl.Addr().String()
	nl.Close()
	if _, err := iwarp.Dial(ctx, addr, nil); err == nil {
		t.Fatal("Dial to a closed port succeeded")
	}
}

// TestDialCloseReleasesDevice: closing a dialled QP releases the Device
// Dial made for it, though the test never closes that Device: the Device
// takes no PDs, and its poller goroutine (which Dial starts in the calling
// goroutine, as the QP's connection is the Device's first) stops once the
// QP is closed — by its owner, or after the peer tore it down.
func TestDialCloseReleasesDevice(t *testing.T) {
	for _, byPeer := range []bool{false, true} {
		name := "closed"
		cfg := &iwarp.ServeConfig{}
		if byPeer {
			name = "torn down by the peer"
			cfg.Handle = func(context.Context, *iwarp.QP) {} // the server disconnects at once
		}
		t.Run(name, func(t *testing.T) {
			s := startServe(t, cfg)
			poller := pollerOf(t) // the pollers this goroutine starts
			qp, err := iwarp.Dial(context.Background(), s.addr(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := qp.PD().Device().AllocPD(); !errors.Is(err, iwarp.ErrClosed) {
				t.Errorf("the dialled QP's Device: AllocPD %v, want ErrClosed", err)
			}
			if _, err := qp.PD().RegisterMemory(make([]byte, 8), 0); err != nil {
				t.Errorf("RegisterMemory on the dialled QP's PD: %v", err)
			}
			polling := len(leakcheck.Leaked(0, poller)) == 1
			if byPeer {
				closedWithin(t, qp.Done(), "dialled QP torn down by the server")
			}
			if err := qp.Close(); err != nil && !byPeer {
				t.Fatal(err)
			}
			if !polling {
				t.Skipf("no poller started by Dial (%s): nothing to observe", runtime.GOOS)
			}
			if bad := leakcheck.Leaked(5*time.Second, poller); len(bad) > 0 {
				t.Fatalf("the dialled QP's Device still polls after the QP was closed:\n%v", bad)
			}
		})
	}
}

// pollerOf returns what the stack of a poller goroutine started by the
// calling goroutine contains.
func pollerOf(t *testing.T) string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	var id int
	if _, err := fmt.Sscanf(string(buf), "goroutine %d ", &id); err != nil {
		t.Fatalf("goroutine id from %q: %v", buf, err)
	}
	return fmt.Sprintf("iwarp/internal/poll.New in goroutine %d\n", id)
}

// TestParseAdvertisement: the encoding of AdvertiseBuffers, and what
// ParseAdvertisement makes of private data that is not a valid one.
func TestParseAdvertisement(t *testing.T) {
	bufs := make([]iwarp.RemoteBuffer, iwarp.MaxAdvertisedBuffers)
	for i := range bufs {
		bufs[i] = iwarp.RemoteBuffer{STag: uint32(0x01020300 + i), TO: uint64(i) << 40, Len: uint32(8 * (i + 1))}
	}
	adv, err := iwarp.AdvertiseBuffers(bufs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(adv) != 4+16*iwarp.MaxAdvertisedBuffers || len(adv) > 256 {
		t.Fatalf("advertisement of %d buffers is %d bytes", len(bufs), len(adv))
	}
	first, _ := bufs[0].MarshalBinary()
	if want := append([]byte{0x69, 0xA7, 1, iwarp.MaxAdvertisedBuffers}, first...); !bytes.Equal(adv[:20], want) {
		t.Fatalf("advertisement starts % x, want % x", adv[:20], want)
	}
	got, err := iwarp.ParseAdvertisement(adv)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(bufs) {
		t.Fatalf("decoded %d buffers, want %d", len(got), len(bufs))
	}
	for i := range got {
		if got[i] != bufs[i] {
			t.Fatalf("buffer %d: %+v, want %+v", i, got[i], bufs[i])
		}
	}
	if _, err := iwarp.AdvertiseBuffers(append(bufs, bufs[0])...); !errors.Is(err, iwarp.ErrInvalidConfig) {
		t.Errorf("advertising %d buffers: %v, want ErrInvalidConfig", len(bufs)+1, err)
	}
	if adv, err := iwarp.AdvertiseMemory(); adv != nil || err != nil {
		t.Errorf("advertising nothing: %x, %v; want nil, nil", adv, err)
	}

	one, _ := iwarp.AdvertiseBuffers(bufs[0])
	tooMany := append([]byte{0x69, 0xA7, 1, 16}, make([]byte, 16*16)...)
	for _, c := range []struct {
		name string
		p    []byte
		want error
	}{
		{"none", nil, iwarp.ErrNoPeerMemory},
		{"other private data", []byte("hello, server"), iwarp.ErrNoPeerMemory},
		{"a bare RemoteBuffer", first, iwarp.ErrNoPeerMemory},
		{"one byte of magic", []byte{0x69}, iwarp.ErrNoPeerMemory},
		{"bad magic", append([]byte{0x69, 0xA8}, one[2:]...), iwarp.ErrNoPeerMemory},
		{"zero buffers", []byte{0x69, 0xA7, 1, 0}, iwarp.ErrNoPeerMemory},
		{"short header", []byte{0x69, 0xA7, 1}, iwarp.ErrInvalidAdvertisement},
		{"short buffer", one[:len(one)-1], iwarp.ErrInvalidAdvertisement},
		{"trailing byte", append(one[:len(one):len(one)], 0), iwarp.ErrInvalidAdvertisement},
		{"count beyond the bytes", append([]byte{0x69, 0xA7, 1, 2}, one[4:]...), iwarp.ErrInvalidAdvertisement},
		{"too many", tooMany, iwarp.ErrInvalidAdvertisement},
		{"unknown version", append([]byte{0x69, 0xA7, 2, 1}, one[4:]...), iwarp.ErrInvalidAdvertisement},
	} {
		got, err := iwarp.ParseAdvertisement(c.p)
		if !errors.Is(err, c.want) || got != nil {
			t.Errorf("%s: %v, %v; want nil, %v", c.name, got, err, c.want)
		}
	}
}

// TestPeerMemory: what a dialled QP finds in PeerMemory from a server that
// advertised nothing, one that sent private data of its own, and a
// server's Handle from a client that advertised memory.
func TestPeerMemory(t *testing.T) {
	ctx := context.Background()
	t.Run("none", func(t *testing.T) {
		s := startServe(t, nil)
		qp, err := iwarp.Dial(ctx, s.addr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer qp.Close()
		if _, err := qp.PeerMemory(); !errors.Is(err, iwarp.ErrNoPeerMemory) {
			t.Fatalf("PeerMemory: %v, want ErrNoPeerMemory", err)
		}
	})
	t.Run("other private data", func(t *testing.T) {
		s := startServe(t, &iwarp.ServeConfig{Conn: iwarp.ConnOptions{PrivateData: []byte("hello")}})
		qp, err := iwarp.Dial(ctx, s.addr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer qp.Close()
		if _, err := qp.PeerMemory(); !errors.Is(err, iwarp.ErrNoPeerMemory) {
			t.Fatalf("PeerMemory: %v, want ErrNoPeerMemory", err)
		}
		if got := qp.Attributes().PeerPrivateData; string(got) != "hello" {
			t.Fatalf("peer private data %q", got)
		}
	})
	t.Run("client memory", func(t *testing.T) {
		seen := make(chan []iwarp.RemoteBuffer, 1)
		s := startServe(t, &iwarp.ServeConfig{Handle: func(ctx context.Context, qp *iwarp.QP) {
			bufs, err := qp.PeerMemory()
			if err != nil {
				t.Error(err)
			}
			seen <- bufs
			<-ctx.Done()
		}})
		dev := iwarp.NewDevice(nil)
		defer dev.Close()
		pd, _ := dev.AllocPD()
		a, _, err := pd.RegisterWords(1, iwarp.AccessRemoteAtomic)
		if err != nil {
			t.Fatal(err)
		}
		b, err := pd.RegisterMemory(make([]byte, 100), iwarp.AccessRemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := iwarp.Dial(ctx, s.addr(), &iwarp.DialConfig{Memory: []*iwarp.MR{a, b}})
		if err != nil {
			t.Fatal(err)
		}
		defer qp.Close()
		if qp.PD() != pd {
			t.Error("the dialled QP is not in its memory's PD")
		}
		select {
		case bufs := <-seen:
			if len(bufs) != 2 || bufs[0] != a.Remote() || bufs[1] != b.Remote() {
				t.Fatalf("server saw %+v, want %+v and %+v", bufs, a.Remote(), b.Remote())
			}
		case <-time.After(serveBound):
			t.Fatal("Handle not run")
		}
	})
	t.Run("not connected", func(t *testing.T) {
		dev := iwarp.NewDevice(nil)
		defer dev.Close()
		pd, _ := dev.AllocPD()
		cq, _ := dev.NewCQ(2, nil)
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 1, RecvQueueDepth: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer qp.Close()
		if _, err := qp.PeerMemory(); !errors.Is(err, iwarp.ErrNoPeerMemory) {
			t.Fatalf("PeerMemory: %v, want ErrNoPeerMemory", err)
		}
	})
}

// ExampleDial connects to a server that advertises a counter and
// increments it with remote FetchAdds: Dial, PeerMemory, FetchAdd, Close.
func ExampleDial() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	// The server: one word of remote-atomic memory, advertised by Serve.
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, _ := dev.AllocPD()
	counter, words, err := pd.RegisterWords(1, iwarp.AccessRemoteAtomic)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() { served <- ln.Serve(ctx, &iwarp.ServeConfig{Memory: []*iwarp.MR{counter}}) }()

	// The client.
	qp, err := iwarp.Dial(ctx, ln.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()
	peer, err := qp.PeerMemory()
	if err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		old, err := qp.FetchAdd(ctx, peer[0], 5)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("was", old)
	}
	fmt.Println("is", atomic.LoadUint64(&words[0]))
	stop()
	fmt.Println("Serve:", <-served)
	// Output:
	// was 0
	// was 5
	// is 10
	// Serve: context canceled
}
