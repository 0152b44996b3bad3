package host

import "encoding/binary"

// The capsule layouts the queue machinery needs on its hot path: the
// submission queue entry's common fields and SGL descriptor (NVMe Base
// §4.2, §4.4), the completion queue entry (§4.6) and the RDMA transport's
// connection private data (NVMe over Fabrics RDMA Transport §3.3).

const (
	sqeLen = 64 // a submission queue entry: the command capsule without data
	cqeLen = 16 // a completion queue entry: the whole response capsule
	nqnMax = 223

	// psdtSGL is CDW0's PSDT field (bits 15:14) set to 01b: SGLs, the
	// only data pointer NVMe over Fabrics has.
	psdtSGL = 0x40

	sglKeyedData   = 0x40 // Keyed SGL Data Block descriptor, subtype Address
	sglInlineData  = 0x01 // SGL Data Block descriptor, subtype Offset (in-capsule data)
	cmReqLen       = 32   // RDMA_CM_REQUEST private data
	cmRepLen       = 32   // RDMA_CM_ACCEPT private data
	cmRecfmt       = 0    // record format 1.0
	cidSlotBits    = 12   // a CID is a slot index and a 4-bit generation above it
	cidSlotMask    = 1<<cidSlotBits - 1
	statusPhaseBit = 1

	// discoveryNQN is the well-known NQN of discovery controllers.
	discoveryNQN = "nqn.2014-08.org.nvmexpress.discovery"
)

// putSQEHeader clears sqe and writes CDW0 (opcode, SGL data pointer, CID)
// and the NSID.
func putSQEHeader(sqe []byte, opcode uint8, nsid uint32) {
	clear(sqe[:sqeLen])
	sqe[0] = opcode
	sqe[1] = psdtSGL
	binary.LittleEndian.PutUint32(sqe[4:], nsid)
}

// putCID writes the command identifier.
func putCID(sqe []byte, cid uint16) { binary.LittleEndian.PutUint16(sqe[2:], cid) }

// putKeyedSGL makes SGL1 a Keyed SGL Data Block: length bytes at addr of
// the memory key names (NVMe Base §4.4, "Keyed SGL Data Block descriptor").
// A zero length with a zero key and address is the null descriptor of a
// command without data.
func putKeyedSGL(sqe []byte, addr uint64, length int, key uint32) {
	d := sqe[24:40]
	binary.LittleEndian.PutUint64(d[0:], addr)
	d[8], d[9], d[10] = byte(length), byte(length>>8), byte(length>>16)
	binary.LittleEndian.PutUint32(d[11:], key)
	d[15] = sglKeyedData
}

// putInlineSGL makes SGL1 an SGL Data Block of subtype Offset: length bytes
// of in-capsule data at offset off of the capsule's data (NVMe over Fabrics
// §2.3.2).
func putInlineSGL(sqe []byte, off uint64, length int) {
	d := sqe[24:40]
	binary.LittleEndian.PutUint64(d[0:], off)
	binary.LittleEndian.PutUint32(d[8:], uint32(length))
	clear(d[12:15])
	d[15] = sglInlineData
}

// putCDW writes command dword n (10 to 15).
func putCDW(sqe []byte, n int, v uint32) { binary.LittleEndian.PutUint32(sqe[4*n:], v) }

// cqe is a completion queue entry as received.
type cqe struct {
	dw0, dw1 uint32
	sqhd     uint16
	sqid     uint16
	cid      uint16
	status   uint16 // the Status Field (bits 15:1 of the last word), phase bit removed
}

// parseCQE reads a response capsule (at least cqeLen bytes).
func parseCQE(b []byte) cqe {
	return cqe{
		dw0:    binary.LittleEndian.Uint32(b[0:]),
		dw1:    binary.LittleEndian.Uint32(b[4:]),
		sqhd:   binary.LittleEndian.Uint16(b[8:]),
		sqid:   binary.LittleEndian.Uint16(b[10:]),
		cid:    binary.LittleEndian.Uint16(b[12:]),
		status: binary.LittleEndian.Uint16(b[14:]) >> statusPhaseBit,
	}
}

// cmRequest is the RDMA_CM_REQUEST private data of a queue's connection:
// the record format, the queue's ID, the host receive queue size (the
// responses the host can take at once, 1's based) and the host send queue
// size (0's based), as Linux's host fills them.
func cmRequest(qid, hrqsize, hsqsize uint16) []byte {
	b := make([]byte, cmReqLen)
	binary.LittleEndian.PutUint16(b[0:], cmRecfmt)
	binary.LittleEndian.PutUint16(b[2:], qid)
	binary.LittleEndian.PutUint16(b[4:], hrqsize)
	binary.LittleEndian.PutUint16(b[6:], hsqsize)
	return b
}
