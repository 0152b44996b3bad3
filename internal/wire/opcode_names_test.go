package wire

import "testing"

func TestOpcodeNames(t *testing.T) {
	for op := Opcode(0); op < 0x20; op++ {
		_, defined := LookupOpcode(RDMAPVersion2, op)
		s := op.String()
		if defined == (s == "opcode 0x"+hex2(uint8(op))) {
			t.Errorf("%d.String() = %q (defined %v)", op, s, defined)
		}
	}
}

func hex2(b uint8) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[b>>4], digits[b&0xF]})
}
