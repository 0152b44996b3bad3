package capture

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzReadCapture feeds arbitrary files to the readers and the assembler:
// nothing may panic, and every packet must respect MaxPacketLen. Seeds are
// files built from synthesized frames.
func FuzzReadCapture(f *testing.F) {
	le := binary.LittleEndian
	fr := ethTCP(cliV4, srvV4, 1, TCPAck, "seed")
	f.Add(pcapFile(le, false, LinkEthernet, fr, fr))
	f.Add(pcapFile(binary.BigEndian, true, LinkRaw, ipOf(fr)))
	f.Add(append(append(ngSHB(le), ngIDB(le, LinkEthernet, 9)...), ngEPB(le, 0, 5, fr)...))
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := NewReader(bytes.NewReader(file))
		if err != nil {
			return
		}
		a := NewAssembler(Limits{MaxPendingBytes: 1 << 12, MaxStreamBytes: 1 << 16})
		for range 1000 {
			p, err := r.Next()
			if err != nil {
				break
			}
			if len(p.Data) > MaxPacketLen {
				t.Fatalf("packet of %d bytes", len(p.Data))
			}
			a.AddPacket(p)
		}
		a.Flush()
		for _, c := range a.Conns() {
			for _, s := range c.Dir {
				_ = s.Runs()
			}
		}
	})
}

// FuzzPacketSegment feeds arbitrary packets to the link/IP/TCP parsers under
// every link type, and checks that a parsed segment re-encodes to a frame
// that parses back to the same fields.
func FuzzPacketSegment(f *testing.F) {
	fr := ethTCP(cliV4, srvV4, 1, TCPAck, "seed")
	f.Add(uint16(LinkEthernet), fr)
	f.Add(uint16(LinkRaw), ipOf(ethTCP(cliV6, srvV6, 9, TCPSyn, "")))
	f.Add(uint16(LinkSLL2), append(make([]byte, 20), ipOf(fr)...))
	f.Fuzz(func(t *testing.T, lt uint16, data []byte) {
		seg, err := PacketSegment(Packet{LinkType: LinkType(lt), Data: data})
		if err != nil {
			return
		}
		if seg.Src.Addr().Is4() != seg.Dst.Addr().Is4() {
			return
		}
		again := AppendTCPFrame(nil, &TCPFrame{Src: seg.Src, Dst: seg.Dst, Seq: seg.Seq, Ack: seg.Ack, Flags: seg.Flags, Payload: seg.Payload})
		back, err := PacketSegment(Packet{LinkType: LinkEthernet, Data: again})
		if err != nil {
			t.Fatalf("re-encoded frame: %v", err)
		}
		if back.Src != seg.Src || back.Dst != seg.Dst || back.Seq != seg.Seq || back.Ack != seg.Ack ||
			back.Flags != seg.Flags || !bytes.Equal(back.Payload, seg.Payload) {
			t.Fatalf("round trip: %+v != %+v", back, seg)
		}
	})
}
