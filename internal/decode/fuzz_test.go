package decode

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/vectors"
	"github.com/goiwarp/iwarp/internal/wire"
)

// FuzzDecodeStream decodes arbitrary bytes as both directions of a
// connection after an MPA startup whose flags the fuzzer picks (C, M), and
// with or without the startup at all. Nothing may panic, every line must
// render, and every FPDU decoded without error must re-encode to the same
// ULPDU bytes (parse -> encode round trip). Seeds are the vector streams.
func FuzzDecodeStream(f *testing.F) {
	for _, name := range vectors.FrameFiles {
		fs, err := vectors.ReadFile(vectorDir + name)
		if err != nil {
			f.Fatal(err)
		}
		for _, fr := range fs {
			if !fr.MPA() {
				f.Add(fr.Bytes, uint8(0x40))
			}
		}
	}
	f.Add([]byte{0, 14, 0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) {
		req := mpa.AppendFrame(nil, &mpa.Frame{Flags: mpa.Flags(flags) & (mpa.FlagCRC | mpa.FlagMarkers), Rev: 1})
		rep := mpa.AppendFrame(nil, &mpa.Frame{Reply: true, Flags: mpa.Flags(flags>>1) & (mpa.FlagCRC | mpa.FlagMarkers), Rev: 1})
		var recs []textRecord
		if flags&1 == 0 {
			recs = []textRecord{{initiator: true, off: -1, data: req}, {off: -1, data: rep}}
		}
		recs = append(recs, textRecord{initiator: true, off: -1, data: data}, textRecord{off: -1, data: data})
		a, err := assembleText([]*textConn{{recs: recs}})
		if err != nil {
			return
		}
		for _, ports := range [][]uint16{nil, {7000}} {
			c := DecodeConn(a.Conns()[0], Options{Ports: ports})
			Render(io.Discard, []*Conn{c}, RenderOptions{Payload: 8, Verbose: true})
			for i := range c.Items {
				it := &c.Items[i]
				if it.Kind != KindFPDU || it.FPDUErr != nil || it.ULPDUErr != nil {
					continue
				}
				if it.FPDU.Length != len(it.FPDU.ULPDU) {
					t.Fatalf("ULPDU_Length %d, ULPDU %d bytes", it.FPDU.Length, len(it.FPDU.ULPDU))
				}
				again := wire.AppendULPDU(nil, &it.ULPDU)
				if it.ULPDU.Header == wire.HeaderTerminate {
					// AppendTerminate writes the RFC layout with zero
					// reserved bits: compare the meaning, not the bytes.
					back, err := wire.ParseULPDU(again)
					a, b := &it.ULPDU.Terminate, &back.Terminate
					if err != nil || a.Code != b.Code || a.M != b.M || a.D != b.D || a.R != b.R || a.DDPSegLen != b.DDPSegLen ||
						!bytes.Equal(a.DDPHeader, b.DDPHeader) || !bytes.Equal(a.RDMAHeader, b.RDMAHeader) {
						t.Fatalf("Terminate round trip: %v\n in %+v\nout %+v", err, *a, *b)
					}
					continue
				}
				// AppendDDPHeader writes the reserved DDP control bits
				// as zero (RFC 5041 §5.1), so compare without them.
				in := append([]byte(nil), it.FPDU.ULPDU...)
				in[0] &^= wire.DDPRsvdMask
				if !bytes.Equal(again, in) {
					t.Fatalf("round trip:\n in %x\nout %x", in, again)
				}
			}
		}
	})
}

// FuzzReadText feeds arbitrary text to the vector/hex reader and decodes
// whatever connections it yields: nothing may panic.
func FuzzReadText(f *testing.F) {
	f.Add("name\tdirection\thex\nx\tI->R\t4d504120494420526571204672616d6540010000\n")
	f.Add("req: 4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 00 01 00 00\nrep: 00\n")
	f.Add("1.0 c2s off=0 len=4\n00000000  00 0e c1 40                                      |...@|\n")
	f.Fuzz(func(t *testing.T, text string) {
		a, err := ReadText(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, c := range a.Conns() {
			Render(io.Discard, []*Conn{DecodeConn(c, Options{})}, RenderOptions{Payload: 4})
		}
	})
}
