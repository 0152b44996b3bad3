package fpdu

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// annotatedHex parses hex written one field per line, "hex | comment".
func annotatedHex(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(s, "\n") {
		h, _, _ := strings.Cut(line, "|")
		b, err := hex.DecodeString(strings.Join(strings.Fields(h), ""))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, b...)
	}
	return out
}

// TestAnnotatedFPDU spells out the first FPDU of fpdus.tsv field by field
// and checks it against the vector, DecodeFPDU and the Writer.
func TestAnnotatedFPDU(t *testing.T) {
	fpdu := annotatedHex(t, `
		001f                              | ULPDU_Length 31
		41 43                             | DDP control: L=1, DV=1; RDMAP control: RV=1, Send
		00000000                          | reserved (Invalidate STag)
		00000000 00000001 00000000        | QN 0, MSN 1, MO 0
		68656c6c6f2c20695741525021        | "hello, iWARP!"
		000000                            | PAD to a multiple of 4
		6d124432                          | CRC32c 0x3244126d, little-endian`)
	if v := loadVectors(t, "fpdus.tsv", true)[0]; !bytes.Equal(fpdu, v.Bytes) {
		t.Fatalf("annotation differs from %s:\n%x\n%x", v.Name, fpdu, v.Bytes)
	}
	f, err := DecodeFPDU(nil, fpdu, 0, Options{CRC: true})
	if err != nil || f.Length != 31 || f.PadLen != 3 || f.CRC != 0x3244126d || string(f.ULPDU[18:]) != "hello, iWARP!" {
		t.Fatalf("decoded %+v, %v", f, err)
	}
	mc := &memConn{}
	if err := NewConn(mc, Options{CRC: true}).Writer().WriteFPDU(f.ULPDU[:18], f.ULPDU[18:]); err != nil || !bytes.Equal(mc.out, fpdu) {
		t.Fatalf("Writer: %x, %v", mc.out, err)
	}
}

// TestAnnotatedMarkers spells out the start and the markers of the first
// FPDU of markers.tsv.
func TestAnnotatedMarkers(t *testing.T) {
	head := annotatedHex(t, `
		0000 0000                         | marker at stream offset 0: reserved, FPDUPTR 0 (leads the FPDU)
		05ea                              | ULPDU_Length 1514
		c1 40                             | DDP control: T=1, L=1, DV=1; RDMAP: RV=1, RDMA Write
		00005000                          | STag 0x5000
		0000000000000000                  | TO 0
		00070e151c232a31                  | payload: octet i is 7*i mod 256`)
	raw := loadVectors(t, "markers.tsv", true)[0].Bytes
	if !bytes.HasPrefix(raw, head) {
		t.Fatalf("annotation differs:\n%x\n%x", head, raw[:len(head)])
	}
	m512 := annotatedHex(t, `0000 01fc | marker at stream offset 512: FPDUPTR 508 = 512 - 4`)
	m1024 := annotatedHex(t, `0000 03fc | marker at stream offset 1024: FPDUPTR 1020`)
	if !bytes.Equal(raw[512:516], m512) || !bytes.Equal(raw[1024:1028], m1024) {
		t.Fatalf("markers %x %x", raw[512:516], raw[1024:1028])
	}
}
