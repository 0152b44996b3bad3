package fpdu

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
)

// The differential test: seeded random streams are framed by the Writer
// and by the reference framer (reference_test.go), which must agree octet
// for octet; the reference's stream, pristine, with one octet corrupted,
// or truncated, is read by the Reader (in random segmentations down to one
// octet per read, random Read and Discard sizes) and walked with
// DecodeFPDU, which must accept the same FPDUs and stop with the same
// error as the reference deframer. Some streams are written over loopback
// TCP with TryFlush only, so that short writes leave FPDUs half sent.
//
// CI runs the default streams from seed 1. Replay or extend with
//
//	go test ./internal/fpdu -run TestDifferential -fpdu.seed=N -fpdu.streams=M
//
// Stream i uses seed N+i, and a failure names the seed that replays it
// alone (with -fpdu.streams=1). Streams written over TCP add filler FPDUs
// until a write comes up short, so their length depends on the socket
// buffers; everything else replays exactly.
var (
	diffSeed    = flag.Uint64("fpdu.seed", 1, "differential test: seed of the first random stream (stream i uses seed+i)")
	diffStreams = flag.Int("fpdu.streams", 0, "differential test: number of random streams (0: the CI default)")
)

// diffDefaultStreams is the CI default: a few seconds under -race.
const diffDefaultStreams = 200

// diffRaceSmall is the largest stream read in pieces down to one octet
// under the race detector.
const diffRaceSmall = 2048

// diffStats counts what the streams covered.
type diffStats struct {
	streams, fpdus, receives, corruptions, truncations     int
	beforeCRC, endOnMarker, leading, longFPDU, shortWrites int
}

func TestDifferential(t *testing.T) {
	if refCRC32c([]byte("123456789")) != 0xE3069283 {
		t.Fatal("the reference CRC32c fails its check value")
	}
	n := *diffStreams
	if n <= 0 {
		n = diffDefaultStreams
	}
	var st diffStats
	for i := range uint64(n) {
		seed := *diffSeed + i
		diffOne(t, seed, &st)
		if t.Failed() {
			t.Fatalf("replay: go test ./internal/fpdu -run TestDifferential -fpdu.seed=%d -fpdu.streams=1", seed)
		}
	}
	t.Logf("%d streams, %d FPDUs (%d with a marker before the CRC field, %d ending on a marker position, %d with a leading marker after the first, %d longer than 65535 octets), %d receive passes, %d corruptions, %d truncations, %d short writes",
		st.streams, st.fpdus, st.beforeCRC, st.endOnMarker, st.leading, st.longFPDU, st.receives, st.corruptions, st.truncations, st.shortWrites)
	if *diffStreams > 0 {
		return
	}
	if st.beforeCRC == 0 || st.endOnMarker == 0 || st.leading == 0 || st.longFPDU == 0 || st.corruptions == 0 || st.truncations == 0 {
		t.Errorf("the default streams no longer cover every edge case: %+v", st)
	}
	if runtime.GOOS == "linux" && st.shortWrites == 0 {
		t.Errorf("no TryFlush came up short")
	}
}

// diffOne runs one stream.
func diffOne(t *testing.T, seed uint64, st *diffStats) {
	rng := rand.New(rand.NewPCG(seed, 0x6d7061))
	markers, crc := rng.IntN(4) != 0, rng.IntN(2) == 0
	ulpdus := diffULPDUs(rng, markers)
	var out []byte
	if rng.IntN(8) == 0 {
		var short int
		out, ulpdus, short = diffWriteTCP(t, rng, ulpdus, Options{CRC: crc, SendMarkers: markers})
		st.shortWrites += short
	} else {
		out = diffWriteMem(t, rng, ulpdus, Options{CRC: crc, SendMarkers: markers})
	}
	var ref []byte
	for _, u := range ulpdus {
		ref = refFrame(ref, u, markers, crc)
	}
	if !bytes.Equal(out, ref) {
		t.Errorf("seed %d (markers %v, CRC %v, %d FPDUs): the Writer's %d octets differ from the reference's %d at offset %d",
			seed, markers, crc, len(ulpdus), len(out), len(ref), firstDiff(out, ref))
		return
	}
	st.streams++
	st.fpdus += len(ulpdus)
	opts := Options{CRC: crc, RecvMarkers: markers}
	want, err := refDeframe(ref, opts)
	if err != io.EOF || len(want) != len(ulpdus) {
		t.Errorf("seed %d: the reference deframer read %d of %d FPDUs: %v", seed, len(want), len(ulpdus), err)
		return
	}
	var ends []int
	off := 0
	for _, f := range want {
		if markers {
			st.beforeCRC += b2i((off+f.size-CRCLen)%MarkerInterval == MarkerLen)
			st.endOnMarker += b2i((off+f.size)%MarkerInterval == 0)
			st.leading += b2i(off > 0 && off%MarkerInterval == 0)
			st.longFPDU += b2i(f.size > MaxULPDULen)
		}
		off += f.size
		ends = append(ends, off)
	}
	diffReceive(t, rng, fmt.Sprintf("seed %d pristine", seed), ref, opts)
	if rng.IntN(8) == 0 { // read with the other side's idea of the options
		o := opts
		switch rng.IntN(3) {
		case 0:
			o.RecvMarkers = !o.RecvMarkers
		case 1:
			o.CRC = !o.CRC
		default:
			o.MaxULPDU = 14 + rng.IntN(1500)
		}
		diffReceive(t, rng, fmt.Sprintf("seed %d read with other options", seed), ref, o)
	}
	st.receives += 2
	for range 2 {
		s := bytes.Clone(ref)
		i := rng.IntN(len(s))
		s[i] ^= byte(1 + rng.IntN(255))
		diffReceive(t, rng, fmt.Sprintf("seed %d octet %d corrupted", seed, i), s, opts)
		st.corruptions++
		st.receives++
	}
	for range 3 {
		cut := rng.IntN(len(ref))
		if rng.IntN(2) == 0 { // near an FPDU's end: inside its CRC or the next leading marker
			cut = max(0, min(len(ref)-1, ends[rng.IntN(len(ends))]+rng.IntN(9)-4))
		}
		diffReceive(t, rng, fmt.Sprintf("seed %d truncated to %d", seed, cut), ref[:cut], opts)
		st.truncations++
		st.receives++
	}
}

// diffULPDUs returns 1 to 10 random ULPDUs, with lengths chosen, when
// markers are on, to place markers at the edges of the FPDUs: just before
// the CRC field, just after the FPDU, around its header.
func diffULPDUs(rng *rand.Rand, markers bool) [][]byte {
	var us [][]byte
	pos := 0 // stream offset of the next FPDU
	for range 1 + rng.IntN(10) {
		n := 14 + rng.IntN(1500)
		switch k := rng.IntN(12); {
		case k < 3 && markers:
			n = lengthWhere(rng, pos, func(crcAt, _ int) bool { return crcAt%MarkerInterval == 0 })
		case k < 5 && markers:
			n = lengthWhere(rng, pos, func(_, end int) bool { return end%MarkerInterval == 0 })
		case k == 5:
			n = 14 + rng.IntN(32)
		case k == 6 && rng.IntN(6) == 0:
			n = MaxULPDULen - rng.IntN(600)
		}
		u := make([]byte, n)
		for i := range u {
			u[i] = byte(rng.Uint32())
		}
		us = append(us, u)
		pos = streamAfter(pos, HeaderLen+n+PadLen(n)+CRCLen, markers)
	}
	return us
}

// streamAfter returns the stream offset after l FPDU octets sent from
// stream offset p, with a marker in front of every 512th octet.
func streamAfter(p, l int, markers bool) int {
	if !markers {
		return p + l
	}
	for l > 0 {
		if p%MarkerInterval == 0 {
			p += MarkerLen
		}
		k := min(l, MarkerInterval-p%MarkerInterval)
		p, l = p+k, l-k
	}
	return p
}

// lengthWhere returns a random ULPDU length whose FPDU, sent from stream
// offset pos, satisfies ok(offset after its PAD, offset after its CRC).
func lengthWhere(rng *rand.Rand, pos int, ok func(crcAt, end int) bool) int {
	var fit []int
	for n := 14; n < 14+3*MarkerInterval; n++ {
		covered := HeaderLen + n + PadLen(n)
		if ok(streamAfter(pos, covered, true), streamAfter(pos, covered+CRCLen, true)) {
			fit = append(fit, n)
		}
	}
	return fit[rng.IntN(len(fit))]
}

// diffAppend queues u on w as a header and payload pieces cut at random,
// by reference or copied.
func diffAppend(rng *rand.Rand, w *Writer, u []byte) error {
	h := rng.IntN(min(len(u), 30) + 1)
	var pieces [][]byte
	rest := u[h:]
	for len(rest) > 0 && len(pieces) < 4 {
		k := rng.IntN(len(rest) + 1)
		if rng.IntN(3) == 0 {
			k = min(len(rest), rng.IntN(300)) // around copyMax
		}
		pieces = append(pieces, rest[:k])
		rest = rest[k:]
	}
	pieces = append(pieces, rest)
	if rng.IntN(4) == 0 {
		return w.AppendCopy(u[:h], pieces...)
	}
	return w.Append(u[:h], pieces...)
}

// diffWriteMem frames ulpdus with a Writer into memory, flushing at random.
func diffWriteMem(t *testing.T, rng *rand.Rand, ulpdus [][]byte, opts Options) []byte {
	mc := &memConn{}
	w := NewConn(mc, opts).Writer()
	for _, u := range ulpdus {
		if err := diffAppend(rng, w, u); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(3) == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return mc.out
}

// diffWriteTCP frames ulpdus with a Writer over loopback TCP, sending with
// TryFlush only while the peer does not read, and adds filler ULPDUs until
// a TryFlush comes up short (on platforms with a non-blocking write). Then
// the peer reads everything and the last Flush sends the rest. It returns
// the octets received, the ULPDUs sent and the number of short TryFlushes.
func diffWriteTCP(t *testing.T, rng *rand.Rand, ulpdus [][]byte, opts Options) ([]byte, [][]byte, int) {
	a, b := tcpPair(t)
	_ = a.SetWriteBuffer(8 << 10)
	deadline(a)
	deadline(b)
	w := NewConn(a, opts).Writer()
	short := 0
	try := func(u []byte) {
		if err := diffAppend(rng, w, u); err != nil {
			t.Fatal(err)
		}
		done, err := w.TryFlush()
		if err != nil {
			t.Fatal(err)
		}
		short += b2i(!done && w.Buffered() > 0)
	}
	for _, u := range ulpdus {
		try(u)
	}
	for range 500 {
		if short > 0 || runtime.GOOS != "linux" {
			break
		}
		u := make([]byte, 1000+rng.IntN(3000))
		for i := range u {
			u[i] = byte(rng.Uint32())
		}
		ulpdus = append(ulpdus, u)
		try(u)
	}
	got := make(chan []byte, 1)
	go func() {
		all, _ := io.ReadAll(b)
		got <- all
	}()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := a.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	return <-got, ulpdus, short
}

// diffReceive reads stream with the Reader (random segmentation, Read and
// Discard sizes) and walks it with DecodeFPDU, and compares both with the
// reference deframer.
func diffReceive(t *testing.T, rng *rand.Rand, name string, stream []byte, opts Options) {
	t.Helper()
	want, werr := refDeframe(stream, opts)
	mc := &memConn{in: stream}
	seed := rng.Uint64()
	switch k := rng.IntN(3); {
	case raceEnabled && len(stream) > diffRaceSmall && k < 2:
		// Under the race detector sync.Pool drops staging buffers at
		// random, and each small read of a big stream would then
		// allocate one: read in coarser pieces.
		r := rand.New(rand.NewPCG(seed, 0))
		mc.split = func(n int) int { return 1 + r.IntN(min(n, 4096)) }
	case k == 0:
		mc.split = func(int) int { return 1 }
	case k == 1:
		mc.split = randomSplit(seed)
	}
	pick := randomSplit(rng.Uint64())
	discard := rng.IntN(3) == 0
	got, gerr := readFPDUs(NewConn(mc, opts).Reader(), pick, discard)
	if gerr != werr || len(got) != len(want) {
		t.Errorf("%s, %s: Reader read %d FPDUs then %v; reference %d then %v", name, optsString(opts), len(got), gerr, len(want), werr)
		return
	}
	for i := range got {
		if len(got[i]) != len(want[i].ulpdu) || !discard && !bytes.Equal(got[i], want[i].ulpdu) {
			t.Errorf("%s, %s: Reader's ULPDU %d differs from the reference's", name, optsString(opts), i)
			return
		}
	}
	off := 0
	dst := make([]byte, 0, 64)
	for i := 0; off < len(stream); i++ {
		f, err := DecodeFPDU(dst, stream[off:], uint64(off), opts)
		if err != nil {
			if err != werr || i != len(want) {
				t.Errorf("%s, %s: DecodeFPDU failed at FPDU %d with %v; reference %d FPDUs then %v", name, optsString(opts), i, err, len(want), werr)
			}
			return
		}
		if i >= len(want) {
			t.Errorf("%s, %s: DecodeFPDU accepted FPDU %d; reference %d FPDUs then %v", name, optsString(opts), i, len(want), werr)
			return
		}
		r := want[i]
		if f.Size != r.size || f.Markers != r.markers || f.CRC != r.crc || f.ComputedCRC != r.computed || !bytes.Equal(f.ULPDU, r.ulpdu) {
			t.Errorf("%s, %s: DecodeFPDU's FPDU %d (size %d, %d markers, CRC %08x computed %08x) differs from the reference's (%d, %d, %08x, %08x)",
				name, optsString(opts), i, f.Size, f.Markers, f.CRC, f.ComputedCRC, r.size, r.markers, r.crc, r.computed)
			return
		}
		off += f.Size
	}
	if werr != io.EOF {
		t.Errorf("%s, %s: DecodeFPDU walked the whole stream; reference stopped with %v", name, optsString(opts), werr)
	}
}

// optsString describes the receive options.
func optsString(o Options) string {
	return fmt.Sprintf("CRC %v, markers %v, bound %d", o.CRC, o.RecvMarkers, o.maxULPDU())
}

// firstDiff returns the first offset where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestReferenceFramer pins the reference framer to the worked example of
// docs/fpdu.md: a 506-octet ULPDU from stream offset 0 gets a leading
// marker, and a marker with FPDUPTR 508 in front of its CRC field, which
// covers it.
func TestReferenceFramer(t *testing.T) {
	u := markerBeforeCRCULPDU()
	s := refFrame(nil, u, true, true)
	if len(s) != 520 || !bytes.Equal(s[:4], []byte{0, 0, 0, 0}) || !bytes.Equal(s[512:516], []byte{0, 0, 1, 0xfc}) {
		t.Fatalf("layout % x ... % x", s[:8], s[508:])
	}
	if s[516] != 0x01 || s[517] != 0x0e || s[518] != 0x0d || s[519] != 0x70 {
		t.Fatalf("CRC % x, want 01 0e 0d 70", s[516:])
	}
	fs, err := refDeframe(s, Options{CRC: true, RecvMarkers: true})
	if err != io.EOF || len(fs) != 1 || fs[0].markers != 2 || !bytes.Equal(fs[0].ulpdu, u) {
		t.Fatalf("deframed %d FPDUs, %v", len(fs), err)
	}
	if _, err := refDeframe(s[:519], Options{RecvMarkers: true}); !errors.Is(err, ErrTruncated) {
		t.Fatalf("truncated: %v", err)
	}
}
