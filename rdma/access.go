package rdma

import "strings"

// Access is a set of access rights of registered memory or of a memory
// window (RFC 5040 §2.1). Local read is always allowed.
type Access uint16

// The access rights.
const (
	// AccessLocalWrite lets the local RNIC write the memory: needed by
	// receive buffers and RDMA Read sinks.
	AccessLocalWrite Access = 1 << iota
	// AccessRemoteRead lets a peer RDMA Read the memory.
	AccessRemoteRead
	// AccessRemoteWrite lets a peer RDMA Write the memory.
	AccessRemoteWrite
	// AccessRemoteAtomic lets a peer run RFC 7306 atomics on the memory;
	// the buffer must be 8-byte aligned.
	AccessRemoteAtomic
	// AccessRemoteInvalidate lets a peer invalidate the STag with a Send
	// with Invalidate (RFC 5040 §5.3); memory without it is "not remotely
	// invalidatable" (the peer's request fails with Terminate RDMAP/1/0x09).
	AccessRemoteInvalidate
	// AccessMWBind lets the owner bind memory windows to the region
	// (libibverbs' IBV_ACCESS_MW_BIND). It grants the peer nothing by
	// itself.
	AccessMWBind
	// AccessAll is every right.
	AccessAll = AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic | AccessRemoteInvalidate | AccessMWBind
)

// String lists the rights, e.g. "local-write|remote-read", or "none".
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
	if a&^AccessAll != 0 {
		parts = append(parts, "unknown")
	}
	return strings.Join(parts, "|")
}

// LocalWrite reports whether a grants local write access.
func (a Access) LocalWrite() bool { return a&AccessLocalWrite != 0 }
