package mem

import "strings"

// Access is a set of access rights of a registered region.
type Access uint16

// The access rights. Local read is always allowed.
const (
	AccessLocalWrite   Access = 1 << iota // the local consumer may have the RNIC write into it (receives, Read sinks)
	AccessRemoteRead                      // a peer may RDMA Read it
	AccessRemoteWrite                     // a peer may RDMA Write it
	AccessRemoteAtomic                    // a peer may run RFC 7306 atomics on it
	// AccessRemoteInvalidate lets a peer invalidate the STag with a Send
	// with Invalidate (RFC 5040 §5.3); regions without it are "not
	// remotely invalidatable".
	AccessRemoteInvalidate
	// AccessMWBind lets the owner bind memory windows to the region
	// (libibverbs IBV_ACCESS_MW_BIND; see "Memory windows" in doc.go). It
	// grants the peer nothing by itself.
	AccessMWBind
	accessAll = AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic | AccessRemoteInvalidate | AccessMWBind
)

// String lists the rights, e.g. "local-write|remote-read".
func (a Access) String() string {
	if a == 0 {
		return "none"
	}
	var parts []string
	for _, n := range []struct {
		a    Access
		name string
	}{
		{AccessLocalWrite, "local-write"},
		{AccessRemoteRead, "remote-read"},
		{AccessRemoteWrite, "remote-write"},
		{AccessRemoteAtomic, "remote-atomic"},
		{AccessRemoteInvalidate, "remote-invalidate"},
		{AccessMWBind, "mw-bind"},
	} {
		if a&n.a != 0 {
			parts = append(parts, n.name)
		}
	}
	if a&^accessAll != 0 {
		parts = append(parts, "unknown")
	}
	return strings.Join(parts, "|")
}

// LocalWrite reports whether a grants local write access.
func (a Access) LocalWrite() bool { return a&AccessLocalWrite != 0 }
