package rdmap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The test harness of the package's own tests: a Core is driven by feeding
// it the bytes a peer would send (framed with an Encoder, or written by
// hand) and by reading back what it sends (deframed with fpdu.DecodeFPDU),
// all on the test's goroutine.

// cfg are the knobs of a test core.
type cfg struct {
	framing        fpdu.Options
	ird, ord       int
	mulpdu         int
	rfc7306, v2    bool
	sq, rq, maxSGE int
	maxInline      int
	recv           RecvSource
	wake           func()
	rxOff, txOff   uint64
}

func defaults() cfg {
	return cfg{framing: fpdu.Options{CRC: true}, ird: 4, ord: 4, mulpdu: 1024, rfc7306: true, sq: 16, rq: 16, maxSGE: 4, maxInline: 64}
}

const testPD = 1

// newCore returns a core over table with the settings of o.
func newCore(t testing.TB, table *mem.Table, o cfg) *Core {
	t.Helper()
	c, err := New(Config{
		Table: table, PD: testPD, SQDepth: o.sq, RQDepth: o.rq, MaxSGE: o.maxSGE, MaxInline: o.maxInline,
		Recv: o.recv, Framing: o.framing, Wake: o.wake, RxOff: o.rxOff, TxOff: o.txOff,
		Params: Params{IRD: o.ird, ORD: o.ord, MULPDU: o.mulpdu, RFC7306: o.rfc7306, V2: o.v2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// region registers a fresh buffer of n bytes (filled with fill) in pd.
func region(t testing.TB, table *mem.Table, pd uint32, n int, fill byte, acc mem.Access) *mem.Region {
	t.Helper()
	buf := bytes.Repeat([]byte{fill}, n)
	r, err := table.Register(pd, buf, acc, 0x10000)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sge is the whole region as one SGE.
func sge(r *mem.Region) rdma.SGE { return rdma.SGE{STag: stagOf(r), Length: uint32(r.Len())} }

// sgeBytes returns the bytes s names in table (its region by the STag's
// index).
func sgeBytes(table *mem.Table, s rdma.SGE) []byte {
	return table.Lookup(mem.STag(s.STag)).Bytes()[s.Offset : s.Offset+uint64(s.Length)]
}

// txAll takes everything c has to send now, writing it all, and returns
// the octets.
func txAll(c *Core) []byte {
	var out []byte
	for {
		bufs := c.TxBufs(nil)
		if len(bufs) == 0 {
			return out
		}
		n := 0
		for _, b := range bufs {
			out = append(out, b...)
			n += len(b)
		}
		c.TxDone(n)
	}
}

// bufsLen is the number of octets of bufs.
func bufsLen(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}

// rxAll feeds stream to c, at most chunk octets per RxBuf, and returns how
// many octets it took (it stops when c wants no more input).
func rxAll(c *Core, stream []byte, chunk int) int {
	took := 0
	for took < len(stream) {
		b := c.RxBuf()
		if b == nil {
			return took
		}
		n := copy(b[:min(len(b), chunk)], stream[took:])
		c.RxDone(n)
		took += n
	}
	return took
}

// peer is the other end as a test sees it: it frames ULPDUs into the
// stream the core receives and deframes what the core sent.
type peer struct {
	t     testing.TB
	opts  fpdu.Options
	enc   *fpdu.Encoder
	in    []byte // octets from the core not yet deframed
	inOff uint64 // stream offset of in[0]
	rv    uint8
	msn   [4]uint32
}

func newPeer(t testing.TB, o cfg) *peer {
	rv := uint8(wire.RDMAPVersion1)
	if o.v2 {
		rv = wire.RDMAPVersion2
	}
	return &peer{t: t, opts: fpdu.Options{CRC: o.framing.CRC, SendMarkers: o.framing.RecvMarkers, RecvMarkers: o.framing.SendMarkers},
		enc: fpdu.NewEncoder(fpdu.Options{CRC: o.framing.CRC, SendMarkers: o.framing.RecvMarkers}, 0), rv: rv, msn: [4]uint32{1, 1, 1, 1}}
}

// frame returns the stream octets of the given ULPDUs.
func (p *peer) frame(ulpdus ...[]byte) []byte {
	p.t.Helper()
	for _, u := range ulpdus {
		if err := p.enc.AppendCopy(u); err != nil {
			p.t.Fatal(err)
		}
	}
	var out []byte
	for _, b := range p.enc.Bufs(nil) {
		out = append(out, b...)
	}
	p.enc.Done(len(out))
	return out
}

// recv deframes the octets the core sent and returns the whole ULPDUs.
func (p *peer) recv(stream []byte) [][]byte {
	p.t.Helper()
	p.in = append(p.in, stream...)
	var out [][]byte
	for len(p.in) > 0 {
		f, err := fpdu.DecodeFPDU(nil, p.in, p.inOff, p.opts)
		if errors.Is(err, fpdu.ErrTruncated) {
			break
		}
		if err != nil {
			p.t.Fatalf("the core sent a bad FPDU: %v", err)
		}
		out = append(out, append([]byte(nil), f.ULPDU...))
		p.in = p.in[f.Size:]
		p.inOff += uint64(f.Size)
	}
	return out
}

// Hand-assembled headers, independent of the wire package's encoders.
func tagged(op byte, last bool, stag uint32, to uint64) []byte {
	b := make([]byte, 14)
	b[0] = 0x81
	if last {
		b[0] |= 0x40
	}
	b[1] = 0x40 | op
	binary.BigEndian.PutUint32(b[2:], stag)
	binary.BigEndian.PutUint64(b[6:], to)
	return b
}

func untagged(op byte, last bool, inv, qn, msn, mo uint32) []byte {
	b := make([]byte, 18)
	b[0] = 0x01
	if last {
		b[0] |= 0x40
	}
	b[1] = 0x40 | op
	binary.BigEndian.PutUint32(b[2:], inv)
	binary.BigEndian.PutUint32(b[6:], qn)
	binary.BigEndian.PutUint32(b[10:], msn)
	binary.BigEndian.PutUint32(b[14:], mo)
	return b
}

// v2 turns a hand-assembled header into its RDMAP version 2 form with the
// 5-bit opcode op.
func v2(b []byte, op byte) []byte {
	b[1] = 0x80 | op
	return b
}

func readReqHdr(sinkSTag uint32, sinkTO uint64, size, srcSTag uint32, srcTO uint64) []byte {
	b := make([]byte, 28)
	binary.BigEndian.PutUint32(b[0:], sinkSTag)
	binary.BigEndian.PutUint64(b[4:], sinkTO)
	binary.BigEndian.PutUint32(b[12:], size)
	binary.BigEndian.PutUint32(b[16:], srcSTag)
	binary.BigEndian.PutUint64(b[20:], srcTO)
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// termULPDU is the Terminate ULPDU the spec prescribes: QN 2, MSN 1,
// MO 0, L=1, RV 1 opcode 7, then Layer|Type, Code, the M/D/R bits, and the
// offending segment's length and headers.
func termULPDU(code rdma.TermCode, offending []byte, ddpLen int, rdma bool) []byte {
	b := untagged(0x7, true, 0, 2, 1, 0)
	flags := uint16(0x8000 | 0x4000) // M and D
	if rdma {
		flags |= 0x2000
	}
	ctrl := []byte{byte(code.Layer())<<4 | byte(code.Type()), code.Code(), byte(flags >> 8), byte(flags)}
	b = append(b, ctrl...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(offending)))
	b = append(b, offending[:ddpLen]...)
	if rdma {
		b = append(b, offending[ddpLen:ddpLen+28]...)
	}
	return b
}

// poll returns every completion ready.
func poll(c *Core) []Completion { return c.Poll(nil) }

// wantComps checks the completions' queue, ID and status, in order.
func wantComps(t testing.TB, got []Completion, want ...Completion) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("completions %+v, want %d", got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Queue != w.Queue || g.ID != w.ID || g.Status != w.Status {
			t.Fatalf("completion %d: %+v, want queue %v id %d status %v", i, g, w.Queue, w.ID, w.Status)
		}
	}
}

// pump moves octets between two cores until neither has anything to
// send or nothing moves, chunk octets per read.
func pump(a, b *Core, chunk int) {
	for i := 0; i < 10000; i++ {
		ab, ba := txAll(a), txAll(b)
		if len(ab) == 0 && len(ba) == 0 {
			return
		}
		rxAll(b, ab, chunk)
		rxAll(a, ba, chunk)
	}
}

// single returns a core with the settings of o over a new table, and its
// peer.
func single(t testing.TB, o cfg) (*Core, *peer, *mem.Table) {
	t.Helper()
	table := mem.NewTable(mem.TableOptions{})
	return newCore(t, table, o), newPeer(t, o), table
}
