package mem

import "github.com/goiwarp/iwarp/rdma"

// Access is a set of access rights of a registered region or a memory
// window: package rdma's.
type Access = rdma.Access

// The access rights.
const (
	AccessLocalWrite       = rdma.AccessLocalWrite
	AccessRemoteRead       = rdma.AccessRemoteRead
	AccessRemoteWrite      = rdma.AccessRemoteWrite
	AccessRemoteAtomic     = rdma.AccessRemoteAtomic
	AccessRemoteInvalidate = rdma.AccessRemoteInvalidate
	AccessMWBind           = rdma.AccessMWBind
	accessAll              = rdma.AccessAll // every right
)
