package mpa

import "github.com/goiwarp/iwarp/rdma"

// Ext is the project's extension set, advertised in the two low bits of the
// reserved flag nibble of the MPA frames ("extension set 1",
// docs/extensions.md); the type is package rdma's.
type Ext = rdma.Extensions

// The extension bits.
const (
	ExtRFC7306 = rdma.ExtRFC7306 // RFC 7306 atomics and Immediate Data
	ExtV2      = rdma.ExtV2      // the RDMAP Extensions V2 draft (implies RFC 7306)
	ExtAll     = rdma.ExtAll     // every extension the project knows
)
