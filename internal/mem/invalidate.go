package mem

import "github.com/goiwarp/iwarp/rdma"

// InvalidateReason says why an invalidation request fails.
type InvalidateReason uint8

// Why an STag cannot be invalidated.
const (
	InvalidateOK         InvalidateReason = iota
	InvalidateUnknown                     // no such STag, wrong key, or already invalid
	InvalidateOtherPD                     // the STag belongs to another protection domain
	InvalidateNotAllowed                  // the region is not remotely invalidatable
)

var invalidateNames = [...]string{"ok", "unknown or already invalid STag", "STag of another protection domain", "STag not remotely invalidatable"}

// String names the reason.
func (r InvalidateReason) String() string {
	if int(r) < len(invalidateNames) {
		return invalidateNames[r]
	}
	return "unknown reason"
}

// TermCode returns the Terminate code for a failed remote invalidation:
// RDMAP "STag cannot be invalidated" (0x09), with error type 1 (remote
// protection) for an access failure and type 2 (remote operation)
// otherwise, as Linux siw reports them (docs/spec/rdmap.md §3).
func (r InvalidateReason) TermCode() rdma.TermCode {
	if r == InvalidateOtherPD || r == InvalidateNotAllowed {
		return rdma.TermRDMAPProtInvalidate
	}
	return rdma.TermRDMAPOpInvalidate
}

// CheckRemoteInvalidate checks that a peer on a stream of protection domain
// pd may invalidate stag. For a memory window's STag it returns the
// window's current binding: a type 1 window fails with InvalidateNotAllowed
// (a protection error), a type 2 one needs AccessRemoteInvalidate among
// the rights it was bound with (see "Memory windows" in doc.go).
func (t *Table) CheckRemoteInvalidate(stag STag, pd uint32) (*Region, InvalidateReason) {
	return t.checkInvalidate(stag, pd, true)
}

// CheckLocalInvalidate checks that the owner (protection domain pd) may
// invalidate stag. For a memory window's STag it returns the window's
// current binding; a type 1 window fails with InvalidateNotAllowed.
func (t *Table) CheckLocalInvalidate(stag STag, pd uint32) (*Region, InvalidateReason) {
	return t.checkInvalidate(stag, pd, false)
}

func (t *Table) checkInvalidate(stag STag, pd uint32, remote bool) (*Region, InvalidateReason) {
	r := t.lookup(stag.Index())
	if r == nil {
		return nil, InvalidateUnknown
	}
	s := r.state.Load()
	if s&validBit == 0 || uint8(s) != stag.Key() {
		if r.win != nil {
			return r.win.checkInvalidate(stag, pd, remote)
		}
		return nil, InvalidateUnknown
	}
	if r.pd != pd {
		return nil, InvalidateOtherPD
	}
	if remote && Access(s>>16)&AccessRemoteInvalidate == 0 {
		return nil, InvalidateNotAllowed
	}
	return r, InvalidateOK
}
