package fpdu

// Sizes of the FPDU fields (RFC 5044 §4.1, §4.3).
const (
	// HeaderLen is the size of the ULPDU_Length field that starts every FPDU.
	HeaderLen = 2
	// CRCLen is the size of the CRC trailer; it is present even when CRC
	// was not negotiated (RFC 5044 §4.1).
	CRCLen = 4
	// MarkerInterval is the distance between markers in a stream with
	// markers (RFC 5044 §4.3).
	MarkerInterval = 512
	// MarkerLen is the size of one marker: 2 reserved octets and FPDUPTR.
	MarkerLen = 4
	// MinULPDU is the smallest acceptable ULPDU_Length: the 14-octet DDP
	// tagged header (RFC 5041 §5.2). A smaller length is a framing error
	// (docs/spec/mpa.md §2).
	MinULPDU = 14
	// MaxULPDULen is the largest ULPDU_Length the 16-bit field can carry.
	MaxULPDULen = 65535
)

// PadLen returns the number of zero octets that follow a ULPDU of ulpduLen
// octets so that ULPDU_Length, ULPDU and PAD together are a multiple of 4
// (RFC 5044 §4.1).
func PadLen(ulpduLen int) int {
	return (4 - (HeaderLen+ulpduLen)&3) & 3
}

// MULPDU returns the largest ULPDU a sender should put into one FPDU for a
// TCP effective MSS of emss, so that each FPDU fits one TCP segment
// (RFC 5044 §4.1, docs/spec/mpa.md §2):
//
//	without markers: EMSS - (6 + EMSS mod 4)
//	with markers:    EMSS - (6 + 4*ceil(EMSS/512) + EMSS mod 4)
//
// The result is clamped to [MinULPDU, 65534] (65534 is the largest length
// that needs no PAD), so absurd MSS values still give a usable size.
func MULPDU(emss int, markers bool) int {
	n := emss - (HeaderLen + CRCLen + emss%4)
	if markers {
		n -= MarkerLen * ((emss + MarkerInterval - 1) / MarkerInterval)
	}
	if n > MaxULPDULen-1 {
		n = MaxULPDULen - 1
	}
	if n < MinULPDU {
		n = MinULPDU
	}
	return n
}

// DefaultEMSS is the effective MSS assumed when the connection's cannot be
// read: Ethernet's 1500-octet MTU less 40 octets of IPv4 and TCP headers.
const DefaultEMSS = 1460
