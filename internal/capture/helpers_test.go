package capture

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

var (
	cliV4 = netip.MustParseAddrPort("192.0.2.1:40000")
	srvV4 = netip.MustParseAddrPort("192.0.2.2:7000")
	cliV6 = netip.MustParseAddrPort("[2001:db8::1]:40000")
	srvV6 = netip.MustParseAddrPort("[2001:db8::2]:7000")
	t0    = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
)

// ethTCP builds an Ethernet/IPv4/TCP frame.
func ethTCP(src, dst netip.AddrPort, seq uint32, flags uint8, payload string) []byte {
	return AppendTCPFrame(nil, &TCPFrame{Src: src, Dst: dst, Seq: seq, Flags: flags, Payload: []byte(payload)})
}

// ipOf returns the IP packet inside an Ethernet frame built by ethTCP.
func ipOf(frame []byte) []byte { return frame[14:] }

// pcapFile builds a classic pcap file in the given byte order and timestamp
// resolution.
func pcapFile(order byteOrder, nano bool, lt LinkType, pkts ...[]byte) []byte {
	var b []byte
	magic := uint32(pcapMagicMicro)
	if nano {
		magic = pcapMagicNano
	}
	b = order.AppendUint32(b, magic)
	b = order.AppendUint16(b, 2)
	b = order.AppendUint16(b, 4)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 65535)
	b = order.AppendUint32(b, uint32(lt))
	for i, p := range pkts {
		b = order.AppendUint32(b, uint32(t0.Unix())+uint32(i))
		if nano {
			b = order.AppendUint32(b, 123456789)
		} else {
			b = order.AppendUint32(b, 123456)
		}
		b = order.AppendUint32(b, uint32(len(p)))
		b = order.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// ngBlock builds one pcapng block.
func ngBlock(order byteOrder, typ uint32, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	total := uint32(12 + len(body))
	var b []byte
	b = order.AppendUint32(b, typ)
	b = order.AppendUint32(b, total)
	b = append(b, body...)
	return order.AppendUint32(b, total)
}

func ngSHB(order byteOrder) []byte {
	var body []byte
	body = order.AppendUint32(body, byteOrderMagic)
	body = order.AppendUint16(body, 1)
	body = order.AppendUint16(body, 0)
	body = order.AppendUint64(body, ^uint64(0))
	return ngBlock(order, blockSHB, body)
}

func ngIDB(order byteOrder, lt LinkType, tsresol int) []byte {
	var body []byte
	body = order.AppendUint16(body, uint16(lt))
	body = order.AppendUint16(body, 0)
	body = order.AppendUint32(body, 0)
	if tsresol >= 0 {
		body = order.AppendUint16(body, optIfTsresol)
		body = order.AppendUint16(body, 1)
		body = append(body, byte(tsresol), 0, 0, 0)
		body = order.AppendUint32(body, 0) // opt_endofopt
	}
	return ngBlock(order, blockIDB, body)
}

func ngEPB(order byteOrder, iface uint32, ticks uint64, data []byte) []byte {
	var body []byte
	body = order.AppendUint32(body, iface)
	body = order.AppendUint32(body, uint32(ticks>>32))
	body = order.AppendUint32(body, uint32(ticks))
	body = order.AppendUint32(body, uint32(len(data)))
	body = order.AppendUint32(body, uint32(len(data)))
	body = append(body, data...)
	return ngBlock(order, blockEPB, body)
}

func ngSPB(order byteOrder, data []byte) []byte {
	var body []byte
	body = order.AppendUint32(body, uint32(len(data)))
	body = append(body, data...)
	return ngBlock(order, blockSPB, body)
}

// readPackets reads every packet of a file, copying the data.
func readPackets(t *testing.T, file []byte) []Packet {
	t.Helper()
	r, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	var out []Packet
	for {
		p, err := r.Next()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("Next: %v", err)
			}
			return out
		}
		p.Data = append([]byte(nil), p.Data...)
		out = append(out, p)
	}
}

type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}
