package mpa

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/rdma"
)

// IRDORDLen is the length of the RFC 6581 IRD/ORD block.
const IRDORDLen = 4

// The bits of the RFC 6581 §5 IRD/ORD block, as 16-bit words.
const (
	irdP2P     = 0x8000 // A, in the IRD word: peer-to-peer mode
	irdSendRTR = 0x4000 // B, in the IRD word: zero-length Send RTR
	ordWrRTR   = 0x8000 // C, in the ORD word: zero-length RDMA Write RTR
	ordRdRTR   = 0x4000 // D, in the ORD word: zero-length RDMA Read RTR
)

const (
	// IRDORDMax is the largest IRD or ORD the 14-bit fields carry. RFC 6581
	// gives it no special meaning; Intel irdma reads it as "no IRD/ORD
	// negotiation". A Responder of this package answers it with its own
	// configured values (clamping gives exactly that).
	IRDORDMax = 0x3FFF
)

// RTR is a set of RFC 6581 ready-to-receive message types (the type is
// package rdma's).
type RTR = rdma.RTR

// The RTR types.
const (
	RTRWrite = rdma.RTRWrite // C: zero-length RDMA Write
	RTRRead  = rdma.RTRRead  // D: zero-length RDMA Read Request
	RTRSend  = rdma.RTRSend  // B: zero-length Send
	RTRAll   = rdma.RTRAll   // every RTR type
)

// rtrSingle reports whether r holds exactly one known RTR type.
func rtrSingle(r RTR) bool { return r == RTRWrite || r == RTRRead || r == RTRSend }

// rtrPick returns the preferred type of r: Write, then Read, then Send
// (docs/spec/mpa.md "Project decisions"), or 0 if r is empty.
func rtrPick(r RTR) RTR {
	for _, t := range [...]RTR{RTRWrite, RTRRead, RTRSend} {
		if r&t != 0 {
			return t
		}
	}
	return 0
}

// IRDORD is the RFC 6581 §5 block that leads the private data of an enhanced
// (Rev 2, H) frame.
type IRDORD struct {
	P2P bool   // A: peer-to-peer mode
	RTR RTR    // B, C, D: offered (Request) or chosen (Reply) RTR types
	IRD uint16 // 14 bits: inbound RDMA Read (and Atomic) Requests accepted
	ORD uint16 // 14 bits: outbound RDMA Read (and Atomic) Requests wanted
}

// ParseIRDORD decodes the block at the start of b.
func ParseIRDORD(b []byte) (IRDORD, error) {
	if len(b) < IRDORDLen {
		return IRDORD{}, ErrShortIRDORD
	}
	ird := binary.BigEndian.Uint16(b)
	ord := binary.BigEndian.Uint16(b[2:])
	var v IRDORD
	v.P2P = ird&irdP2P != 0
	if ird&irdSendRTR != 0 {
		v.RTR |= RTRSend
	}
	if ord&ordWrRTR != 0 {
		v.RTR |= RTRWrite
	}
	if ord&ordRdRTR != 0 {
		v.RTR |= RTRRead
	}
	v.IRD = ird & IRDORDMax
	v.ORD = ord & IRDORDMax
	return v, nil
}

// AppendIRDORD appends v's encoding to dst. IRD and ORD are truncated to
// their 14 bits.
func AppendIRDORD(dst []byte, v *IRDORD) []byte {
	ird := v.IRD & IRDORDMax
	ord := v.ORD & IRDORDMax
	if v.P2P {
		ird |= irdP2P
	}
	if v.RTR&RTRSend != 0 {
		ird |= irdSendRTR
	}
	if v.RTR&RTRWrite != 0 {
		ord |= ordWrRTR
	}
	if v.RTR&RTRRead != 0 {
		ord |= ordRdRTR
	}
	dst = binary.BigEndian.AppendUint16(dst, ird)
	return binary.BigEndian.AppendUint16(dst, ord)
}
