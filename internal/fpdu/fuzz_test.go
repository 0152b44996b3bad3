package fpdu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// optsFromFlags maps a fuzzed octet to framing options: bit 0 CRC, bit 1
// markers, bit 2 a small receive bound.
func optsFromFlags(flags byte) Options {
	o := Options{CRC: flags&1 != 0, RecvMarkers: flags&2 != 0, SendMarkers: flags&2 != 0}
	if flags&4 != 0 {
		o.MaxULPDU = 100
	}
	return o
}

// fuzzSeeds adds every vector stream, whole and per FPDU, with matching
// options.
func fuzzSeeds(f *testing.F, add func(data []byte, off uint64, flags byte)) {
	for _, file := range []string{"fpdus.tsv", "v2.tsv"} {
		for _, v := range loadVectors(f, file, true) {
			add(v.Bytes, 0, 1)
		}
		add(streamOf(f, file), 0, 1)
	}
	var off uint64
	for _, v := range loadVectors(f, "markers.tsv", true) {
		add(v.Bytes, off, 3)
		off += uint64(len(v.Bytes))
	}
	add(streamOf(f, "markers.tsv"), 0, 3)
	// Real siw FPDUs with CRC (after the 20-octet MPA Request/Reply).
	for _, s := range tcpStreams(f, captureDir+"crc_lo.pcap") {
		if len(s) > 20 {
			add(s[20:], 0, 1)
		}
	}
	add([]byte{0, 2, 0, 0, 0, 0, 0, 0}, 0, 0)
}

// FuzzDecodeFPDU: DecodeFPDU never panics, stays inside src, and an FPDU
// it accepts is re-encoded by the Writer to the same FPDU.
func FuzzDecodeFPDU(f *testing.F) {
	fuzzSeeds(f, func(data []byte, off uint64, flags byte) { f.Add(data, off, flags) })
	f.Fuzz(func(t *testing.T, data []byte, off uint64, flags byte) {
		opts := optsFromFlags(flags)
		fr, err := DecodeFPDU(make([]byte, 0, 64), data, off, opts)
		if fr.Size > len(data) || len(fr.ULPDU) > fr.Length || fr.BadMarkers > fr.Markers {
			t.Fatalf("frame out of bounds: %+v of %d", fr, len(data))
		}
		if err == nil && (len(fr.ULPDU) != fr.Length || fr.BadMarkers != 0) {
			t.Fatalf("accepted a bad frame: %+v", fr)
		}
		if err != nil {
			return
		}
		mc := &memConn{}
		w := NewConn(mc, opts).Writer()
		w.m = newMarkerStream(opts.SendMarkers, off)
		if err := w.WriteFPDU(fr.ULPDU); err != nil {
			t.Fatal(err)
		}
		re, err := DecodeFPDU(nil, mc.out, off, opts)
		if err != nil || !bytes.Equal(re.ULPDU, fr.ULPDU) || re.Size != fr.Size || re.Markers != fr.Markers {
			t.Fatalf("re-encoded frame differs: %v %+v, was %+v", err, re, fr)
		}
		// Only PAD (ignored on receipt), the trailer and markers among
		// them, and the bits of markers a receiver ignores may differ.
		orig := data[:fr.Size]
		for i := range orig {
			inMarker := opts.RecvMarkers && (off+uint64(i))%MarkerInterval < MarkerLen
			if orig[i] != mc.out[i] && i < fr.Size-(3+CRCLen+2*MarkerLen) && !inMarker {
				t.Fatalf("octet %d differs: %x vs %x", i, orig, mc.out)
			}
		}
		if opts.CRC && binary.LittleEndian.Uint32(mc.out[fr.Size-4:]) == fr.CRC && !bytes.Equal(orig, mc.out) {
			t.Fatalf("same CRC, different octets: %x vs %x", orig, mc.out)
		}
	})
}

// FuzzReader: the Reader, fed arbitrary octets in arbitrary read splits,
// never panics and sees exactly the FPDUs and the first error DecodeFPDU
// sees walking the same octets.
func FuzzReader(f *testing.F) {
	fuzzSeeds(f, func(data []byte, off uint64, flags byte) {
		if off == 0 {
			f.Add(data, []byte{1, 7, 0, 200, 3}, flags)
		}
	})
	f.Fuzz(func(t *testing.T, data, splits []byte, flags byte) {
		opts := optsFromFlags(flags)
		r := NewConn(&memConn{in: data, split: splitFromBytes(splits)}, opts).Reader()
		pick := splitFromBytes(bytes.Clone(splits[min(1, len(splits)):]))
		got, rerr := readFPDUs(r, pick, flags&8 != 0)
		var off uint64
		for i, u := range got {
			fr, err := DecodeFPDU(nil, data[off:], off, opts)
			if err != nil {
				t.Fatalf("FPDU %d: Reader accepted, DecodeFPDU: %v", i, err)
			}
			if flags&8 == 0 && !bytes.Equal(fr.ULPDU, u) {
				t.Fatalf("FPDU %d differs", i)
			}
			off += uint64(fr.Size)
		}
		if rerr == io.EOF {
			if off != uint64(len(data)) {
				t.Fatalf("io.EOF at %d of %d", off, len(data))
			}
			return
		}
		_, derr := DecodeFPDU(nil, data[off:], off, opts)
		if !errors.Is(derr, rerr) {
			t.Fatalf("Reader: %v; DecodeFPDU: %v", rerr, derr)
		}
	})
}
