package mem

import "github.com/goiwarp/iwarp/rdma"

// Reason says why an access check failed. The same failure is reported with a
// DDP code when found while placing a tagged segment (RFC 5041 §7.2) and with
// an RDMAP code when found on a Read Request's source or an atomic's target
// (RFC 5040 §7.2, RFC 7306 §8.2).
type Reason uint8

// The reasons an access check can fail.
const (
	OK             Reason = iota
	InvalidSTag           // no such STag, wrong key, or invalidated
	NotAssociated         // the STag belongs to another protection domain
	AccessViolated        // the region does not grant the access
	OutOfBounds           // [TO, TO+len) is not inside the region
	TOWrap                // TO+len wraps 2^64
	Misaligned            // an atomic target that is not 64-bit aligned
)

var reasonNames = [...]string{
	OK:             "ok",
	InvalidSTag:    "invalid STag",
	NotAssociated:  "STag not associated with this stream",
	AccessViolated: "access rights violation",
	OutOfBounds:    "base or bounds violation",
	TOWrap:         "TO wrap",
	Misaligned:     "atomic target not 64-bit aligned",
}

// String names the reason.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown reason"
}

// DDPCode returns the DDP tagged-buffer Terminate code for a failed tagged
// placement (RFC 5041 §7.2). RFC 5041 has no access-rights code; like Linux
// siw it reports an access violation as an invalid STag.
func (r Reason) DDPCode() rdma.TermCode {
	switch r {
	case NotAssociated:
		return rdma.TermDDPSTagNotAssoc
	case OutOfBounds:
		return rdma.TermDDPBaseBounds
	case TOWrap:
		return rdma.TermDDPTOWrap
	case Misaligned:
		return rdma.TermRDMAPStreamCatastroph
	}
	return rdma.TermDDPInvalidSTag
}

// RDMAPCode returns the RDMAP Terminate code for a failed check on a Read
// Request's data source or an atomic's target (RFC 5040 §7.2, remote
// protection errors). A misaligned atomic target is RDMAP remote operation
// 0x07 (RFC 7306 §5.1, extensions.md).
func (r Reason) RDMAPCode() rdma.TermCode {
	switch r {
	case NotAssociated:
		return rdma.TermRDMAPSTagNotAssoc
	case AccessViolated:
		return rdma.TermRDMAPAccessRights
	case OutOfBounds:
		return rdma.TermRDMAPBaseBounds
	case TOWrap:
		return rdma.TermRDMAPTOWrap
	case Misaligned:
		return rdma.TermRDMAPStreamCatastroph
	}
	return rdma.TermRDMAPInvalidSTag
}
