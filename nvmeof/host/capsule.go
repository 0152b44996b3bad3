package host

import (
	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// Sizes and CIDs of the queue machinery.
const (
	sqeLen = nvme.SQELen // a submission queue entry: the command capsule without data
	cqeLen = nvme.CQELen // a completion queue entry: the whole response capsule
	nqnMax = nvme.NQNMaxLen

	// A CID is a slot index and, above it, a 4-bit generation bumped for
	// every command of the slot, so that a late or duplicated response
	// does not match the slot's next command.
	cidSlotBits = 12
	cidSlotMask = 1<<cidSlotBits - 1
)

// cmRequest is the RDMA_CM_REQUEST private data of a queue's connection
// (NVMe over Fabrics RDMA Transport §3.3): the queue's ID, the host
// receive queue size (responses the host takes at once, 1's based) and
// the host send queue size (0's based), and for an I/O queue the
// controller's ID, as Linux's host fills them.
func cmRequest(qid, hrqsize, hsqsize, cntlid uint16) []byte {
	b := make([]byte, nvme.CMRequestLen)
	r := nvme.CMRequest{RECFMT: nvme.CMRECFMT, QID: qid, HRQSIZE: hrqsize, HSQSIZE: hsqsize, CNTLID: cntlid}
	r.Encode(b) // cannot fail: b has the length
	return b
}

// statusError is the error of command op (fctype for a Fabrics command),
// sent on queue qid, that completed with status st.
func statusError(st nvme.Status, qid uint16, op, fctype uint8) error {
	e := nvmeof.NewStatusError(uint16(st))
	e.Opcode, e.QID = op, qid
	if op == nvme.AdminFabrics {
		e.Fabrics, e.FCType = true, fctype
	}
	return e
}
