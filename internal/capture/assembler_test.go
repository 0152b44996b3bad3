package capture

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
)

// feed builds segments from (seq, flags, payload) and returns the assembler.
type seg struct {
	fromClient bool
	seq        uint32
	flags      uint8
	data       string
}

func assemble(lim Limits, segs ...seg) *Assembler {
	a := NewAssembler(lim)
	for i, s := range segs {
		src, dst := cliV4, srvV4
		if !s.fromClient {
			src, dst = dst, src
		}
		a.AddSegment(&Segment{Frame: i + 1, Src: src, Dst: dst, Seq: s.seq, Flags: s.flags, Payload: []byte(s.data)})
	}
	a.Flush()
	return a
}

func runsString(s *Stream) string {
	var b bytes.Buffer
	for _, r := range s.Runs() {
		fmt.Fprintf(&b, "[%d:%s]", r.Off, r.Data)
	}
	return b.String()
}

func TestReassemblyInOrderWithWrap(t *testing.T) {
	isn := uint32(0xFFFFFFF0)
	a := assemble(Limits{},
		seg{true, isn, TCPSyn, ""},
		seg{false, 77, TCPSyn | TCPAck, ""},
		seg{true, isn + 1, TCPAck, "0123456789"},
		seg{true, isn + 11, TCPAck, "abcdefghij"}, // crosses 2^32
		seg{false, 78, TCPAck, "reply"},
		seg{true, isn + 21, TCPFin, ""},
	)
	if len(a.Conns()) != 1 {
		t.Fatalf("%d connections", len(a.Conns()))
	}
	c := a.Conns()[0]
	if !c.SawSYN || c.A != cliV4 || !c.Dir[0].SawSYN || !c.Dir[0].SawFIN {
		t.Errorf("flags: %+v %+v", c, c.Dir[0])
	}
	if got := runsString(c.Dir[0]); got != "[0:0123456789abcdefghij]" {
		t.Errorf("client stream %s", got)
	}
	if got := runsString(c.Dir[1]); got != "[0:reply]" {
		t.Errorf("server stream %s", got)
	}
	if ch, ok := c.Dir[0].ChunkAt(15); !ok || ch.Frame != 4 || ch.Off != 10 {
		t.Errorf("ChunkAt(15) = %+v %v", ch, ok)
	}
	if _, ok := c.Dir[0].ChunkAt(20); ok {
		t.Error("ChunkAt past the end found a chunk")
	}
}

func TestReassemblyRetransmitOverlapOutOfOrder(t *testing.T) {
	a := assemble(Limits{},
		seg{true, 100, TCPSyn, ""},
		seg{true, 101, TCPAck, "AAAA"},
		seg{true, 109, TCPAck, "CCCC"},   // ahead of a hole
		seg{true, 101, TCPAck, "AAAA"},   // retransmission
		seg{true, 103, TCPAck, "AABBBB"}, // overlaps 2 delivered bytes, fills the hole
		seg{true, 107, TCPAck, "BBCC"},   // wholly old now
		seg{true, 113, TCPAck, "DD"},
	)
	s := a.Conns()[0].Dir[0]
	if got := runsString(s); got != "[0:AAAABBBBCCCCDD]" {
		t.Errorf("stream %s", got)
	}
	if s.Retransmitted != 2 || s.Overlapping != 1 || s.OutOfOrder != 1 || len(s.Gaps) != 0 {
		t.Errorf("counters: retrans %d overlap %d ooo %d gaps %v", s.Retransmitted, s.Overlapping, s.OutOfOrder, s.Gaps)
	}
}

func TestReassemblyMidConnectionAndGap(t *testing.T) {
	a := assemble(Limits{},
		seg{false, 5000, TCPAck, "first"},
		seg{false, 5010, TCPAck, "later"}, // 5005..5009 never captured
		seg{true, 900, TCPAck, ""},        // bare ACK: the client stream has not started
	)
	c := a.Conns()[0]
	if c.SawSYN || c.A != srvV4 {
		t.Errorf("connection: %+v", c)
	}
	s := c.Dir[0]
	if s.SawSYN || s.ISN != 4999 {
		t.Errorf("stream start: %+v", s)
	}
	if got := runsString(s); got != "[0:first][10:later]" {
		t.Errorf("stream %s", got)
	}
	if len(s.Gaps) != 1 || s.Gaps[0] != (Gap{Off: 5, Len: 5}) {
		t.Errorf("gaps %v", s.Gaps)
	}
	if c.Dir[1].Len() != 0 {
		t.Errorf("client stream has %d bytes", c.Dir[1].Len())
	}
}

func TestReassemblyLimits(t *testing.T) {
	// Out-of-order data over MaxPendingBytes forces a gap.
	a := assemble(Limits{MaxPendingBytes: 8},
		seg{true, 1, TCPSyn, ""},
		seg{true, 10, TCPAck, "xxxxxx"},
		seg{true, 20, TCPAck, "yyyyyy"},
	)
	s := a.Conns()[0].Dir[0]
	if got := runsString(s); got != "[8:xxxxxx][18:yyyyyy]" {
		t.Errorf("pending limit: %s (gaps %v)", got, s.Gaps)
	}
	// MaxStreamBytes keeps a prefix.
	a = assemble(Limits{MaxStreamBytes: 5}, seg{true, 1, TCPSyn, ""}, seg{true, 2, TCPAck, "0123456789"})
	s = a.Conns()[0].Dir[0]
	if got := runsString(s); got != "[0:01234]" || !s.Truncated || s.Len() != 10 {
		t.Errorf("stream limit: %s truncated=%v len=%d", got, s.Truncated, s.Len())
	}
	// MaxConns ignores later connections.
	a = NewAssembler(Limits{MaxConns: 1})
	for port := range uint16(3) {
		src := netip.AddrPortFrom(cliV4.Addr(), 40000+port)
		a.AddSegment(&Segment{Src: src, Dst: srvV4, Seq: 1, Flags: TCPAck, Payload: []byte("x")})
	}
	if len(a.Conns()) != 1 || a.DroppedConns != 2 {
		t.Errorf("conn limit: %d conns, %d dropped", len(a.Conns()), a.DroppedConns)
	}
}

func TestReassemblyConnectionReuse(t *testing.T) {
	a := assemble(Limits{},
		seg{true, 100, TCPSyn, ""},
		seg{true, 101, TCPAck, "one"},
		seg{true, 104, TCPFin | TCPAck, ""},
		seg{true, 5000, TCPSyn, ""},
		seg{true, 5001, TCPAck, "two"},
	)
	if n := len(a.Conns()); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	if runsString(a.Conns()[0].Dir[0]) != "[0:one]" || runsString(a.Conns()[1].Dir[0]) != "[0:two]" {
		t.Errorf("streams %s %s", runsString(a.Conns()[0].Dir[0]), runsString(a.Conns()[1].Dir[0]))
	}
}

func TestAssemblerNotesFragments(t *testing.T) {
	ip := append([]byte(nil), ipOf(ethTCP(cliV4, srvV4, 1, TCPAck, "abc"))...)
	ip[6] = 0x20
	a := NewAssembler(Limits{})
	a.AddPacket(Packet{Frame: 4, LinkType: LinkRaw, Data: ip})
	if len(a.Notes) != 1 || a.Notes[0].Frame != 4 {
		t.Fatalf("notes %v", a.Notes)
	}
}

func TestReassemblyTotalLimits(t *testing.T) {
	a := NewAssembler(Limits{MaxTotalBytes: 6, MaxTotalPending: 4})
	for port := range uint16(2) {
		src := netip.AddrPortFrom(cliV4.Addr(), 40000+port)
		a.AddSegment(&Segment{Src: src, Dst: srvV4, Seq: 1, Flags: TCPSyn})
		a.AddSegment(&Segment{Src: src, Dst: srvV4, Seq: 2, Flags: TCPAck, Payload: []byte("abcd")})
		a.AddSegment(&Segment{Src: src, Dst: srvV4, Seq: 10, Flags: TCPAck, Payload: []byte("xyz")})
	}
	a.Flush()
	c1, c2 := a.Conns()[0].Dir[0], a.Conns()[1].Dir[0]
	if runsString(c1) != "[0:abcd]" || runsString(c2) != "[0:ab]" || !c1.Truncated || !c2.Truncated {
		t.Errorf("total bytes limit: %s %v / %s %v", runsString(c1), c1.Truncated, runsString(c2), c2.Truncated)
	}
	if a.tot.pending != 0 || a.tot.kept != 6 {
		t.Errorf("totals after flush: %+v", a.tot)
	}
}

// TestReassemblyForcedGapOvertakes: forcing a gap can deliver held bytes
// past a segment that was itself ahead of the hole when it arrived.
func TestReassemblyForcedGapOvertakes(t *testing.T) {
	a := assemble(Limits{MaxPendingSegments: 1},
		seg{true, 1, TCPSyn, ""},
		seg{true, 10, TCPAck, "0123456789"}, // held: bytes 2..9 missing
		seg{true, 15, TCPAck, "56789abc"},   // forces the gap; then overlaps
	)
	s := a.Conns()[0].Dir[0]
	if got := runsString(s); got != "[8:0123456789abc]" || len(s.Gaps) != 1 || s.Gaps[0] != (Gap{Off: 0, Len: 8}) {
		t.Errorf("stream %s gaps %v", got, s.Gaps)
	}
}

func TestAssemblerNotesUnknownLinkOnce(t *testing.T) {
	a := NewAssembler(Limits{})
	for i := range 5 {
		a.AddPacket(Packet{Frame: i + 1, LinkType: 105, Data: []byte{1, 2, 3}})
	}
	if len(a.Notes) != 1 || a.Notes[0].Frame != 1 {
		t.Errorf("notes %v", a.Notes)
	}
}
