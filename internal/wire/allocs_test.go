package wire

import "testing"

// Every parser and the validation path allocate nothing.
func TestParsersDoNotAllocate(t *testing.T) {
	var ulpdus [][]byte
	for _, file := range []string{"fpdus.tsv", "v2.tsv"} {
		for _, row := range loadVectors(t, file) {
			if !row.MPA() {
				ulpdus = append(ulpdus, splitFPDU(t, row.Name, row.Bytes))
			}
		}
	}
	term := mustHex("10 00 07 00 0000 41 41 00000000 00000001 00000001 00000000" +
		"aabbccdd 0102030405060708 00000040 55667788 1112131415161718")
	bad := mustHex("41 4a 00000000 00000001 00000001 00000000")
	imm := mustHex("c0ffee0001020304")
	var sink int
	checks := map[string]func(){
		"ParseULPDU": func() {
			for _, b := range ulpdus {
				u, _ := ParseULPDU(b)
				sink += len(u.Payload)
			}
		},
		"ParseULPDU errors": func() {
			_, err := ParseULPDU(bad)
			_, err2 := ParseULPDU(bad[:3])
			if err != nil && err2 != nil {
				sink++
			}
		},
		"ParseDDPHeader+ValidateDDPHeader": func() {
			for _, b := range ulpdus {
				h, _, _ := ParseDDPHeader(b)
				info, _ := ValidateDDPHeader(&h, RDMAPVersion1)
				sink += info.HeaderLen
			}
		},
		"ParseTerminate": func() {
			tm, _ := ParseTerminate(term)
			sink += len(tm.RDMAHeader)
		},
		"ParseReadRequest": func() {
			r, _ := ParseReadRequest(readRequestGolden)
			sink += int(r.Size)
		},
		"ParseReadV2Request": func() {
			r, _ := ParseReadV2Request(readV2RequestGolden)
			sink += int(r.Size)
		},
		"ParseAtomicRequest": func() {
			r, _ := ParseAtomicRequest(atomicCmpSwapGolden)
			sink += int(r.RequestID)
		},
		"ParseAtomicResponse": func() {
			r, _ := ParseAtomicResponse(atomicResponseGolden)
			sink += int(r.RequestID)
		},
		"ParseImmediateData": func() {
			d, _ := ParseImmediateData(imm)
			sink += int(d[0])
		},
		"LookupOpcode": func() {
			info, _ := LookupOpcode(RDMAPVersion2, OpSendImm)
			sink += info.HeaderLen
		},
	}
	for name, f := range checks {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per run", name, n)
		}
	}
	_ = sink
}

// Encoders append into a buffer with room without allocating.
func TestEncodersDoNotAllocate(t *testing.T) {
	u, err := ParseULPDU(mustHex("41 47 00000000 00000002 00000001 00000000 12 01 e0 00 002e" +
		"41 41 00000000 00000007 00000001 00000000" +
		"aabbccdd 0102030405060708 00000040 55667788 1112131415161718"))
	if err != nil {
		t.Fatal(err)
	}
	a := AtomicRequest{AOpCode: AOpFetchAdd, CompareMask: ones}
	buf := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		b := AppendULPDU(buf[:0], &u)
		b = AppendAtomicRequest(b, &a)
		b = AppendAtomicResponse(b, &AtomicResponse{})
		b = AppendReadRequest(b, &ReadRequest{})
		b = AppendReadV2Request(b, &ReadV2Request{})
		_ = AppendImmediateData(b, ImmediateData{})
	})
	if n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}
