package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
)

func TestPcapByteOrdersAndResolutions(t *testing.T) {
	frame := ethTCP(cliV4, srvV4, 1, TCPSyn, "")
	for _, order := range []byteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, nano := range []bool{false, true} {
			pkts := readPackets(t, pcapFile(order, nano, LinkEthernet, frame, frame))
			if len(pkts) != 2 {
				t.Fatalf("%v nano=%v: %d packets", order, nano, len(pkts))
			}
			want := time.Unix(t0.Unix()+1, 123456000).UTC()
			if nano {
				want = time.Unix(t0.Unix()+1, 123456789).UTC()
			}
			p := pkts[1]
			if !p.Time.Equal(want) || p.Frame != 2 || p.LinkType != LinkEthernet || !bytes.Equal(p.Data, frame) || p.OrigLen != len(frame) {
				t.Errorf("%v nano=%v: got %+v", order, nano, p)
			}
		}
	}
}

func TestPcapngSectionsInterfacesAndBlocks(t *testing.T) {
	f1 := ethTCP(cliV4, srvV4, 1, TCPSyn, "")
	ip := ipOf(ethTCP(srvV4, cliV4, 9, TCPSyn|TCPAck, ""))
	for _, order := range []byteOrder{binary.LittleEndian, binary.BigEndian} {
		other := byteOrder(binary.BigEndian)
		if order == binary.BigEndian {
			other = binary.LittleEndian
		}
		var file []byte
		file = append(file, ngSHB(order)...)
		file = append(file, ngIDB(order, LinkEthernet, -1)...)        // default microseconds
		file = append(file, ngIDB(order, LinkRaw, 9)...)              // nanoseconds
		file = append(file, ngBlock(order, 5, []byte{1, 2, 3, 4})...) // Interface Statistics: skipped
		file = append(file, ngEPB(order, 0, 1_500_000, f1)...)
		file = append(file, ngEPB(order, 1, 2_000_000_007, ip)...)
		// A second section in the other byte order resets the interfaces.
		file = append(file, ngSHB(other)...)
		file = append(file, ngIDB(other, LinkEthernet, 0x80|10)...) // 2^-10 s
		file = append(file, ngSPB(other, f1)...)
		file = append(file, ngEPB(other, 0, 3<<10|512, f1)...)
		pkts := readPackets(t, file)
		if len(pkts) != 4 {
			t.Fatalf("%v: %d packets", order, len(pkts))
		}
		checks := []struct {
			lt    LinkType
			iface int
			when  time.Time
			data  []byte
		}{
			{LinkEthernet, 0, time.Unix(1, 500_000_000), f1},
			{LinkRaw, 1, time.Unix(2, 7), ip},
			{LinkEthernet, 0, time.Unix(0, 0), f1},
			{LinkEthernet, 0, time.Unix(3, 500_000_000), f1},
		}
		for i, c := range checks {
			p := pkts[i]
			if p.Frame != i+1 || p.LinkType != c.lt || p.Interface != c.iface || !p.Time.Equal(c.when) || !bytes.Equal(p.Data, c.data) {
				t.Errorf("%v packet %d: got frame %d lt %d iface %d time %v len %d", order, i, p.Frame, p.LinkType, p.Interface, p.Time, len(p.Data))
			}
		}
	}
}

func TestPcapngErrors(t *testing.T) {
	le := binary.LittleEndian
	good := append(ngSHB(le), ngIDB(le, LinkEthernet, -1)...)
	cases := map[string][]byte{
		"undeclared interface": append(append([]byte(nil), good...), ngEPB(le, 3, 0, []byte{1})...),
		"caplen over block":    append(append([]byte(nil), good...), badEPB(le)...),
		"trailer mismatch":     append(append([]byte(nil), good...), 6, 0, 0, 0, 12, 0, 0, 0, 16, 0, 0, 0),
		"huge block":           append(append([]byte(nil), good...), 6, 0, 0, 0, 0, 0, 0, 0x40),
	}
	for name, file := range cases {
		r, err := NewReader(bytes.NewReader(file))
		if err != nil {
			t.Fatalf("%s: NewReader: %v", name, err)
		}
		if _, err := r.Next(); err == nil || errors.Is(err, io.EOF) {
			t.Errorf("%s: Next gave %v, want an error", name, err)
		}
	}
	if _, err := NewReader(bytes.NewReader([]byte("hello, world"))); !errors.Is(err, ErrNotCapture) {
		t.Errorf("text file: %v, want ErrNotCapture", err)
	}
}

func badEPB(order byteOrder) []byte {
	var body []byte
	body = order.AppendUint32(body, 0)
	body = order.AppendUint64(body, 0)
	body = order.AppendUint32(body, 100) // caplen 100, but 4 bytes follow
	body = order.AppendUint32(body, 100)
	body = append(body, 1, 2, 3, 4)
	return ngBlock(order, blockEPB, body)
}

// TestTruncatedFiles checks that every prefix of valid files reads cleanly:
// some packets, then io.EOF exactly at record boundaries, else an error.
func TestTruncatedFiles(t *testing.T) {
	le := binary.LittleEndian
	frame := ethTCP(cliV4, srvV4, 1, TCPSyn, "x")
	files := map[string][]byte{
		"pcap":   pcapFile(le, false, LinkEthernet, frame, frame),
		"pcapng": append(append(ngSHB(le), ngIDB(le, LinkEthernet, 9)...), ngEPB(le, 0, 5, frame)...),
	}
	for name, file := range files {
		for n := range len(file) {
			r, err := NewReader(bytes.NewReader(file[:n]))
			if err != nil {
				continue
			}
			for range 10 {
				if _, err = r.Next(); err != nil {
					break
				}
			}
			if err == nil {
				t.Fatalf("%s prefix %d: reader never stopped", name, n)
			}
		}
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewPcapWriter(&buf, LinkEthernet)
	if err != nil {
		t.Fatal(err)
	}
	frame := ethTCP(cliV6, srvV6, 7, TCPAck, "data")
	if err := w.WritePacket(t0, frame); err != nil {
		t.Fatal(err)
	}
	pkts := readPackets(t, buf.Bytes())
	if len(pkts) != 1 || !bytes.Equal(pkts[0].Data, frame) || !pkts[0].Time.Equal(t0.Truncate(time.Microsecond)) {
		t.Fatalf("round trip: %+v", pkts)
	}
	if err := w.WritePacket(t0, make([]byte, MaxPacketLen+1)); !errors.Is(err, ErrWritePacketTooBig) {
		t.Errorf("oversized packet: %v", err)
	}
}
