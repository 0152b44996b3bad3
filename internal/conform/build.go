package conform

import (
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// ULPDU is one DDP segment as the hostile peer sends it: the DDP header
// (with the RDMAP control field), any RDMAP header, and the payload. HdrLen
// is the DDP header's length and RDMALen that of the RDMA header a receiver
// attaches to its Terminate (28 for a Read Request), so the exact Terminate
// can be predicted.
type ULPDU struct {
	Bytes   []byte
	HdrLen  int
	RDMALen int
}

// Tagged builds a tagged segment (RFC 5041 §5.2) of RDMAP version rv.
func Tagged(rv uint8, op wire.Opcode, last bool, stag uint32, to uint64, payload []byte) ULPDU {
	h := wire.DDPHeader{Tagged: true, Last: last, Version: wire.DDPVersion, Control: wire.MakeRDMAPControl(rv, op), STag: stag, TO: to}
	b := wire.AppendDDPHeader(nil, &h)
	return ULPDU{Bytes: append(b, payload...), HdrLen: len(b)}
}

// Untagged builds an untagged segment (RFC 5041 §5.3) of RDMAP version rv.
func Untagged(rv uint8, op wire.Opcode, last bool, qn, msn, mo uint32, payload []byte) ULPDU {
	h := wire.DDPHeader{Last: last, Version: wire.DDPVersion, Control: wire.MakeRDMAPControl(rv, op), QN: qn, MSN: msn, MO: mo}
	b := wire.AppendDDPHeader(nil, &h)
	return ULPDU{Bytes: append(b, payload...), HdrLen: len(b)}
}

// ReadRequest builds an RDMA Read Request (RFC 5040 §4.4) with Read MSN msn.
func ReadRequest(rv uint8, msn uint32, r wire.ReadRequest) ULPDU {
	u := Untagged(rv, wire.OpReadRequest, true, wire.QNReadReq, msn, 0, wire.AppendReadRequest(nil, &r))
	u.RDMALen = wire.ReadRequestLen
	return u
}

// AtomicRequest builds an RFC 7306 Atomic Request with MSN msn on QN 1.
func AtomicRequest(rv uint8, msn uint32, r wire.AtomicRequest) ULPDU {
	return Untagged(rv, wire.OpAtomicRequest, true, wire.QNReadReq, msn, 0, wire.AppendAtomicRequest(nil, &r))
}

// FetchAdd is an Atomic FetchAdd request adding add to the word at
// (stag, to), without a mask.
func FetchAdd(id, stag uint32, to, add uint64) wire.AtomicRequest {
	return wire.AtomicRequest{AOpCode: wire.AOpFetchAdd, RequestID: id, STag: stag, TO: to, AddSwapData: add, CompareMask: ^uint64(0)}
}

// WithDDPVersion returns u with its DDP version field set to v.
func (u ULPDU) WithDDPVersion(v uint8) ULPDU {
	b := append([]byte(nil), u.Bytes...)
	b[0] = b[0]&^0x03 | v&0x03
	return ULPDU{Bytes: b, HdrLen: u.HdrLen, RDMALen: u.RDMALen}
}

// TerminateULPDU is the exact Terminate message (its DDP header, Terminate
// Control and attached headers) a receiver that follows RFC 5040 §4.8 to the
// letter sends for code after receiving offending: the segment's length
// and DDP header attached (M and D set) when attach is AttachDDP or
// AttachRDMA, also its RDMA header (R) with AttachRDMA. rv is the RDMAP
// version in use; the Terminate is the receiver's first (MSN 1).
func TerminateULPDU(rv uint8, code rdma.TermCode, attach Attach, offending ULPDU) []byte {
	t := wire.Terminate{Code: code}
	if attach >= AttachDDP {
		t.M, t.D, t.SegLenPresent = true, true, true
		t.DDPSegLen = uint16(len(offending.Bytes))
		t.DDPHeader = offending.Bytes[:offending.HdrLen]
	}
	if attach == AttachRDMA && offending.RDMALen > 0 {
		t.R = true
		t.RDMAHeader = offending.Bytes[offending.HdrLen : offending.HdrLen+offending.RDMALen]
	}
	h := wire.DDPHeader{Last: true, Version: wire.DDPVersion, Control: wire.MakeRDMAPControl(rv, wire.OpTerminate), QN: wire.QNTerminate, MSN: 1}
	return wire.AppendTerminate(wire.AppendDDPHeader(nil, &h), &t)
}
