package rdma

// Extensions is a set of RDMAP extensions. Its bits are the ones the MPA
// frames advertise them with: the two low bits of the reserved flag nibble
// of the MPA Request and Reply ("extension set 1", docs/extensions.md).
type Extensions uint8

// The RDMAP extensions.
const (
	// ExtRFC7306 is RFC 7306: atomics (FetchAdd, CompareSwap, with masks),
	// Immediate Data and Write with Immediate.
	ExtRFC7306 Extensions = 0x02
	// ExtV2 is the RDMAP Extensions V2 draft: RDMAP version 2 on every
	// message, Send with Immediate, RDMA Read V2. It implies RFC 7306.
	ExtV2 Extensions = 0x01
	// ExtAll is every extension the stack knows.
	ExtAll  = ExtRFC7306 | ExtV2
	extMask = Extensions(0x03)
)

// Normalize returns the set e means: bits outside ExtAll dropped, and V2
// without RFC 7306 read as neither.
func (e Extensions) Normalize() Extensions {
	e &= extMask
	if e&ExtV2 != 0 && e&ExtRFC7306 == 0 {
		return 0
	}
	return e
}

// String returns "RFC7306+V2", "RFC7306", "V2" or "none".
func (e Extensions) String() string {
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
