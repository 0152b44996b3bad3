package wire

import "testing"

func benchULPDU(b *testing.B, name string) []byte {
	for _, row := range loadVectors(b, "fpdus.tsv") {
		if row.Name == name {
			n := int(row.Bytes[0])<<8 | int(row.Bytes[1])
			return row.Bytes[2 : 2+n]
		}
	}
	b.Fatalf("no vector %s", name)
	return nil
}

func BenchmarkParseULPDU(b *testing.B) {
	for _, name := range []string{"send-msn1", "read-request", "atomic-request-cmpswap", "terminate-ddp-invalid-qn"} {
		ulpdu := benchULPDU(b, name)
		b.Run("vector="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseULPDU(ulpdu); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkValidateDDPHeader(b *testing.B) {
	ulpdu := benchULPDU(b, "send-msn1")
	b.ReportAllocs()
	for b.Loop() {
		h, _, err := ParseDDPHeader(ulpdu)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ValidateDDPHeader(&h, RDMAPVersion1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendULPDU(b *testing.B) {
	u, err := ParseULPDU(benchULPDU(b, "read-request"))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendULPDU(buf[:0], &u)
	}
}
