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
// every connection (remote read, write and atomic access), guarded by
// canary zones that are checked after every connection.
type server struct {
	dev    *iwarp.Device
	pd     *iwarp.PD
	mr     *iwarp.MR
	all    []byte // guard | region | guard
	guard  int
	out    io.Writer
	mu     sync.Mutex // serialises report lines
	served int
}

func newServer(size, guard int, out io.Writer) (*server, error) {
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	words := make([]uint64, (size+2*guard+7)/8)
	all := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size+2*guard)
	for i := range all {
		all[i] = canary
	}
	region := all[guard : guard+size]
	clear(region)
	mr, err := pd.RegisterMemory(region, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite|iwarp.AccessRemoteAtomic)
	if err != nil {
		return nil, err
	}
	return &server{dev: dev, pd: pd, mr: mr, all: all, guard: guard, out: out}, nil
}

// canariesIntact reports whether both guard zones are untouched.
func (s *server) canariesIntact() bool {
	n := len(s.all)
	for i := 0; i < s.guard; i++ {
		if s.all[i] != canary || s.all[n-1-i] != canary {
			return false
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
	adv, _ := s.mr.Remote().MarshalBinary()
	if err := req.Accept(ctx, qp, &iwarp.ConnOptions{PrivateData: adv}); err != nil {
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
	fmt.Fprintf(stdout, "serve: listening on %s; region STag %#x TO %#x length %d (advertised in the MPA Reply's private data)\n", ln.Addr(), r.STag, r.TO, r.Len)
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
