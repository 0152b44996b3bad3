package capture

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestParsersDoNotAllocate: the per-packet parsers and the readers' Next
// (once their buffer has grown) allocate nothing.
func TestParsersDoNotAllocate(t *testing.T) {
	frame := ethTCP(cliV6, srvV6, 1, TCPAck, "payload")
	if n := testing.AllocsPerRun(100, func() {
		if _, err := PacketSegment(Packet{LinkType: LinkEthernet, Data: frame}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("PacketSegment: %v allocations", n)
	}
	le := binary.LittleEndian
	files := map[string][]byte{
		"pcap":   pcapFile(le, false, LinkEthernet, frame, frame, frame),
		"pcapng": append(append(ngSHB(le), ngIDB(le, LinkEthernet, 9)...), append(append(ngEPB(le, 0, 5, frame), ngEPB(le, 0, 6, frame)...), ngEPB(le, 0, 7, frame)...)...),
	}
	for name, file := range files {
		r, err := NewReader(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != nil { // grows the buffer; AllocsPerRun then reads two more
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(1, func() {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s Next: %v allocations", name, n)
		}
	}
}
