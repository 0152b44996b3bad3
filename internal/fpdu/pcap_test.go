package fpdu

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// captureDir holds pcaps of real siw traffic (interop/captures).
const captureDir = "../../interop/captures/"

// tcpStreams reassembles the TCP payloads of a small Ethernet/IPv4 pcap
// (in-order captures, as these are) into one stream per direction of each
// connection, keyed "srcport>dstport". Retransmitted octets are dropped.
func tcpStreams(t testing.TB, file string) map[string][]byte {
	t.Helper()
	d, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) < 24 || binary.LittleEndian.Uint32(d) != 0xa1b2c3d4 || binary.LittleEndian.Uint32(d[20:]) != 1 {
		t.Fatalf("%s: not a little-endian Ethernet pcap", file)
	}
	streams := map[string][]byte{}
	next := map[string]uint32{}
	for off := 24; off+16 <= len(d); {
		incl := int(binary.LittleEndian.Uint32(d[off+8:]))
		pkt := d[off+16 : off+16+incl]
		off += 16 + incl
		if len(pkt) < 14+20 || binary.BigEndian.Uint16(pkt[12:]) != 0x0800 {
			continue
		}
		ip := pkt[14:]
		ihl := int(ip[0]&15) * 4
		if ip[9] != 6 || len(ip) < ihl+20 {
			continue
		}
		tcp := ip[ihl:int(binary.BigEndian.Uint16(ip[2:]))]
		key := fmt.Sprintf("%d>%d", binary.BigEndian.Uint16(tcp), binary.BigEndian.Uint16(tcp[2:]))
		seq := binary.BigEndian.Uint32(tcp[4:])
		payload := tcp[int(tcp[12]>>4)*4:]
		if tcp[13]&0x02 != 0 { // SYN
			next[key] = seq + 1
			continue
		}
		if len(payload) == 0 {
			continue
		}
		if skip := int(next[key] - seq); skip > 0 {
			if skip >= len(payload) {
				continue
			}
			payload = payload[skip:]
			seq += uint32(skip)
		}
		if seq != next[key] {
			t.Fatalf("%s %s: gap at seq %d", file, key, seq)
		}
		streams[key] = append(streams[key], payload...)
		next[key] = seq + uint32(len(payload))
	}
	return streams
}

// TestSiwCaptures reads the FPDUs of every MPA connection of the loopback
// siw captures, CRC on or off as negotiated, with the Reader over random
// read splits, and checks that the Writer frames the ULPDUs into the same
// octets (CRC32c little-endian, as siw sends it).
func TestSiwCaptures(t *testing.T) {
	files, _ := filepath.Glob(captureDir + "*_lo.pcap")
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	crcFPDUs := 0
	for _, file := range files {
		streams := tcpStreams(t, file)
		keys := make([]string, 0, len(streams))
		for k := range streams {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, key := range keys {
			s := streams[key]
			var sport, dport int
			fmt.Sscanf(key, "%d>%d", &sport, &dport)
			peer := streams[fmt.Sprintf("%d>%d", dport, sport)]
			if len(s) < 20 || len(peer) < 20 || string(s[:9]) != "MPA ID Re" || string(peer[:9]) != "MPA ID Re" {
				continue
			}
			crc := s[16]&0x40 != 0 || peer[16]&0x40 != 0
			stream := s[20+int(binary.BigEndian.Uint16(s[18:])):]
			opts := Options{CRC: crc}
			ulpdus := ulpdusOf(t, stream, opts)
			for seed := range uint64(3) {
				got, err := readFPDUs(NewConn(&memConn{in: stream, split: randomSplit(seed)}, opts).Reader(),
					func(m int) int { return m }, false)
				if err != io.EOF {
					t.Fatalf("%s %s: %v after %d FPDUs", file, key, err, len(got))
				}
				sameULPDUs(t, got, ulpdus)
			}
			if got := writeStream(t, opts, ulpdus, 3); string(got) != string(stream) {
				t.Fatalf("%s %s: Writer differs from siw", file, key)
			}
			if crc {
				crcFPDUs += len(ulpdus)
			}
			t.Logf("%s %s: %d FPDUs, CRC %v", filepath.Base(file), key, len(ulpdus), crc)
		}
	}
	if crcFPDUs == 0 {
		t.Error("no CRC-protected FPDU in the captures")
	}
}
