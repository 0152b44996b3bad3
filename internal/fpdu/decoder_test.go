package fpdu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// goldenStreams returns the project's FPDU vector streams and the siw
// captures with CRC (after their MPA Request/Reply), with their options.
func goldenStreams(t testing.TB) map[string]struct {
	b    []byte
	opts Options
} {
	out := map[string]struct {
		b    []byte
		opts Options
	}{}
	for _, file := range []string{"fpdus.tsv", "v2.tsv"} {
		out[file] = struct {
			b    []byte
			opts Options
		}{streamOf(t, file), Options{CRC: true}}
	}
	out["markers.tsv"] = struct {
		b    []byte
		opts Options
	}{streamOf(t, "markers.tsv"), Options{CRC: true, RecvMarkers: true}}
	files, _ := filepath.Glob(captureDir + "*_lo.pcap")
	for _, file := range files {
		streams := tcpStreams(t, file)
		for key, s := range streams {
			var sport, dport int
			fmt.Sscanf(key, "%d>%d", &sport, &dport)
			peer := streams[fmt.Sprintf("%d>%d", dport, sport)]
			if len(s) >= 20 && len(peer) >= 20 && string(s[:9]) == "MPA ID Re" && string(peer[:9]) == "MPA ID Re" {
				out[filepath.Base(file)+" "+key] = struct {
					b    []byte
					opts Options
				}{s[20+int(binary.BigEndian.Uint16(s[18:])):], Options{CRC: s[16]&0x40 != 0 || peer[16]&0x40 != 0}}
			}
		}
	}
	return out
}

// TestDecoderGolden: the vector streams and real siw traffic give the
// Decoder the ULPDUs the Reader reads, in one read and one octet at a
// time.
func TestDecoderGolden(t *testing.T) {
	total := 0
	for name, g := range goldenStreams(t) {
		want, werr := readFPDUs(NewConn(&memConn{in: g.b}, g.opts).Reader(), func(m int) int { return m }, false)
		if werr != io.EOF {
			t.Fatalf("%s: the Reader read %d FPDUs then %v", name, len(want), werr)
		}
		total += len(want)
		for _, split := range []func(int) int{func(m int) int { return m }, func(int) int { return 1 }} {
			got, err := decodeAll(t, NewDecoder(g.opts, 0), g.b, &decDrive{split: split})
			if err != io.EOF {
				t.Fatalf("%s: the Decoder stopped with %v", name, err)
			}
			sameULPDUs(t, got, want)
		}
	}
	if total < 50 {
		t.Fatalf("only %d golden FPDUs", total)
	}
}

// smallFPDUs returns the stream of n FPDUs of 32-octet ULPDUs, and the
// ULPDUs.
func smallFPDUs(t testing.TB, opts Options, n int) ([]byte, [][]byte) {
	e := NewEncoder(Options{CRC: opts.CRC, SendMarkers: opts.RecvMarkers}, 0)
	var us [][]byte
	for i := range n {
		u := bytes.Repeat([]byte{byte(i)}, 32)
		us = append(us, u)
		if err := e.Append(u[:14], u[14:]); err != nil {
			t.Fatal(err)
		}
	}
	s := bytes.Join(e.Bufs(nil), nil)
	e.Done(len(s))
	return s, us
}

// TestDecoderBatch: one read into Buf brings many small FPDUs, and the
// Decoder then walks them all (NeedPlace, FPDUDone) without asking for
// more octets; at the end nothing is staged and the stream is between
// FPDUs.
func TestDecoderBatch(t *testing.T) {
	for _, opts := range []Options{{CRC: true}, {CRC: true, RecvMarkers: true}, {}} {
		s, us := smallFPDUs(t, opts, 200)
		d := NewDecoder(opts, 0)
		b := d.Buf()
		if len(b) < len(s) {
			t.Fatalf("Buf of %d octets for a %d-octet batch", len(b), len(s))
		}
		d.Advance(copy(b, s))
		for i, u := range us {
			if d.Step() != NeedPlace || !bytes.Equal(d.Header(), u[:14]) || d.ULPDULen() != len(u) {
				t.Fatalf("%+v: FPDU %d: %v, header % x", opts, i, d.Step(), d.Header())
			}
			if !d.Mid() {
				t.Fatalf("%+v: FPDU %d: not Mid at NeedPlace", opts, i)
			}
			dst := make([]byte, len(u)-14)
			d.Place(dst)
			if d.Step() != FPDUDone || d.Err() != nil || !bytes.Equal(dst, u[14:]) {
				t.Fatalf("%+v: FPDU %d: %v %v", opts, i, d.Step(), d.Err())
			}
			d.Next()
		}
		if d.Step() != NeedBytes || d.Mid() || d.st.p != nil {
			t.Fatalf("%+v: after the batch: %v, Mid %v, staging held %v", opts, d.Step(), d.Mid(), d.st.p != nil)
		}
	}
}

// TestDecoderPlace: a large FPDU whose first octets arrive with its
// header: Place copies the staged payload octets, then Buf is the rest of
// the destination (up to the next marker: the marker itself goes to the
// staging buffer); after a large FPDU the staging buffer asks for little,
// so that the next large payload is read into its destination.
func TestDecoderPlace(t *testing.T) {
	for _, markers := range []bool{false, true} {
		opts := Options{CRC: true, RecvMarkers: markers}
		u := make([]byte, 20000)
		for i := range u {
			u[i] = byte(i * 13)
		}
		s := refFrame(nil, u, markers, true)
		s = refFrame(s, u, markers, true)
		d := NewDecoder(opts, 0)
		first := 300
		d.Advance(copy(d.Buf(), s[:first]))
		s = s[first:]
		dst := make([]byte, len(u)-14)
		d.Place(dst)
		staged := first - HeaderLen - 14 - MarkerLen*b2i(markers)
		if !bytes.Equal(dst[:staged], u[14:14+staged]) {
			t.Fatal("Place did not copy the staged payload octets")
		}
		trailer := false
		for round := 0; d.Step() == NeedBytes; round++ {
			b := d.Buf()
			inDst := d.placed < len(dst) && &b[0] == &dst[d.placed]
			if d.ph > dBody {
				trailer = true
				if len(b) > 2*lookahead {
					t.Fatalf("markers %v: after a large payload Buf offers %d staging octets", markers, len(b))
				}
			}
			if inDst && markers && len(b) > MarkerInterval-MarkerLen {
				t.Fatalf("Buf of %d octets runs past a marker", len(b))
			}
			if !inDst && !d.m.due() && d.ph == dBody {
				t.Fatal("Buf is the staging buffer in the middle of the payload")
			}
			if round == 0 && !inDst {
				t.Fatalf("markers %v: after Place, Buf is not the destination", markers)
			}
			n := copy(b, s)
			s = s[n:]
			d.Advance(n)
		}
		if d.Err() != nil || !bytes.Equal(dst, u[14:]) || !trailer {
			t.Fatalf("markers %v: %v %v, trailer read apart %v", markers, d.Step(), d.Err(), trailer)
		}
		d.Next()
		if d.Step() != NeedPlace || d.ULPDULen() != len(u) || len(d.Header()) != 14 {
			t.Fatalf("markers %v: the second FPDU: %v", markers, d.Step())
		}
	}
}

// TestDecoderCRCAtAdvance: octets placed into a destination are covered
// by the CRC as Advance reports them: changing them afterwards does not
// change the verdict, and a corrupted payload octet is ErrCRC.
func TestDecoderCRCAtAdvance(t *testing.T) {
	u := bytes.Repeat([]byte{7}, 3000)
	s := refFrame(nil, u, false, true)
	for _, corrupt := range []bool{false, true} {
		in := bytes.Clone(s)
		if corrupt {
			in[1000] ^= 1
		}
		d := NewDecoder(Options{CRC: true}, 0)
		d.Advance(copy(d.Buf(), in[:HeaderLen+14]))
		in = in[HeaderLen+14:]
		dst := make([]byte, len(u)-14)
		d.Place(dst)
		n := copy(d.Buf(), in[:len(dst)])
		d.Advance(n)
		in = in[n:]
		clear(dst) // the caller's memory changes before the trailer arrives
		d.Advance(copy(d.Buf(), in))
		if d.Step() != FPDUDone || (d.Err() != nil) != corrupt {
			t.Fatalf("corrupt %v: %v %v", corrupt, d.Step(), d.Err())
		}
	}
}

// TestDecoderErrors: each protocol error ends the stream for good with
// the Reader's error value and Terminate code; Buf is nil and Next does
// nothing after it.
func TestDecoderErrors(t *testing.T) {
	u := bytes.Repeat([]byte{3}, 600)
	good := refFrame(nil, u, true, true)
	short := []byte{0, 13, 0, 0}
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	badMarker := bytes.Clone(good)
	badMarker[MarkerInterval+3] ^= 4
	for _, c := range []struct {
		name   string
		stream []byte
		opts   Options
		err    error
		code   rdma.TermCode
	}{
		{"ULPDU_Length 13", short, Options{}, ErrULPDUTooShort, rdma.TermLLPMarker},
		{"ULPDU_Length above the bound", good, Options{RecvMarkers: true, MaxULPDU: 599}, ErrULPDUTooLong, rdma.TermLLPMarker},
		{"CRC", badCRC, Options{CRC: true, RecvMarkers: true}, ErrCRC, rdma.TermLLPCRC},
		{"marker", badMarker, Options{RecvMarkers: true}, ErrMarker, rdma.TermLLPMarker},
		{"leading marker", good, Options{RecvMarkers: true}, ErrMarker, rdma.TermLLPMarker},
	} {
		off := uint64(0)
		if c.name == "leading marker" {
			off = MarkerInterval // the marker at 0 is read as if at 512: FPDUPTR 0 is right, so shift the stream
			c.stream = append([]byte{0, 0, 0, 4}, good[MarkerLen:]...)
		}
		_, rerr := readFPDUs(NewConn(&memConn{in: c.stream}, c.opts).Reader(), func(m int) int { return m }, false)
		d := NewDecoder(c.opts, off)
		_, err := decodeAll(t, d, c.stream, &decDrive{split: func(int) int { return 1 }})
		var pe *wire.ProtocolError
		if err != c.err || !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
		if off == 0 && rerr != err {
			t.Errorf("%s: the Reader reports %v, the Decoder %v", c.name, rerr, err)
		}
		d.Next()
		if d.Step() != FPDUDone || d.Err() != c.err || d.Buf() != nil || len(d.Bufs(nil)) != 0 || d.st.p != nil {
			t.Errorf("%s: after Next: %v %v", c.name, d.Step(), d.Err())
		}
		d.Advance(0)
	}
}

// TestDecoderMid: an end of the stream is clean exactly at FPDU
// boundaries, including before a leading marker due there, and a
// truncation at every other octet.
func TestDecoderMid(t *testing.T) {
	var s []byte
	var ends []int
	// The first FPDU has a marker before its CRC field and ends at 520;
	// the second ends at 1024, so the third starts with a leading marker.
	for _, n := range []int{506, 498, 510, 1000} {
		s = refFrame(s, make([]byte, n), true, true)
		ends = append(ends, len(s))
	}
	if ends[1] != 2*MarkerInterval {
		t.Fatalf("the second FPDU ends at %d", ends[1])
	}
	isEnd := map[int]bool{0: true}
	for _, e := range ends {
		isEnd[e] = true
	}
	for cut := 0; cut <= len(s); cut++ {
		_, err := decodeAll(t, NewDecoder(Options{CRC: true, RecvMarkers: true}, 0), s[:cut], &decDrive{split: func(m int) int { return m }})
		if want := map[bool]error{true: io.EOF, false: ErrTruncated}[isEnd[cut]]; err != want {
			t.Fatalf("cut at %d: %v, want %v", cut, err, want)
		}
	}
}

// TestDecoderStage: Stage adds octets to Header, clamped to the ULPDU,
// and keeps what was staged; Place then takes the rest.
func TestDecoderStage(t *testing.T) {
	u := make([]byte, 40)
	for i := range u {
		u[i] = byte(i)
	}
	s := refFrame(nil, u, true, true)
	d := NewDecoder(Options{CRC: true, RecvMarkers: true}, 0)
	d.Advance(copy(d.Buf(), s[:MarkerLen+HeaderLen+16]))
	if d.Step() != NeedPlace || !bytes.Equal(d.Header(), u[:14]) {
		t.Fatalf("%v % x", d.Step(), d.Header())
	}
	d.Stage(0)
	if d.Step() != NeedPlace || len(d.Header()) != 14 {
		t.Fatal("Stage(0) changed the header")
	}
	d.Stage(10)
	if d.Step() != NeedBytes || len(d.Header()) != 16 {
		t.Fatalf("Stage(10) with 2 octets staged: %v, %d", d.Step(), len(d.Header()))
	}
	d.Advance(copy(d.Buf(), s[MarkerLen+HeaderLen+16:MarkerLen+HeaderLen+30]))
	if d.Step() != NeedPlace || !bytes.Equal(d.Header(), u[:24]) {
		t.Fatalf("%v % x", d.Step(), d.Header())
	}
	d.Stage(1000)
	d.Advance(copy(d.Buf(), s[MarkerLen+HeaderLen+30:]))
	if d.Step() != NeedPlace || !bytes.Equal(d.Header(), u) {
		t.Fatalf("Stage past the ULPDU: %v % x", d.Step(), d.Header())
	}
	d.Place(nil)
	if d.Step() != FPDUDone || d.Err() != nil || d.Mid() {
		t.Fatalf("%v %v", d.Step(), d.Err())
	}
}

// TestDecoderMisuse: calls out of order panic instead of corrupting the
// stream.
func TestDecoderMisuse(t *testing.T) {
	s := refFrame(nil, make([]byte, 20), false, false)
	at := func(step Step) *Decoder {
		d := NewDecoder(Options{}, 0)
		if step != NeedBytes {
			d.Advance(copy(d.Buf(), s))
		}
		if step == FPDUDone {
			d.Place(nil)
		}
		if d.Step() != step {
			t.Fatalf("setup: %v, want %v", d.Step(), step)
		}
		return d
	}
	for name, f := range map[string]func(){
		"Place before the header": func() { at(NeedBytes).Place(nil) },
		"Place of a wrong length": func() { at(NeedPlace).Place(make([]byte, 5)) },
		"Place twice":             func() { at(FPDUDone).Place(nil) },
		"Stage after Place":       func() { at(FPDUDone).Stage(1) },
		"Stage(-1)":               func() { at(NeedPlace).Stage(-1) },
		"Next before FPDUDone":    func() { at(NeedPlace).Next() },
		"Advance at NeedPlace":    func() { at(NeedPlace).Advance(1) },
		"Advance beyond Buf": func() {
			d := at(NeedBytes)
			d.Advance(len(d.Buf()) + 1)
		},
		"Advance without Buf": func() { at(NeedBytes).Advance(1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestStepString(t *testing.T) {
	for s, want := range map[Step]string{NeedBytes: "NeedBytes", NeedPlace: "NeedPlace", FPDUDone: "FPDUDone", 7: "Step(7)"} {
		if s.String() != want {
			t.Errorf("%d: %q", s, s.String())
		}
	}
}

// TestDecoderPlaceV: a scatter list is filled piece by piece (empty
// pieces skipped): Buf stops at the end of a piece, Bufs hands out the
// following pieces up to the next marker and then the staging buffer, and
// one vectored read fills them all.
func TestDecoderPlaceV(t *testing.T) {
	for _, markers := range []bool{false, true} {
		u := make([]byte, 1400)
		for i := range u {
			u[i] = byte(i * 7)
		}
		s := refFrame(nil, u, markers, true)
		s = refFrame(s, u[:20], markers, true)
		d := NewDecoder(Options{CRC: true, RecvMarkers: markers}, 0)
		head := HeaderLen + 14 + MarkerLen*b2i(markers)
		d.Advance(copy(d.Buf(), s[:head]))
		s = s[head:]
		sgl := [][]byte{make([]byte, 100), nil, make([]byte, 300), make([]byte, 986)}
		d.PlaceV(sgl)
		if b := d.Buf(); len(b) != 100 || &b[0] != &sgl[0][0] {
			t.Fatalf("markers %v: Buf of %d octets, not the first piece", markers, len(b))
		}
		iov := d.Bufs(nil)
		wantPieces := []int{100, 300, 986}
		if markers { // the marker at 512 cuts the list: 512-34 octets of it fit
			wantPieces = []int{100, 300, 512 - head - 400}
		}
		if len(iov) != len(wantPieces)+1 {
			t.Fatalf("markers %v: Bufs of %d slices", markers, len(iov))
		}
		for i, n := range wantPieces {
			if len(iov[i]) != n {
				t.Fatalf("markers %v: Bufs slice %d of %d octets, want %d", markers, i, len(iov[i]), n)
			}
		}
		n := 0
		for _, b := range iov {
			n += copy(b, s[n:])
		}
		s = s[n:]
		d.Advance(n)
		for d.Step() == NeedBytes {
			k := copy(d.Buf(), s)
			s = s[k:]
			d.Advance(k)
		}
		if d.Step() != FPDUDone || d.Err() != nil || !bytes.Equal(bytes.Join(sgl, nil), u[14:]) {
			t.Fatalf("markers %v: %v %v", markers, d.Step(), d.Err())
		}
		d.Next()
		if d.Step() != NeedPlace || d.ULPDULen() != 20 {
			t.Fatalf("markers %v: the FPDU after the vectored read: %v", markers, d.Step())
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("PlaceV of a wrong total did not panic")
				}
			}()
			d.PlaceV([][]byte{make([]byte, 3), make([]byte, 2)})
		}()
	}
}
