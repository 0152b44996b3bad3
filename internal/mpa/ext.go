package mpa

// Ext is the project's extension set, advertised in the two low bits of the
// reserved flag nibble of the MPA frames ("extension set 1",
// docs/spec/extensions.md §3).
type Ext uint8

// The extension bits.
const (
	ExtRFC7306 Ext = 0x02 // RFC 7306 atomics and Immediate Data
	ExtV2      Ext = 0x01 // the RDMAP Extensions V2 draft (implies RFC 7306)
	// ExtAll is every extension the project knows.
	ExtAll  = ExtRFC7306 | ExtV2
	extMask = Ext(0x03)
)

// Normalize returns the set e means: bits outside ExtAll dropped, and V2
// without RFC 7306 read as neither (extensions.md §3).
func (e Ext) Normalize() Ext {
	e &= extMask
	if e&ExtV2 != 0 && e&ExtRFC7306 == 0 {
		return 0
	}
	return e
}

// String returns "RFC7306+V2", "RFC7306", "V2" or "none".
func (e Ext) String() string {
	switch e & extMask {
	case ExtAll:
		return "RFC7306+V2"
	case ExtRFC7306:
		return "RFC7306"
	case ExtV2:
		return "V2"
	}
	return "none"
}
