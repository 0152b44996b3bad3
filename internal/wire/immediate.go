package wire

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/goiwarp/iwarp/rdma"
)

// ImmediateDataLen is the length of RFC 7306 Immediate Data (§6): exactly 8
// bytes after the untagged DDP header of an Immediate Data message, and the
// whole payload of the last segment of a V2 Send with Immediate.
const ImmediateDataLen = 8

// ImmediateData is the 8 opaque bytes of an Immediate Data message
// (RFC 7306 §6), delivered to the consumer in the receive completion.
type ImmediateData [ImmediateDataLen]byte

// String returns the 16 hex digits of d.
func (d ImmediateData) String() string { return hex.EncodeToString(d[:]) }

// Uint64 returns d read as a big-endian 64-bit number.
func (d ImmediateData) Uint64() uint64 { return binary.BigEndian.Uint64(d[:]) }

// ImmediateFromUint64 returns the immediate data whose big-endian reading
// is v.
func ImmediateFromUint64(v uint64) ImmediateData {
	var d ImmediateData
	binary.BigEndian.PutUint64(d[:], v)
	return d
}

// ErrImmediateLength reports Immediate Data that is not exactly 8 bytes
// (project choice: RDMAP/2/0xFF; see docs/spec/extensions.md §1).
var ErrImmediateLength = &ProtocolError{"immediate data is not exactly 8 bytes", rdma.TermRDMAPOpUnspecified}

// ParseImmediateData returns the immediate data of b, which must be exactly
// the 8 bytes after the untagged DDP header (RFC 7306 §6.1).
func ParseImmediateData(b []byte) (ImmediateData, error) {
	var d ImmediateData
	if len(b) != ImmediateDataLen {
		return d, ErrImmediateLength
	}
	copy(d[:], b)
	return d, nil
}

// AppendImmediateData appends the 8 bytes of d to dst.
func AppendImmediateData(dst []byte, d ImmediateData) []byte {
	return append(dst, d[:]...)
}
