package fpdu

import (
	"bufio"
	"encoding/hex"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

// transcriptDir holds byte-exact logs of whole siw<->siw sessions
// (interop/captures/transcripts): per record "TIME DIR off=N
// len=M" and a hexdump, then "DIR EOF total=N".
const transcriptDir = "../../interop/captures/transcripts/"

// loadTranscript returns the two directions' byte streams of a session.
func loadTranscript(t *testing.T, file string) map[string][]byte {
	t.Helper()
	f, err := os.Open(transcriptDir + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	streams := map[string][]byte{}
	totals := map[string]int{}
	dir := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 3 && strings.HasPrefix(fields[2], "off="):
			dir = fields[1]
			off, _ := strconv.Atoi(strings.TrimPrefix(fields[2], "off="))
			if off != len(streams[dir]) {
				t.Fatalf("%s: %s record at %d, have %d octets", file, dir, off, len(streams[dir]))
			}
		case len(fields) >= 4 && fields[2] == "EOF":
			totals[fields[1]], _ = strconv.Atoi(strings.TrimPrefix(fields[3], "total="))
		case len(fields) >= 2 && len(fields[0]) == 8:
			for _, h := range fields[1:] {
				if len(h) != 2 || strings.HasPrefix(h, "|") {
					break
				}
				b, err := hex.DecodeString(h)
				if err != nil {
					t.Fatalf("%s: %q: %v", file, sc.Text(), err)
				}
				streams[dir] = append(streams[dir], b...)
			}
		}
	}
	for d, n := range totals {
		if len(streams[d]) != n {
			t.Fatalf("%s: %s has %d octets, EOF says %d", file, d, len(streams[d]), n)
		}
	}
	return streams
}

// TestSiwTranscripts reads real siw FPDU streams (MPA Rev 2, no CRC, no
// markers) after their 24-octet MPA Request or Reply, with the Reader over
// random read splits and with DecodeFPDU: every FPDU is read to a clean
// end of stream, the siw trailers (zero, CRC off) are accepted, and the
// Writer reproduces siw's octets.
func TestSiwTranscripts(t *testing.T) {
	for _, file := range []string{"siw-rping-session.log", "siw-rdma_client-session.log"} {
		for dir, s := range loadTranscript(t, file) {
			if len(s) < 24 {
				t.Fatalf("%s %s: %d octets", file, dir, len(s))
			}
			stream := s[24:]
			var n int
			for off := 0; off < len(stream); n++ {
				f, err := DecodeFPDU(nil, stream[off:], uint64(off), Options{})
				if err != nil {
					t.Fatalf("%s %s FPDU at %d: %v", file, dir, off, err)
				}
				if f.CRC != 0 {
					t.Errorf("%s %s FPDU at %d: CRC field %08x with CRC off", file, dir, off, f.CRC)
				}
				off += f.Size
			}
			for seed := range uint64(4) {
				got, err := readFPDUs(NewConn(&memConn{in: stream, split: randomSplit(seed)}, Options{}).Reader(),
					func(m int) int { return m }, false)
				if err != io.EOF || len(got) != n {
					t.Fatalf("%s %s: Reader read %d of %d FPDUs: %v", file, dir, len(got), n, err)
				}
			}
			// The Writer frames the same ULPDUs into the same octets.
			if got := writeStream(t, Options{}, ulpdusOf(t, stream, Options{}), 4); string(got) != string(stream) {
				t.Fatalf("%s %s: Writer differs from siw:\n got %x\nwant %x", file, dir, got, stream)
			}
		}
	}
}
