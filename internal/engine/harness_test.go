package engine

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/testnet"
)

// side is one end of a test connection: a QP with its own CQs, on a shared
// or separate STag table.
type side struct {
	qp     *QP
	scq    *CQ
	rcq    *CQ
	table  *mem.Table
	pd     uint32
	nc     net.Conn
	params Params
}

type pairOpts struct {
	crc      bool
	mulpdu   int
	depth    int
	ird, ord int
	ext      bool // RFC 7306 agreed
}

// tcpPair returns the two ends of a real loopback TCP connection.
func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	a, b := testnet.TCPPair(t)
	return a, b
}

func newSide(t testing.TB, o pairOpts, nc net.Conn) *side {
	t.Helper()
	s := &side{table: mem.NewTable(mem.TableOptions{}), pd: 7, nc: nc}
	depth := o.depth
	if depth == 0 {
		depth = 16
	}
	s.scq = NewCQ(depth, nil)
	s.rcq = NewCQ(depth, nil)
	qp, err := New(Config{Table: s.table, PD: s.pd, SendCQ: s.scq, RecvCQ: s.rcq,
		SQDepth: depth, RQDepth: depth, MaxSGE: 6, MaxInline: 256, DrainTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.qp = qp
	s.params = Params{IRD: max(o.ird, 1), ORD: max(o.ord, 1), MULPDU: o.mulpdu, RFC7306: o.ext}
	return s
}

// newPair connects two QPs over loopback TCP (MPA startup is the mpa
// package's: here both ends start full operation directly).
func newPair(t testing.TB, o pairOpts) (*side, *side) {
	t.Helper()
	ca, cb := tcpPair(t)
	a, b := newSide(t, o, ca), newSide(t, o, cb)
	return a, b
}

func (s *side) start(t testing.TB, o pairOpts) {
	t.Helper()
	if err := s.qp.Start(fpdu.NewConn(s.nc, fpdu.Options{CRC: o.crc}), s.params); err != nil {
		t.Fatal(err)
	}
}

func startPair(t testing.TB, o pairOpts, a, b *side) {
	a.start(t, o)
	b.start(t, o)
	t.Cleanup(func() {
		_ = a.qp.Close()
		_ = b.qp.Close()
	})
}

// register registers n bytes with canaries around them: the region is the
// middle of a larger buffer whose edges must stay untouched.
func (s *side) register(t testing.TB, n int, a mem.Access) (*mem.Region, []byte, []byte) {
	t.Helper()
	return s.registerFilled(t, n, a, -1)
}

// registerFilled is register with the buffer filled by pattern(seed) before
// it is registered (seed < 0: zeros). Memory a peer will RDMA Read must be
// written before registration (or before some other synchronisation the
// QP's goroutines take part in): the race detector does not see the
// ordering a TCP round trip creates (docs/semantics.md).
func (s *side) registerFilled(t testing.TB, n int, a mem.Access, seed int) (*mem.Region, []byte, []byte) {
	t.Helper()
	const canary = 64
	all := make([]byte, n+2*canary)
	for i := range all {
		all[i] = 0xCA
	}
	buf := all[canary : canary+n : canary+n]
	for i := range buf {
		buf[i] = 0
	}
	if seed >= 0 {
		pattern(buf, byte(seed))
	}
	if n == 0 {
		buf = all[canary : canary+1]
	}
	r, err := s.table.Register(s.pd, buf, a, 0x1000_0000)
	if err != nil {
		t.Fatal(err)
	}
	return r, buf, all
}

func checkCanaries(t testing.TB, all []byte, n int) {
	t.Helper()
	const canary = 64
	for i := 0; i < canary; i++ {
		if all[i] != 0xCA || all[len(all)-1-i] != 0xCA {
			t.Fatalf("canary overwritten around a %d-byte region", n)
		}
	}
}

// pattern fills b with bytes that encode their own offset (seeded).
func pattern(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i) ^ byte(i>>8) ^ byte(i>>16) ^ seed
	}
}

func waitCQE(t testing.TB, cq *CQ) CQE {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out [1]CQE
	for {
		if cq.Poll(out[:]) == 1 {
			return out[0]
		}
		if err := cq.Wait(ctx); err != nil {
			t.Fatalf("waiting for a completion: %v", err)
		}
	}
}
