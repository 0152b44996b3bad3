package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

func init() {
	register(&command{
		name:  "serve",
		short: "a standalone responder with canaried registered memory, for external test tools",
		run:   runServe,
	})
}

// canary is the byte value of the guard zones around the served region.
const canary = 0xCA

// server is the state of `iwarp serve`: one Device, one region exposed to
// every connection (remote read, write and atomic access) and the regions
// the hostile-peer suite (`iwarp conform`) misuses, each guarded by canary
// zones that are checked after every connection.
type server struct {
	dev    *iwarp.Device
	pd     *iwarp.PD
	mr     *iwarp.MR
	advert []byte    // the MPA Reply's private data: conform.Advert encoding
	zones  []guarded // every region's bytes with its guards
	out    io.Writer
	mu     sync.Mutex // serialises report lines
	served int
}

// guarded is a registered region with canary zones of guard bytes on each
// side: all = guard | region | guard.
type guarded struct {
	all   []byte
	guard int
}

// newGuarded returns a zeroed region of size bytes (8-byte aligned, for
// atomics) inside canary zones.
func newGuarded(size, guard int) (region []byte, g guarded) {
	words := make([]uint64, (size+2*guard+7)/8)
	all := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size+2*guard)
	for i := range all {
		all[i] = canary
	}
	region = all[guard : guard+size]
	clear(region)
	return region, guarded{all: all, guard: guard}
}

// newServer registers the served region of size bytes and the conform
// suite's regions (a read-only and a write-only one, one in another
// protection domain, an invalidated STag and a re-keyed region's old
// STag), and builds the advertisement: the main region first, in rping's
// encoding, so that a client reading only 16 bytes finds it.
func newServer(size, guard int, out io.Writer) (*server, error) {
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	other, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	s := &server{dev: dev, pd: pd, out: out}
	reg := func(p *iwarp.PD, size int, acc iwarp.Access) (*iwarp.MR, error) {
		region, g := newGuarded(size, guard)
		s.zones = append(s.zones, g)
		return p.RegisterMemory(region, acc)
	}
	if s.mr, err = reg(pd, size, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite|iwarp.AccessRemoteAtomic); err != nil {
		return nil, err
	}
	const small = 4096
	ro, err := reg(pd, small, iwarp.AccessRemoteRead)
	if err != nil {
		return nil, err
	}
	op, err := reg(other, small, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite|iwarp.AccessRemoteAtomic)
	if err != nil {
		return nil, err
	}
	dead, err := reg(pd, small, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	deadRemote := dead.Remote()
	if err := dead.Deregister(context.Background()); err != nil {
		return nil, err
	}
	rk, err := reg(pd, small, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	oldRemote := rk.Remote()
	if _, err := rk.Rekey(iwarp.AccessRemoteRead | iwarp.AccessRemoteWrite); err != nil {
		return nil, err
	}
	wo, err := reg(pd, small, iwarp.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	for _, r := range []iwarp.RemoteBuffer{s.mr.Remote(), ro.Remote(), op.Remote(), deadRemote, oldRemote, wo.Remote()} {
		s.advert, _ = r.AppendBinary(s.advert)
	}
	return s, nil
}

// canariesIntact reports whether every guard zone is untouched.
func (s *server) canariesIntact() bool {
	for _, z := range s.zones {
		n := len(z.all)
		for i := 0; i < z.guard; i++ {
			if z.all[i] != canary || z.all[n-1-i] != canary {
				return false
			}
		}
	}
	return true
}

// serveOne accepts one connection request on a fresh QP, advertises the
// region in the Reply's private data (iwarp.RemoteBuffer encoding), keeps
// receives posted, and waits until the connection ends.
func (s *server) serveOne(ctx context.Context, req *iwarp.ConnRequest) {
	cq, err := s.dev.NewCQ(64, nil)
	if err != nil {
		return
	}
	qp, err := s.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 16, RecvQueueDepth: 16, IRD: 16, ORD: 16})
	if err != nil {
		return
	}
	defer qp.Close()
	rb, _ := s.pd.RegisterMemory(make([]byte, 16*4096), iwarp.AccessLocalWrite)
	defer rb.Deregister(ctx)
	for i := 0; i < 16; i++ {
		_ = qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{rb.SGE(i*4096, 4096)}})
	}
	if err := req.Accept(ctx, qp, &iwarp.ConnOptions{PrivateData: s.advert}); err != nil {
		s.report("accept failed: %v", err)
		return
	}
	peer := qp.Attributes().PeerAddr
	for {
		c, err := cq.Next(ctx)
		if err != nil {
			break
		}
		if c.Op == iwarp.OpRecv && c.Status == iwarp.StatusSuccess {
			_ = qp.PostRecv(iwarp.RecvWR{ID: c.ID, SGL: []iwarp.SGE{rb.SGE(int(c.ID)*4096, 4096)}})
		}
		if c.Status != iwarp.StatusSuccess {
			break
		}
	}
	<-qp.Done()
	st := qp.Stats()
	verdict := "canaries intact"
	if !s.canariesIntact() {
		verdict = "CANARIES OVERWRITTEN"
	}
	s.report("%s: %v; %d FPDUs in, %d out, %d Terminates; %s", peer, qp.Err(), st.FPDUsReceived, st.FPDUsSent, len(st.Terminates), verdict)
}

func (s *server) report(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served++
	fmt.Fprintf(s.out, "serve: "+format+"\n", args...)
}

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("a", "127.0.0.1:7174", "listen address")
	size := fs.Int("size", 1<<20, "bytes of the served region")
	guard := fs.Int("guard", 4096, "canary bytes on each side of the region")
	count := fs.Int("n", 0, "connections to serve before exiting (0: until interrupted)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s, err := newServer(*size, *guard, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "iwarp serve: %v\n", err)
		return 1
	}
	ln, err := iwarp.Listen("tcp", *addr, nil)
	if err != nil {
		fmt.Fprintf(stderr, "iwarp serve: %v\n", err)
		return 1
	}
	defer ln.Close()
	r := s.mr.Remote()
	fmt.Fprintf(stdout, "serve: listening on %s; region STag %#x TO %#x length %d (advertised in the MPA Reply's private data, first of %d entries for iwarp conform)\n", ln.Addr(), r.STag, r.TO, r.Len, len(s.advert)/iwarp.RemoteBufferLen)
	var wg sync.WaitGroup
	for i := 0; *count == 0 || i < *count; i++ {
		req, err := ln.Accept(ctx)
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveOne(ctx, req)
		}()
	}
	wg.Wait()
	if !s.canariesIntact() {
		return 1
	}
	return 0
}
