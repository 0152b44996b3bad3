package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"sync/atomic"
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
	ended  atomic.Int64 // connections whose serveOne returned (see reclaim)
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
// STag) and memory windows (appendWindows), and builds the advertisement:
// the main region first, in rping's encoding, so that a client reading
// only 16 bytes finds it.
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
	if _, err := rk.Rekey(context.Background(), iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite); err != nil {
		return nil, err
	}
	wo, err := reg(pd, small, iwarp.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	for _, r := range []iwarp.RemoteBuffer{s.mr.Remote(), ro.Remote(), op.Remote(), deadRemote, oldRemote, wo.Remote()} {
		s.advert, _ = r.AppendBinary(s.advert)
	}
	if err := s.appendWindows(guard); err != nil {
		return nil, err
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
	defer s.ended.Add(1)
	qp, cq, rb, err := s.connResources()
	if err != nil {
		s.report("%s: not served: %v", req.RemoteAddr(), err)
		_ = req.Reject(nil)
		return
	}
	defer qp.Close()
	defer rb.Deregister(ctx)
	for i := 0; i < 16; i++ {
		_ = qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{rb.SGE(i*4096, 4096)}})
	}
	if err := req.Accept(ctx, qp, &iwarp.ConnOptions{PrivateData: s.advert}); err != nil {
		s.report("%s: accept failed: %v", req.RemoteAddr(), err)
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

// connResources creates one connection's QP, its CQ and its receive
// buffers.
func (s *server) connResources() (*iwarp.QP, *iwarp.CQ, *iwarp.MR, error) {
	cq, err := s.dev.NewCQ(64, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	qp, err := s.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 16, RecvQueueDepth: 16, IRD: 16, ORD: 16})
	if err != nil {
		return nil, nil, nil, err
	}
	rb, err := s.pd.RegisterMemory(make([]byte, 16*4096), iwarp.AccessLocalWrite)
	if err != nil {
		qp.Close()
		return nil, nil, nil, err
	}
	return qp, cq, rb, nil
}

func (s *server) report(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served++
	fmt.Fprintf(s.out, "serve: "+format+"\n", args...)
}

const serveAbout = `Registers one region (remote read, write and atomic access) between two
canary zones, accepts iWARP connections, advertises the region in each MPA
Reply's private data (the 16-byte RemoteBuffer encoding: TO, STag, length,
big-endian; then the regions iwarp conform misuses), keeps receives posted,
and after every connection prints how it ended, its counters and whether
the canaries are intact. Serves until interrupted, or -n connections. Every
5 s in which connections ended it gives the free memory back to the system.
Exits 1 if a canary was overwritten or it cannot listen.`

// serveMaxSize bounds -size.
const serveMaxSize = 1 << 30

func runServe(args []string, stdout, stderr io.Writer) int {
	f := newFlags("serve", "[options]", serveAbout, stdout, stderr)
	addr := f.String("a", defaultHost, "listen `HOST[:PORT]`")
	port := f.Int("p", 7174, "listen `PORT` (0: any free port)")
	size := f.Int("size", 1<<20, fmt.Sprintf("`bytes` of the served region (1 to %d)", serveMaxSize))
	guard := f.Int("guard", 4096, "canary `bytes` on each side of each region (0 to 1048576)")
	count := f.Int("n", 0, "`connections` to serve before exiting (0: until interrupted)")
	expvarAddr := f.String("expvar", "", "serve the Device's counters as expvar JSON on this `HOST:PORT` (/debug/vars)")
	if code, ok := f.parse(args); !ok {
		return code
	}
	listen, ok := addrFromFlags(f, *addr, *port)
	if !ok || !noArgs(f) || !f.checkInt("size", int64(*size), 1, serveMaxSize) ||
		!f.checkInt("guard", int64(*guard), 0, 1<<20) || !f.checkInt("n", int64(*count), 0, math.MaxInt32) ||
		!checkExpvarAddr(f, *expvarAddr) {
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends reclaim
	s, err := newServer(*size, *guard, stdout)
	if err != nil {
		return f.fail("%v", err)
	}
	ln, err := iwarp.Listen("tcp", listen, nil)
	if err != nil {
		return f.fail("%v", err)
	}
	defer ln.Close()
	r := s.mr.Remote()
	fmt.Fprintf(stdout, "serve: listening on %s; region STag %#x TO %#x length %d (advertised in the MPA Reply's private data, first of %d entries for iwarp conform)\n", ln.Addr(), r.STag, r.TO, r.Len, len(s.advert)/iwarp.RemoteBufferLen)
	if *expvarAddr != "" {
		at, err := serveExpvarAt(*expvarAddr, s.dev)
		if err != nil {
			return f.fail("-expvar: %v", err)
		}
		fmt.Fprintf(stdout, "serve: the Device's counters as expvar JSON at http://%s/debug/vars\n", at)
	}
	go s.reclaim(ctx, reclaimEvery, debug.FreeOSMemory)
	go drainEvents(ctx, s.dev)
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
		return f.fail("a canary zone was overwritten")
	}
	return exitOK
}
